package dev.chargeonce.operation;

import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.concurrent.Phaser;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Graceful shutdown of every operation's path (charges, refunds, workers): once closed, no new claim is made (503,
 * retry elsewhere), and the operations already past their claim finish their Stripe call and their row.
 */
@ApplicationScoped
public class Admission {

    private final AtomicBoolean open = new AtomicBoolean(true);
    private final Phaser inFlight = new Phaser(1);

    /** A charge in progress; closing it lets shutdown proceed. */
    public interface Ticket extends AutoCloseable {
        @Override
        void close();
    }

    public Ticket enter() {
        if (!open.get() || inFlight.register() < 0) {
            throw ApiException.unavailable("shutting_down",
                    "This instance is shutting down and took no claim. Retry with the same Idempotency-Key.", Duration.ofSeconds(1));
        }
        if (!open.get()) {
            inFlight.arriveAndDeregister();
            throw ApiException.unavailable("shutting_down",
                    "This instance is shutting down and took no claim. Retry with the same Idempotency-Key.", Duration.ofSeconds(1));
        }
        return inFlight::arriveAndDeregister;
    }

    /** Stops new claims and waits up to {@code grace} for the charges in flight. Returns true when all finished. */
    public boolean closeAndAwait(Duration grace) {
        open.set(false);
        int phase = inFlight.arrive();
        try {
            inFlight.awaitAdvanceInterruptibly(phase, grace.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    public boolean isOpen() {
        return open.get();
    }
}

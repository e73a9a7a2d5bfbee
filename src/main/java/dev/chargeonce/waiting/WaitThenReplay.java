package dev.chargeonce.waiting;

import dev.chargeonce.idempotency.Claims;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.operation.KeyAnswer;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * Wait instead of 409 ({@code Prefer: wait=N}): a request that finds its key in flight is held until the key's row
 * moves, then asks again, which answers the replay (or takes the lease over if the first request let it go). On
 * PostgreSQL it never polls: it marks the row awaited and sleeps until the row's NOTIFY ({@link KeyChangeListener}),
 * the lease's end (the holder may have crashed: then this request can take over) or the end of its wait, whichever
 * is first. Where moves are not notified (Citus: {@link KeyChangeListener#movesNotified}) it looks again on a
 * back-off from {@value #FIRST_LOOK_MILLIS} ms to {@value #LAST_LOOK_MILLIS} ms: each look one indexed read.
 * Waiting holds no database connection, and the caller runs on a virtual thread, which unmounts while it waits.
 */
@ApplicationScoped
public class WaitThenReplay {

    /** The slack after a lease's end before looking again: the row's lease is over by the database's clock too. */
    private static final long AFTER_LEASE_MILLIS = 50;
    /** Where moves are not notified: the first look again after this, each next one twice as late, up to the last. */
    static final long FIRST_LOOK_MILLIS = 50;
    static final long LAST_LOOK_MILLIS = 1_000;

    private final KeyChangeListener listener;
    private final Claims claims;
    /**
     * One claim at a time per row among this instance's waiters: a row whose holder let its lease go (an unknown
     * outcome) wakes every waiter, and only the first may take it over and call Stripe; the others claim after it
     * and find it held (they wait on) or answered (the replay), instead of a burst of takeovers with one Stripe key.
     */
    private final Map<String, ReentrantLock> claiming = new ConcurrentHashMap<>();
    /** Requests held now, waiting for a key in flight (the gauge {@code chargeonce.waiting.requests}). */
    private final AtomicInteger held = new AtomicInteger();

    WaitThenReplay(KeyChangeListener listener, Claims claims, MeterRegistry metrics) {
        this.listener = listener;
        this.claims = claims;
        metrics.gauge("chargeonce.waiting.requests", held);
    }

    /**
     * The answer of {@code attempt} (one claim of the key), waiting up to {@code seconds} while it answers 409 in
     * flight; with {@code seconds} 0, or while this instance hears no notifications, the first answer as it is.
     */
    public KeyAnswer answer(Operation op, String clientId, int seconds, Supplier<KeyAnswer> attempt) {
        KeyAnswer answer = attempt.get();
        if (seconds <= 0 || !listener.listening()) {
            return answer;
        }
        if (answer.status() != 409) {
            return answer;
        }
        held.incrementAndGet();
        try {
            return waitForAnswer(op, clientId, seconds, attempt, answer);
        } finally {
            held.decrementAndGet();
        }
    }

    private KeyAnswer waitForAnswer(Operation op, String clientId, int seconds, Supplier<KeyAnswer> attempt, KeyAnswer answer) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        int unlocated = 0;
        boolean waited = false;
        long lookAfter = TimeUnit.MILLISECONDS.toNanos(FIRST_LOOK_MILLIS);
        while (answer.status() == 409) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || !listener.listening()) {
                break;
            }
            waited = true;
            KeyAnswer.InFlightRow row = answer.inFlightRow();
            if (row == null) {
                // The row changed between the claim's two statements (rare): look again, a bounded number of times.
                if (++unlocated > 2) {
                    break;
                }
            } else {
                long leaseEnds = row.leaseLeft().toNanos() + TimeUnit.MILLISECONDS.toNanos(AFTER_LEASE_MILLIS);
                if (!listener.movesNotified()) {
                    sleep(Math.min(Math.min(left, leaseEnds), lookAfter));
                    lookAfter = Math.min(lookAfter * 2, TimeUnit.MILLISECONDS.toNanos(LAST_LOOK_MILLIS));
                } else {
                    try (KeyChangeListener.Registration wakeUp = listener.register(row.id())) {
                        if (claims.awaitRow(op, row.id(), clientId)) {
                            sleepUntil(wakeUp, Math.min(left, leaseEnds));
                        }
                    }
                }
            }
            // The row moved, its lease ended, or the wait ran out: one more claim says what the key holds now.
            KeyAnswer next = row == null ? attempt.get() : claimInTurn(row.id(), deadline, attempt);
            if (next == null) {
                break; // the wait ran out while another waiter claimed
            }
            answer = next;
        }
        // Preference-Applied only when the preference mattered: the key was in flight and this request was held.
        return waited ? answer.afterWaiting(seconds) : answer;
    }

    /** {@code attempt} under the row's claim lock of this instance, or null when the wait runs out first. */
    private KeyAnswer claimInTurn(String rowId, long deadline, Supplier<KeyAnswer> attempt) {
        ReentrantLock lock = claiming.computeIfAbsent(rowId, id -> new ReentrantLock());
        try {
            if (!lock.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                return null;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
        try {
            return attempt.get();
        } finally {
            if (!lock.hasQueuedThreads()) {
                claiming.remove(rowId, lock);
            }
            lock.unlock();
        }
    }

    private static void sleep(long nanos) {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleepUntil(KeyChangeListener.Registration wakeUp, long nanos) {
        try {
            wakeUp.moved.get(nanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            // the lease ended or the wait ran out: look again
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e);
        }
    }
}

package dev.chargeonce.recovery;

import dev.chargeonce.ratebudget.TrafficClass;
import dev.chargeonce.operation.Admission;
import dev.chargeonce.idempotency.ClaimedIntent;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.Claims;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.operation.KeyAnswer;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.stripe.StripeConfig;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.jboss.logging.Logger;

/**
 * Finishes what nobody else will: {@code processing} rows whose lease expired because their request crashed,
 * timed out or got an unknown outcome and the client never came back. Runs on every instance; the takeover is
 * {@code FOR UPDATE SKIP LOCKED} plus a lease-generation bump, so no two instances drive the same row, and the
 * drive follows exactly the rules of a client retry (same Stripe key, lookup after a 5xx, key horizon).
 */
@ApplicationScoped
public class RecoveryWorker {

    private static final Logger LOG = Logger.getLogger(RecoveryWorker.class);

    private final Claims claims;
    private final OperationDriver driver;
    private final Admission admission;
    private final RecoveryConfig config;
    private final StripeConfig stripeConfig;
    private final MeterRegistry metrics;

    RecoveryWorker(Claims claims, OperationDriver driver, Admission admission, RecoveryConfig config,
                   StripeConfig stripeConfig, MeterRegistry metrics) {
        this.claims = claims;
        this.driver = driver;
        this.admission = admission;
        this.config = config;
        this.stripeConfig = stripeConfig;
        this.metrics = metrics;
    }

    @Scheduled(identity = "recovery", every = "${chargeonce.recovery.interval:5s}",
            delayed = "${chargeonce.recovery.initial-delay:2s}", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void pass() {
        if (!config.enabled() || !admission.isOpen()) {
            return;
        }
        try {
            recoverOnce();
        } catch (DatabaseUnavailableException e) {
            LOG.warnf("recovery pass skipped: %s", e.getMessage());
        }
    }

    /** One pass: take over up to a batch of expired rows and drive each to a final state (or leave it unknown). */
    public int recoverOnce() {
        try (Admission.Ticket ticket = admission.enter()) {
            List<ClaimedIntent> due = new java.util.ArrayList<>();
            for (Operation op : Operation.values()) {
                try {
                    due.addAll(claims.takeOverExpired(op, config.batchSize(), stripeConfig.keyHorizon()));
                } catch (RuntimeException e) {
                    if (due.isEmpty()) {
                        throw e;
                    }
                    // rows already taken over are this pass's to drive: left undriven, they would wait out a lease
                    LOG.warnf("recovery: %s rows not taken over this pass: %s", op, e.getMessage());
                    break;
                }
            }
            if (due.isEmpty()) {
                return 0;
            }
            LOG.infof("recovery: took over %d expired row(s)", due.size());
            try (ExecutorService drivers = Executors.newVirtualThreadPerTaskExecutor()) {
                for (ClaimedIntent intent : due) {
                    // Each on a thread of its own: each takes the recovery class's Stripe permits.
                    drivers.submit(() -> TrafficClass.RECOVERY.run(() -> drive(intent)));
                }
            }
            return due.size();
        }
    }

    private void drive(ClaimedIntent intent) {
        try {
            KeyAnswer answer = driver.drive(intent);
            String result = answer.retryAfter() == null ? "finished" : "still_unknown";
            metrics.counter("chargeonce.recovery.actions", "result", result).increment();
            LOG.infof("recovery: %s -> %d (%s)", intent.id(), answer.status(), result);
        } catch (RuntimeException e) {
            metrics.counter("chargeonce.recovery.actions", "result", "error").increment();
            LOG.errorf(e, "recovery: %s could not be driven; its lease will expire again", intent.id());
        }
    }
}

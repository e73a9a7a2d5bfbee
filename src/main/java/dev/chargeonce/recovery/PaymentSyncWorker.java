package dev.chargeonce.recovery;

import dev.chargeonce.ratebudget.TrafficClass;
import dev.chargeonce.operation.Admission;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.idempotency.Finishes;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.operation.Settlement;
import dev.chargeonce.operation.StripeSide;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeGateway;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * Finishes what a webhook did not: accepted charges (a 202: 3-D Secure to complete, a bank debit processing) whose
 * outcome has not arrived are looked at by id on a back-off ({@code chargeonce.stripe.pending-recheck}: 1 min, 5
 * min, 30 min, then hourly), the way payment platforms sync pending payments. A charge still waiting for the
 * customer's 3-D Secure after {@code chargeonce.stripe.requires-action-expiry} is canceled at Stripe, so that it can
 * never be completed later without the service knowing. What it learns is applied exactly as a webhook's event
 * ({@link ChargeSettlement}): forward only, and the same answer.
 */
@ApplicationScoped
public class PaymentSyncWorker {

    private static final Logger LOG = Logger.getLogger(PaymentSyncWorker.class);

    private final Finishes finishes;
    private final OperationDriver driver;
    private final Settlement settlement;
    private final Admission admission;
    private final RecoveryConfig config;
    private final StripeConfig stripeConfig;
    private final IdempotencyConfig idempotencyConfig;
    private final MeterRegistry metrics;

    PaymentSyncWorker(Finishes finishes, OperationDriver driver, Settlement settlement, Admission admission,
                      RecoveryConfig config, StripeConfig stripeConfig, IdempotencyConfig idempotencyConfig, MeterRegistry metrics) {
        this.finishes = finishes;
        this.driver = driver;
        this.settlement = settlement;
        this.admission = admission;
        this.config = config;
        this.stripeConfig = stripeConfig;
        this.idempotencyConfig = idempotencyConfig;
        this.metrics = metrics;
        for (String result : new String[] {"applied", "unchanged", "canceled", "error"}) {
            metrics.counter("chargeonce.sync.actions", "result", result);
        }
    }

    @Scheduled(identity = "payment-sync", every = "${chargeonce.recovery.sync-interval:15s}",
            delayed = "${chargeonce.recovery.initial-delay:2s}", concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void pass() {
        if (!config.enabled() || !admission.isOpen()) {
            return;
        }
        try {
            TrafficClass.RECOVERY.run(() -> {
                syncOnce();
            });
        } catch (DatabaseUnavailableException e) {
            LOG.warnf("payment sync pass skipped: %s", e.getMessage());
        }
    }

    /** One pass: every accepted charge and refund whose next look is due, looked at once. */
    public int syncOnce() {
        try (Admission.Ticket ticket = admission.enter()) {
            int looked = 0;
            for (Operation op : Operation.values()) {
                // Taken with a hold of one lease, so no other instance looks at it meanwhile; the real next look is set below.
                List<Finishes.AcceptedRow> due = finishes.takeDueAccepted(op, config.batchSize(), idempotencyConfig.lease());
                for (Finishes.AcceptedRow row : due) {
                    sync(row);
                }
                looked += due.size();
            }
            return looked;
        }
    }

    private void sync(Finishes.AcceptedRow row) {
        try {
            boolean abandoned = "requires_action".equals(row.state())
                    && !row.databaseNow().isBefore(row.answeredAt().plus(stripeConfig.requiresActionExpiry()));
            StripeSide.ObjectState now = driver.side(row.operation()).look(row.objectId(), abandoned);
            Settlement.Result result;
            try (Connection tx = finishes.primary().getConnection()) {
                tx.setAutoCommit(false);
                try {
                    result = settlement.apply(tx, row.operation(), now, row.clientId()); // the row it follows is the object's
                    finishes.scheduleRecheck(tx, row.operation(), row.id(), row.clientId(), nextLook(row.checks()));
                    tx.commit();
                } catch (SQLException | RuntimeException e) {
                    tx.rollback();
                    throw e;
                }
            }
            String action = abandoned && "canceled".equals(now.stripeStatus()) ? "canceled"
                    : result.effect() == Settlement.Effect.APPLIED ? "applied" : "unchanged";
            metrics.counter("chargeonce.sync.actions", "result", action).increment();
            LOG.infof("sync: %s, %s is %s (%s)", row.id(), now.objectId(), now.stripeStatus(), result.detail());
        } catch (StripeGateway.LookupFailedException | SQLException | DatabaseUnavailableException e) {
            // The hold expires and the next pass looks again.
            metrics.counter("chargeonce.sync.actions", "result", "error").increment();
            LOG.warnf("sync: %s could not be looked at (%s)", row.id(), e.getMessage());
        }
    }

    private Duration nextLook(int checksSoFar) {
        List<Duration> schedule = stripeConfig.pendingRecheck();
        return schedule.get(Math.min(checksSoFar, schedule.size() - 1));
    }
}

package dev.chargeonce.recovery;

import com.stripe.model.PaymentIntent;
import dev.chargeonce.charge.ChargeAdmission;
import dev.chargeonce.charge.ChargeSettlement;
import dev.chargeonce.idempotency.ChargeStatus;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.idempotency.IdempotencyStore;
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

    private final IdempotencyStore store;
    private final StripeGateway stripe;
    private final ChargeSettlement settlement;
    private final ChargeAdmission admission;
    private final RecoveryConfig config;
    private final StripeConfig stripeConfig;
    private final IdempotencyConfig idempotencyConfig;
    private final MeterRegistry metrics;

    PaymentSyncWorker(IdempotencyStore store, StripeGateway stripe, ChargeSettlement settlement, ChargeAdmission admission,
                      RecoveryConfig config, StripeConfig stripeConfig, IdempotencyConfig idempotencyConfig, MeterRegistry metrics) {
        this.store = store;
        this.stripe = stripe;
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
            syncOnce();
        } catch (DatabaseUnavailableException e) {
            LOG.warnf("payment sync pass skipped: %s", e.getMessage());
        }
    }

    /** One pass: every accepted charge whose next look is due, looked at once. */
    public int syncOnce() {
        try (ChargeAdmission.Ticket ticket = admission.enter()) {
            // Taken with a hold of one lease, so no other instance looks at it meanwhile; the real next look is set below.
            List<IdempotencyStore.AcceptedCharge> due = store.takeDueAccepted(config.batchSize(), idempotencyConfig.lease());
            for (IdempotencyStore.AcceptedCharge charge : due) {
                sync(charge);
            }
            return due.size();
        }
    }

    private void sync(IdempotencyStore.AcceptedCharge charge) {
        try {
            boolean abandoned = charge.chargeStatus() == ChargeStatus.REQUIRES_ACTION
                    && !charge.databaseNow().isBefore(charge.answeredAt().plus(stripeConfig.requiresActionExpiry()));
            PaymentIntent pi = abandoned ? stripe.cancel(charge.paymentIntentId()) : stripe.retrievePaymentIntent(charge.paymentIntentId());
            ChargeSettlement.Result result;
            try (Connection tx = store.primary().getConnection()) {
                tx.setAutoCommit(false);
                try {
                    result = settlement.apply(tx, pi);
                    store.scheduleRecheck(tx, charge.id(), nextLook(charge.checks()));
                    tx.commit();
                } catch (SQLException | RuntimeException e) {
                    tx.rollback();
                    throw e;
                }
            }
            String action = abandoned && "canceled".equals(pi.getStatus()) ? "canceled"
                    : result.effect() == ChargeSettlement.Effect.APPLIED ? "applied" : "unchanged";
            metrics.counter("chargeonce.sync.actions", "result", action).increment();
            LOG.infof("sync: charge %s, PaymentIntent %s is %s (%s)", charge.id(), pi.getId(), pi.getStatus(), result.detail());
        } catch (StripeGateway.LookupFailedException | SQLException | DatabaseUnavailableException e) {
            // The hold expires and the next pass looks again.
            metrics.counter("chargeonce.sync.actions", "result", "error").increment();
            LOG.warnf("sync: charge %s could not be looked at (%s)", charge.id(), e.getMessage());
        }
    }

    private Duration nextLook(int checksSoFar) {
        List<Duration> schedule = stripeConfig.pendingRecheck();
        return schedule.get(Math.min(checksSoFar, schedule.size() - 1));
    }
}

package dev.chargeonce.recovery;

import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.idempotency.IdempotencyStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Gauges for the rows an operator must look at: {@code processing} rows whose lease expired more than one lease
 * ago (the recovery worker is not keeping up, or cannot resolve them) and rows parked for reconciliation (past
 * the Stripe key horizon with no PaymentIntent found). Refreshed by one cheap query on the partial index.
 */
@ApplicationScoped
public class AttentionGauges {

    private final IdempotencyStore store;
    private final IdempotencyConfig config;
    private final AtomicLong stuck = new AtomicLong();
    private final AtomicLong parked = new AtomicLong();

    AttentionGauges(IdempotencyStore store, IdempotencyConfig config, MeterRegistry metrics) {
        this.store = store;
        this.config = config;
        metrics.gauge("chargeonce.processing.expired.rows", stuck);
        metrics.gauge("chargeonce.reconciliation.rows", parked);
    }

    @Scheduled(identity = "attention-gauges", every = "${chargeonce.gauges.interval:15s}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void refresh() {
        try {
            IdempotencyStore.RowCounts counts = store.countAttentionRows(config.lease());
            stuck.set(counts.stuckProcessing());
            parked.set(counts.parkedForReconciliation());
        } catch (DatabaseUnavailableException e) {
            // keep the last values; readiness reports the database
        }
    }
}

package dev.chargeonce.recovery;

import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.idempotency.Upkeep;
import dev.chargeonce.idempotency.Operation;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Gauges for the rows an operator must look at, refreshed by one query over the processing rows:
 * <ul>
 *   <li>{@code chargeonce.processing.overdue.rows}: processing (not parked) for longer than
 *       {@code chargeonce.recovery.overdue-after} since the claim. A row that drivers take over again and again
 *       without an end has a fresh lease most of the time; its age gives it away. The alert that matters.</li>
 *   <li>{@code chargeonce.processing.oldest.age.seconds} and {@code chargeonce.processing.max.drives} (lease
 *       generations: claim, takeovers): how old, and how hard-driven, the worst one is.</li>
 *   <li>{@code chargeonce.reconciliation.rows}: parked for an operator (any is an alert).</li>
 *   <li>{@code chargeonce.processing.expired.rows}: lease expired more than a lease ago (the worker is not running).</li>
 * </ul>
 */
@ApplicationScoped
public class AttentionGauges {

    private final Upkeep upkeep;
    private final IdempotencyConfig config;
    private final RecoveryConfig recovery;
    private final AtomicLong expired = new AtomicLong();
    private final AtomicLong parked = new AtomicLong();
    private final AtomicLong overdue = new AtomicLong();
    private final AtomicLong maxDrives = new AtomicLong();
    private volatile double oldestAgeSeconds;

    AttentionGauges(Upkeep upkeep, IdempotencyConfig config, RecoveryConfig recovery, MeterRegistry metrics) {
        this.upkeep = upkeep;
        this.config = config;
        this.recovery = recovery;
        metrics.gauge("chargeonce.processing.expired.rows", expired);
        metrics.gauge("chargeonce.reconciliation.rows", parked);
        metrics.gauge("chargeonce.processing.overdue.rows", overdue);
        metrics.gauge("chargeonce.processing.max.drives", maxDrives);
        metrics.gauge("chargeonce.processing.oldest.age.seconds", this, gauges -> gauges.oldestAgeSeconds);
    }

    @Scheduled(identity = "attention-gauges", every = "${chargeonce.gauges.interval:15s}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void refresh() {
        try {
            long expiredRows = 0, parkedRows = 0, overdueRows = 0, drives = 0;
            double oldest = 0;
            // Charges and refunds together: a stuck refund is as much an operator's business as a stuck charge.
            for (Operation op : Operation.values()) {
                Upkeep.RowCounts counts = upkeep.countAttentionRows(op, config.lease(), recovery.overdueAfter());
                expiredRows += counts.expiredProcessing();
                parkedRows += counts.parkedForReconciliation();
                overdueRows += counts.overdueProcessing();
                drives = Math.max(drives, counts.maxDrives());
                oldest = Math.max(oldest, counts.oldestProcessingAgeSeconds());
            }
            expired.set(expiredRows);
            parked.set(parkedRows);
            overdue.set(overdueRows);
            maxDrives.set(drives);
            oldestAgeSeconds = oldest;
        } catch (DatabaseUnavailableException e) {
            // keep the last values; readiness reports the database
        }
    }
}

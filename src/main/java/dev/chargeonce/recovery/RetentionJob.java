package dev.chargeonce.recovery;

import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.idempotency.Upkeep;
import dev.chargeonce.idempotency.Operation;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.time.Duration;
import org.jboss.logging.Logger;

/**
 * Keeps {@code stripe_intents} from growing forever: deletes finished rows older than the retention, a small
 * batch per statement. Refuses to start with a retention that could re-open the door to duplicates.
 */
@ApplicationScoped
public class RetentionJob {

    /** Stripe remembers an idempotency key for at least this long. */
    static final Duration STRIPE_KEY_WINDOW = Duration.ofHours(24);
    private static final Logger LOG = Logger.getLogger(RetentionJob.class);
    private static final int MAX_BATCHES_PER_PASS = 200;

    private final Upkeep upkeep;
    private final IdempotencyConfig config;
    private final Counter deleted;

    RetentionJob(Upkeep upkeep, IdempotencyConfig config, MeterRegistry metrics) {
        this.upkeep = upkeep;
        this.config = config;
        this.deleted = metrics.counter("chargeonce.retention.deleted");
    }

    void validateAtStartup(@Observes StartupEvent event) {
        validate(config.retention(), config.lease());
    }

    static void validate(Duration retention, Duration lease) {
        Duration minimum = STRIPE_KEY_WINDOW.plus(lease);
        if (retention.compareTo(minimum) < 0) {
            throw new IllegalStateException("chargeonce.idempotency.retention=" + retention + " is shorter than Stripe's 24 h"
                    + " key window plus the lease (" + minimum + "): a retry after the row is gone would charge again");
        }
    }

    @Scheduled(identity = "retention", every = "${chargeonce.retention.interval:10m}", delayed = "1m",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void pass() {
        try {
            int total = 0;
            // A charge can be refunded for the refund window: charges and their refunds are kept that long too.
            Duration age = config.keptFor();
            // Refunds first: a charge is kept while it has refunds, so that a refund's key never outlives its charge.
            for (Operation op : new Operation[] {Operation.REFUND, Operation.CHARGE}) {
                for (int i = 0; i < MAX_BATCHES_PER_PASS; i++) {
                    int n = upkeep.deleteFinishedBefore(op, age, config.retentionBatchSize());
                    total += n;
                    if (n < config.retentionBatchSize()) {
                        break;
                    }
                }
            }
            if (total > 0) {
                deleted.increment(total);
                LOG.infof("retention: deleted %d finished row(s) older than %s", total, age);
            }
        } catch (DatabaseUnavailableException e) {
            LOG.warnf("retention pass skipped: %s", e.getMessage());
        }
    }
}

package dev.chargeonce.recovery;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

@ConfigMapping(prefix = "chargeonce.recovery")
public interface RecoveryConfig {

    /** Whether this instance runs the recovery worker (every instance does by default; they never collide). */
    @WithDefault("true")
    boolean enabled();

    /** Time between passes (read by the {@code @Scheduled} expression of {@link RecoveryWorker}). */
    @WithDefault("5s")
    Duration interval();

    /** Time between passes of the sync worker (read by the {@code @Scheduled} expression of {@link PaymentSyncWorker}). */
    @WithDefault("15s")
    Duration syncInterval();

    /** Delay of the first pass after start-up. */
    @WithDefault("2s")
    Duration initialDelay();

    /** How many expired rows one pass takes over at most. They are driven concurrently. */
    @WithDefault("20")
    int batchSize();

    /**
     * A processing row older than this since its claim is overdue: {@code chargeonce.processing.overdue.rows}
     * counts it, and the PrometheusRule alerts on any. A normal charge is final in seconds; a pending bank debit
     * can take days (it counts too: someone should know).
     */
    @WithDefault("10m")
    Duration overdueAfter();
}

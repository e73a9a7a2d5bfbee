package dev.chargeonce.reconcile;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** {@code chargeonce.reconciliation.*}: the comparison with Stripe's records. */
@ConfigMapping(prefix = "chargeonce.reconciliation")
public interface ReconciliationConfig {

    /** Runs on a schedule (every instance schedules it; one at a time runs it, under the job's lease). */
    @WithDefault("true")
    boolean enabled();

    @WithDefault("10m")
    Duration interval();

    /** The first pass after start-up. */
    @WithDefault("1m")
    Duration initialDelay();

    /** The first scheduled window, when no run completed yet: this far back. */
    @WithDefault("24h")
    Duration firstWindow();

    /** Each scheduled window starts this long before the previous one ended (late events, clock skew). */
    @WithDefault("10m")
    Duration overlap();

    /** A scheduled window ends this long ago: what is younger is still being driven, not a difference. */
    @WithDefault("5m")
    Duration settleDelay();

    /**
     * A row whose state differs from Stripe's is a finding only once it has not changed for this long: an event
     * on its way is not a difference.
     */
    @WithDefault("10m")
    Duration grace();

    /** The job's lease, renewed after every page: a killed holder's run is taken on after this. */
    @WithDefault("60s")
    Duration lease();

    /** Pages one pass reads at most (the run goes on in the next pass, from its checkpoint). */
    @WithDefault("1000")
    int pagesPerPass();

    /** Pages a run reads at most; a window that needs more fails, naming the setting, instead of costing without end. */
    @WithDefault("20000")
    int maxPagesPerRun();

    /** Stripe reads per second at most (Stripe's read limit is far above; other work shares it). */
    @WithDefault("20")
    int requestsPerSecond();

    /** The first back-off after a 429; it doubles up to 32 s, then the pass ends and the next one resumes. */
    @WithDefault("1s")
    Duration rateLimitBackoff();
}

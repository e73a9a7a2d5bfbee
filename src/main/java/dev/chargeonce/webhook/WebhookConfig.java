package dev.chargeonce.webhook;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** The inbox's upkeep (the endpoint's secrets and tolerance are Stripe settings: {@code chargeonce.stripe.webhook-*}). */
@ConfigMapping(prefix = "chargeonce.webhooks")
public interface WebhookConfig {

    /** How long received events are kept. Longer than Stripe's redelivery window (3 days): start-up refuses less. */
    @WithDefault("7d")
    Duration retention();

    /** Whether this instance runs the catch-up (Stripe's Events API → the same inbox). */
    @WithDefault("true")
    boolean catchUpEnabled();

    /** Time between catch-up passes. */
    @WithDefault("5m")
    Duration catchUpInterval();

    /** The first pass after start-up (read by the schedule's expression; declared here to be documented and checked). */
    @WithDefault("30s")
    Duration catchUpInitialDelay();

    /**
     * How long after its creation an event may still appear in Stripe's list (Stripe lists events by creation time,
     * and one can be listed a little after younger ones; this also covers the clocks' difference): the catch-up's
     * place never moves onto an event younger than this, so every pass reads those again.
     */
    @WithDefault("2m")
    Duration catchUpOverlap();

    /** Where the very first pass starts (no place kept yet): this long ago (Stripe keeps events 30 days). */
    @WithDefault("1h")
    Duration catchUpFirstWindow();

    /** Events per page of Stripe's list (1-100). */
    @WithDefault("100")
    int catchUpPageSize();

    /**
     * Pages one pass reads at most; a pass that stops there keeps its place and the next pass goes on from it. The
     * events of one pass interval must fit (1,000 pages: 100,000 events every 5 minutes).
     */
    @WithDefault("1000")
    int catchUpMaxPages();

    /** The lease that lets one pass at a time read (renewed with every page): a killed holder's is taken after this. */
    @WithDefault("2m")
    Duration catchUpLease();
}

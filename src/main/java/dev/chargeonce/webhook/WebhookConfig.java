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

    /** How far before the newest recorded event a pass lists again (events arrive, and are listed, out of order). */
    @WithDefault("10m")
    Duration catchUpOverlap();

    /** With no event recorded yet, how far back the first pass lists (Stripe keeps events 30 days). */
    @WithDefault("24h")
    Duration catchUpFirstWindow();
}

package dev.chargeonce.stripe;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

@ConfigMapping(prefix = "chargeonce.stripe")
public interface StripeConfig {

    /** The secret key (sk_...). In prod it comes from a Kubernetes secret, never from the image. */
    String apiKey();

    /** Where the SDK sends requests: Stripe in prod, the sandbox in dev and tests. */
    @WithDefault("https://api.stripe.com")
    String apiBase();

    @WithDefault("2s")
    Duration connectTimeout();

    /**
     * The SDK's own read timeout (its default is 80 s). Kept below the fault-tolerance timeout so that the socket,
     * not an interrupt, ends a slow call.
     */
    @WithDefault("8s")
    Duration readTimeout();

    /** Network retries inside the SDK. 0: retries are SmallRye Fault Tolerance's job, with the same key. */
    @WithDefault("0")
    int maxNetworkRetries();

    /**
     * Stripe keeps an idempotency key at least 24 hours. Past this age a create is never re-sent with the key:
     * the payment is looked up instead, or parked for reconciliation.
     */
    @WithDefault("23h")
    Duration keyHorizon();

    /**
     * How much wider than the attempt's send window the lookup lists PaymentIntents, for the clock skew between our
     * database and Stripe.
     */
    @WithDefault("2m")
    Duration lookupSkew();

    /** Pages of 100 PaymentIntents the lookup reads before it gives up proving an absence. */
    @WithDefault("50")
    int lookupMaxPages();
}

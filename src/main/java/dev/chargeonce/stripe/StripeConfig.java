package dev.chargeonce.stripe;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

@ConfigMapping(prefix = "chargeonce.stripe")
public interface StripeConfig {

    /** The secret key (sk_...). In prod it comes from a Kubernetes secret, never from the image. */
    String apiKey();

    /**
     * The signing secrets of the webhook endpoint ({@code whsec_...}), comma separated: during a rotation both the
     * old and the new one are accepted. Without any, {@code POST /v1/webhooks/stripe} refuses every event.
     */
    java.util.Optional<java.util.List<String>> webhookSecret();

    /** How far a webhook's signed timestamp may be from now, in the past (a replay) or in the future. */
    @WithDefault("300s")
    Duration webhookTolerance();

    /** Where the SDK sends requests: Stripe in prod, the sandbox in dev and tests. */
    @WithDefault("https://api.stripe.com")
    String apiBase();

    @WithDefault("2s")
    Duration connectTimeout();

    /**
     * How long a create's try waits for Stripe's answer (the SDK's default is 80 s). On a virtual thread (the requests'
     * calls) the watchdog ends the try once this much time has passed since it started, or at the try's limit
     * (Timeout/value) if that is shorter, and the SDK's client has no read timeout of its own
     * ({@code StripeClients#forWatchedTry}); on a platform thread (no create of the service's runs on one) and for
     * lookups it is the SDK's socket read timeout. At least 1 ms (start-up refuses less: the SDK reads 0 as none).
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
     * How long Stripe may still be working on a request after it was sent. The service stops waiting after the read
     * timeout; Stripe does not. A key whose last send is older than this has no request running at Stripe, so a
     * list of its PaymentIntents is final. Must cover the read timeout with a wide margin (start-up refuses less).
     */
    @WithDefault("60s")
    Duration requestMaxDuration();

    /**
     * How much wider than the key's send window the lookup lists PaymentIntents, for the clock skew between our
     * database and Stripe.
     */
    @WithDefault("2m")
    Duration lookupSkew();

    /**
     * A sanity bound on the pages of 100 PaymentIntents one lookup reads. A lookup's window is bounded by the sends
     * of the key, so it pages to the end of it; this only stops a list that never ends (a broken cursor).
     */
    @WithDefault("10000")
    int lookupMaxPages();

    /**
     * When a PaymentIntent Stripe named is looked at again by id while it is not final ({@code processing}, ...):
     * after the first wait, then the next, the last one repeating. Client retries look at once, whatever the step.
     */
    @WithDefault("1m,5m,30m,1h")
    java.util.List<Duration> pendingRecheck();

    /**
     * A charge waiting for the customer's 3-D Secure longer than this is canceled at Stripe (so that it can never be
     * completed later without the service knowing) and answered {@code canceled}.
     */
    @WithDefault("1h")
    Duration requiresActionExpiry();

    /**
     * When Stripe replays a 5xx for a key the row never sent (the database lost the row's history: a failover to
     * an asynchronous standby, a restore), the payment is searched for this far back, by the key's identity.
     * Covers Stripe's 24 h key window with a margin.
     */
    @WithDefault("48h")
    Duration lostHistoryLookback();

    /**
     * Pages such a search may read (100 PaymentIntents each) before the row is parked for an operator instead.
     */
    @WithDefault("2000")
    int lostHistoryMaxPages();
}

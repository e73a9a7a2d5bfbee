package dev.chargeonce.stripe;

import java.time.Duration;
import org.eclipse.microprofile.config.Config;

/**
 * The longest one create call can take, every fault-tolerance try and delay included, from the configuration
 * actually in force (the annotations' defaults of {@link StripeApi#create}, overridden by MicroProfile config).
 * A lease must be longer, or a holder could still be sending when the next one takes over.
 */
public final class StripeCallBudget {

    private StripeCallBudget() {
    }

    public static Duration of(StripeConfig stripe, Config config) {
        long timeout = Duration.ofSeconds(value(config, "Timeout/value", StripeApi.TIMEOUT_SECONDS)).toMillis();
        // A try ends at the fault-tolerance timeout, or earlier when the SDK's own socket timeouts fire.
        long perTry = Math.min(timeout, stripe.connectTimeout().plus(stripe.readTimeout()).toMillis());
        long retries = value(config, "Retry/maxRetries", StripeApi.MAX_RETRIES);
        long pause = value(config, "Retry/delay", StripeApi.RETRY_DELAY_MILLIS) + value(config, "Retry/jitter", StripeApi.RETRY_JITTER_MILLIS);
        long allTries = (retries + 1) * perTry + retries * pause;
        // No retry starts after maxDuration; the one that started just before it may run a whole try.
        long maxDuration = Duration.ofSeconds(value(config, "Retry/maxDuration", StripeApi.RETRY_MAX_DURATION_SECONDS)).toMillis();
        return Duration.ofMillis(Math.min(allTries, maxDuration + perTry));
    }

    private static long value(Config config, String key, long fallback) {
        return config.getOptionalValue(StripeApi.CONFIG_PREFIX + key, Long.class).orElse(fallback);
    }
}

package dev.chargeonce.stripe;

import java.time.Duration;
import org.eclipse.microprofile.config.Config;

/**
 * The longest one create call can take (a PaymentIntent's or a refund's, whichever is longer), every
 * fault-tolerance try and delay included, from the configuration actually in force (the annotations' defaults of
 * {@link StripeApi#create} and {@link StripeApi#createRefund}, overridden by MicroProfile config). A lease must be
 * longer, or a holder could still be sending when the next one takes over.
 */
public final class StripeCallBudget {

    private StripeCallBudget() {
    }

    public static Duration of(StripeConfig stripe, Config config) {
        Duration longest = Duration.ZERO;
        for (String method : StripeApi.CREATE_METHODS) {
            Duration budget = of(stripe, config, StripeApi.CONFIG_ROOT + method + "/");
            longest = budget.compareTo(longest) > 0 ? budget : longest;
        }
        return longest;
    }

    private static Duration of(StripeConfig stripe, Config config, String prefix) {
        // The SDK reads a timeout of 0 (or under a millisecond, truncated) as none, which no budget can cover.
        for (var timeout : java.util.Map.of("connect-timeout", stripe.connectTimeout(), "read-timeout", stripe.readTimeout()).entrySet()) {
            if (timeout.getValue().toMillis() < 1) {
                throw new IllegalStateException("chargeonce.stripe." + timeout.getKey() + "=" + timeout.getValue()
                        + " must be at least 1 ms: the SDK would read it as no timeout, and a Stripe call's budget"
                        + " (which the lease must outlast) would have no bound");
            }
        }
        // A try ends at its limit (TryWatchdog, up to one of its looks later), or earlier: on a virtual thread at the
        // read timeout counted from its start (the watchdog again: StripeApi#tryLimitNanos), on a platform thread when
        // the SDK's socket timeouts fire, no byte for that long. (There an answer trickled in a byte at a time resets
        // the read timeout, and the watchdog's interrupt does not end a platform thread's socket read: the budget
        // assumes Stripe does not answer that way.)
        long timeout = Duration.ofSeconds(trySeconds(config, prefix)).toMillis() + TryWatchdog.LOOK_MILLIS;
        long perTry = Math.min(timeout, stripe.connectTimeout().plus(stripe.readTimeout()).toMillis());
        long retries = value(config, prefix, "Retry/maxRetries", StripeApi.MAX_RETRIES);
        long pause = value(config, prefix, "Retry/delay", StripeApi.RETRY_DELAY_MILLIS) + value(config, prefix, "Retry/jitter", StripeApi.RETRY_JITTER_MILLIS);
        long allTries = (retries + 1) * perTry + retries * pause;
        // No retry starts after maxDuration; the one that started just before it may run a whole try.
        long maxDuration = Duration.ofSeconds(value(config, prefix, "Retry/maxDuration", StripeApi.RETRY_MAX_DURATION_SECONDS)).toMillis();
        return Duration.ofMillis(Math.min(allTries, maxDuration + perTry));
    }

    /**
     * A try's limit in seconds ({@code <prefix>Timeout/value}, the key Fault Tolerance's {@code @Timeout} had; read at
     * start-up by {@link #of}, so a wrong one stops the service before its first charge). The keys of that annotation
     * that meant something else are refused: nothing reads them any more.
     */
    static long trySeconds(Config config, String prefix) {
        for (String ignored : java.util.List.of("Timeout/unit", "Timeout/enabled")) {
            if (config.getOptionalValue(prefix + ignored, String.class).isPresent()) {
                throw new IllegalStateException(prefix + ignored + " is not read (a Stripe try's limit is " + prefix
                        + "Timeout/value, in seconds, and cannot be switched off)");
            }
        }
        long seconds = value(config, prefix, "Timeout/value", StripeApi.TIMEOUT_SECONDS);
        if (seconds <= 0) {
            throw new IllegalStateException(prefix + "Timeout/value must be a positive number of seconds, is " + seconds);
        }
        return seconds;
    }

    private static long value(Config config, String prefix, String key, long fallback) {
        return config.getOptionalValue(prefix + key, Long.class).orElse(fallback);
    }
}

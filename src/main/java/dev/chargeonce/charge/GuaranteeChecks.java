package dev.chargeonce.charge;

import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.stripe.StripeCallBudget;
import dev.chargeonce.stripe.StripeConfig;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * Refuses to start with settings that would quietly break exactly-once, naming the setting and the reason (the
 * retention has its own check in {@code RetentionJob}).
 */
@ApplicationScoped
public class GuaranteeChecks {

    /** Stripe keeps an idempotency key at least this long; a create re-sent later may charge again. */
    static final Duration STRIPE_KEY_WINDOW = Duration.ofHours(24);

    void check(@Observes StartupEvent event, StripeConfig stripe, IdempotencyConfig idempotency) {
        List<String> problems = problems(idempotency.lease(), StripeCallBudget.of(stripe, ConfigProvider.getConfig()),
                stripe.connectTimeout().plus(stripe.readTimeout()), stripe.requestMaxDuration(), stripe.keyHorizon());
        if (!problems.isEmpty()) {
            throw new IllegalStateException("refusing to start, the configuration breaks exactly-once:\n  - "
                    + String.join("\n  - ", problems));
        }
    }

    /**
     * @param callBudget         the longest one Stripe create call can take ({@link StripeCallBudget})
     * @param perTry             connect + read timeout: how long the service waits for one try
     */
    static List<String> problems(Duration lease, Duration callBudget, Duration perTry, Duration requestMaxDuration,
                                 Duration keyHorizon) {
        List<String> problems = new ArrayList<>();
        if (lease.compareTo(callBudget) <= 0) {
            problems.add("chargeonce.idempotency.lease=" + lease + " is not longer than one Stripe create call can take ("
                    + callBudget + ": a try's limit (Timeout/value) or connect + read timeout per try, times the tries, plus"
                    + " the retry delays): a holder would run out of lease while it may still be sending, and retries"
                    + " would be cut short. Raise the lease above " + callBudget + " or shorten the Stripe timeouts/retries.");
        }
        if (requestMaxDuration.compareTo(perTry) <= 0) {
            problems.add("chargeonce.stripe.request-max-duration=" + requestMaxDuration + " is not longer than one"
                    + " try (connect-timeout + read-timeout = " + perTry + "): Stripe may still be working on a request the"
                    + " service stopped waiting for, and a lookup that soon could prove an absence that is not one.");
        }
        Duration lastUse = keyHorizon.plus(lease).plus(requestMaxDuration);
        if (lastUse.compareTo(STRIPE_KEY_WINDOW) >= 0) {
            problems.add("chargeonce.stripe.key-horizon=" + keyHorizon + ": a key sent just before the horizon,"
                    + " by a holder with a " + lease + " lease, may run at Stripe for request-max-duration ("
                    + requestMaxDuration + ") more, which reaches Stripe's 24 h key window (" + lastUse
                    + "): Stripe could have forgotten the key and charge again. Keep horizon + lease + request-max-duration"
                    + " under 24 h.");
        }
        return problems;
    }
}

package dev.chargeonce.ratebudget;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.Map;

/** The shared Stripe rate budget ({@code chargeonce.stripe.budget.*}, see docs/stripe-rate-budget.md). */
@ConfigMapping(prefix = "chargeonce.stripe.budget")
public interface BudgetConfig {

    /** Off: no permit is asked for (a Stripe account whose limits the service cannot reach). */
    @WithDefault("true")
    boolean enabled();

    /**
     * The Stripe account the key belongs to: instances that name the same account share its schedules. Two
     * deployments on one account (staging and a batch job, say) must name it the same way to share its limits.
     */
    @WithDefault("default")
    String account();

    /**
     * Permits per second, per endpoint ({@link Endpoint#id()}): Stripe's limit with headroom, since Stripe asks
     * integrations to treat its limits as maximums (25 a second per endpoint unless stated otherwise).
     */
    Map<String, Double> rates();

    /**
     * Stripe's account-wide limit, with headroom (Stripe: 100 a second in live mode, 25 in a sandbox). The endpoints'
     * rates together must fit under it, checked at start-up: a partition of the account's rate, exact and free,
     * where one schedule for the whole account would cost every request a second booking. Its price: an endpoint
     * cannot use what another leaves idle.
     */
    @WithDefault("80")
    double globalRate();

    /**
     * Each class's share of every endpoint's rate ({@link TrafficClass#id()}): its floor. A class borrows what the
     * others leave idle, so the foreground gets the whole rate while nothing runs in the background.
     */
    Map<String, Double> shares();

    /**
     * How long a client's request may wait for a permit before it is answered {@code 503} with the time a permit
     * will be free: a burst is smoothed into the rate instead of refused.
     */
    @WithDefault("5s")
    Duration maxWait();

    /**
     * How late after its slot a permit may still be used, and how long a booked permit is kept for a request of
     * this instance: the burst Stripe may see above the rate in any second is the rate times this (plus one permit
     * per class). The longer, the fewer bookings when demand is far below the rate (an instance books about once per
     * tolerance then); 100 ms keeps a rate at 80% of Stripe's limit under the limit (20 x 1.1 + 3 = 25).
     */
    @WithDefault("100ms")
    Duration tolerance();

    /** How far ahead an instance books permits when its own demand is steady: one statement per this much demand. */
    @WithDefault("250ms")
    Duration batchPeriod();

    /** After a {@code 429} from Stripe, the endpoint's rate is multiplied by this (at most once per cooldown). */
    @WithDefault("0.5")
    double decreaseFactor();

    @WithDefault("1s")
    Duration decreaseCooldown();

    /** ...and climbs back by this many permits per second, every second, up to the configured rate. */
    @WithDefault("1.0")
    double increasePerSecond();

    /** No decrease goes below this rate (permits per second). */
    @WithDefault("1.0")
    double minimumRate();
}

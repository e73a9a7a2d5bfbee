package dev.chargeonce.stripe;

import com.stripe.StripeClient;
import com.stripe.exception.RateLimitException;
import com.stripe.exception.StripeException;
import dev.chargeonce.ratebudget.Endpoint;
import dev.chargeonce.ratebudget.StripeRateBudget;
import dev.chargeonce.ratebudget.TrafficClass;
import dev.chargeonce.stripe.StripeGateway.RateLimitedException;
import java.time.Duration;

/**
 * Reads take their permits from the account's rate budget too ({@link Endpoint#READS}), each for the class of the
 * code that reads: a client's request waits a little (a lookup under its lease), background work longer (its pass
 * goes on after the wait). A read that gets no permit in time fails as Stripe's own 429 would: the caller comes back
 * later, as it does after any failed read.
 */
final class ReadPermits {

    static final Duration FOREGROUND_WAIT = Duration.ofSeconds(2);
    static final Duration BACKGROUND_WAIT = Duration.ofSeconds(5);

    private final StripeClients clients;
    private final StripeRateBudget budget;

    ReadPermits(StripeClients clients, StripeRateBudget budget) {
        this.clients = clients;
        this.budget = budget;
    }

    /** The client for one read, once its permit is granted; {@link RateLimitedException} when none came in time. */
    StripeClient client() {
        Duration wait = TrafficClass.current() == TrafficClass.FOREGROUND ? FOREGROUND_WAIT : BACKGROUND_WAIT;
        StripeRateBudget.Grant grant = budget.await(Endpoint.READS, System.nanoTime() + wait.toNanos());
        if (!grant.granted()) {
            throw new RateLimitedException("no permit of the Stripe rate budget for a read within " + wait
                    + " (one is free in about " + grant.retryAfter() + ")", null);
        }
        return clients.client();
    }

    /** Tells the budget of Stripe's 429 on a read (it lowers the reads' rate); other failures pass unseen. */
    void failed(StripeException e) {
        if (e instanceof RateLimitException rateLimited) {
            budget.rateLimited(Endpoint.READS, StripeApi.rateLimitedReason(rateLimited));
        }
    }
}

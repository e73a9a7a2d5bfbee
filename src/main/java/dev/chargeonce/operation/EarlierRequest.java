package dev.chargeonce.operation;

import dev.chargeonce.stripe.StripeOutcome;

/**
 * The request that made a key's Stripe object, as the object's metadata tells it, and what became of it: what a row
 * takes on when Stripe proves that its key was first used by another request, whose row the database lost.
 *
 * @param outcome        the object's state now
 * @param fingerprint    the earlier request's fingerprint, in its stored form: compared with every later retry
 * @param requestJson    the earlier request, rebuilt from the object (the row's {@code request}: what its views and
 *                       refunds read)
 * @param sameAsThis     whether the earlier request is the one the row holds now (then Stripe refused something else)
 */
public record EarlierRequest(StripeOutcome outcome, String fingerprint, String requestJson, long amount, String currency,
                             boolean sameAsThis) {
}

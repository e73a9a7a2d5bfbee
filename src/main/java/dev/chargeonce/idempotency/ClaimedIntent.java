package dev.chargeonce.idempotency;

import java.time.Instant;

/**
 * A {@code processing} row as seen by the one holder of its lease. {@code leaseGeneration} is the fencing
 * token every write of the holder carries; {@code stripeAttempt} picks the Stripe idempotency key.
 *
 * @param lastStripeError {@code server_error} when Stripe answered 5xx for the current attempt: the same key
 *                        would only replay that 500, so the next driver must look the payment up first
 * @param keyBeyondHorizon the current Stripe key is older than the key horizon: Stripe may have forgotten
 *                         it, so a create must never be re-sent with it
 * @param stripeKeyFirstSent when the current Stripe attempt's key was first used (by the database clock): a
 *                         PaymentIntent of this attempt can only have been created shortly after it
 */
public record ClaimedIntent(String id, String clientId, IdempotencyKey key, String requestJson, long amount, String currency,
                            int leaseGeneration, int stripeAttempt, String lastStripeError, boolean keyBeyondHorizon,
                            Instant createdAt, Instant stripeKeyFirstSent) {

    public static final String SERVER_ERROR = "server_error";

    public boolean mustLookUpBeforeSending() {
        return SERVER_ERROR.equals(lastStripeError) || keyBeyondHorizon;
    }
}

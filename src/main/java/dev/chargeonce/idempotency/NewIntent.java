package dev.chargeonce.idempotency;

/**
 * What a claim inserts when the key is new.
 *
 * @param stripeIdentity the charge's identity at Stripe (its {@code chargeonce_key} metadata): how an event
 *                       naming a PaymentIntent the row never heard of finds the row
 */
public record NewIntent(Operation operation, String id, String clientId, IdempotencyKey key, Fingerprint fingerprint, String requestJson,
                        long amount, String currency, String stripeIdentity) {
}

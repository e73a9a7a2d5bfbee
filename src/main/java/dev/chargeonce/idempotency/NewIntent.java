package dev.chargeonce.idempotency;

/**
 * What a claim inserts when the key is new.
 *
 * @param stripeIdentity the charge's identity at Stripe (its {@code chargeonce_key} metadata): how an event
 *                       naming a PaymentIntent the row never heard of finds the row
 * @param origin         where the claim came from: null for HTTP, the record for a Kafka command (its result is then
 *                       queued in the outbox by whatever finishes the row)
 */
public record NewIntent(Operation operation, String id, String clientId, IdempotencyKey key, Fingerprint fingerprint, String requestJson,
                        long amount, String currency, String stripeIdentity, String origin) {

    /** A claim over HTTP. */
    public NewIntent(Operation operation, String id, String clientId, IdempotencyKey key, Fingerprint fingerprint,
                     String requestJson, long amount, String currency, String stripeIdentity) {
        this(operation, id, clientId, key, fingerprint, requestJson, amount, currency, stripeIdentity, null);
    }
}

package dev.chargeonce.idempotency;

/**
 * What a claim inserts when the key is new.
 *
 * @param origin         where the claim came from: null for HTTP, the record for a Kafka command (its result is then
 *                       queued in the outbox by whatever finishes the row)
 */
public record NewIntent(Operation operation, String id, String clientId, IdempotencyKey key, Fingerprint fingerprint, String requestJson,
                        long amount, String currency, String origin) {

    /** A claim over HTTP. */
    public NewIntent(Operation operation, String id, String clientId, IdempotencyKey key, Fingerprint fingerprint,
                     String requestJson, long amount, String currency) {
        this(operation, id, clientId, key, fingerprint, requestJson, amount, currency, null);
    }
}

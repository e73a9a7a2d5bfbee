package dev.chargeonce.idempotency;

/**
 * What a claim inserts when the key is new.
 *
 * @param idPrefix       the new row's id is this prefix and a digest of the key's identity ({@link RowIds#ofIdentity}):
 *                       the same id whenever the key is claimed anew, after a database lost its row too
 * @param origin         where the claim came from: null for HTTP, the record for a Kafka command (its result is then
 *                       queued in the outbox by whatever finishes the row)
 */
public record NewIntent(Operation operation, String idPrefix, String clientId, IdempotencyKey key, Fingerprint fingerprint, String requestJson,
                        long amount, String currency, String origin) {

    /** A claim over HTTP. */
    public NewIntent(Operation operation, String idPrefix, String clientId, IdempotencyKey key, Fingerprint fingerprint,
                     String requestJson, long amount, String currency) {
        this(operation, idPrefix, clientId, key, fingerprint, requestJson, amount, currency, null);
    }
}

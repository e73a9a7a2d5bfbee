package dev.chargeonce.idempotency;

/** What a claim inserts when the key is new. */
public record NewIntent(String id, String clientId, IdempotencyKey key, Fingerprint fingerprint, String requestJson,
                        long amount, String currency) {
}

package dev.chargeonce.stripe;

import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.idempotency.Operation;

/**
 * The Stripe idempotency key of a charge or refund: derived from the identity the row stores (a hash of the client
 * and its Idempotency-Key, computed once at the claim) and the Stripe attempt number, never generated per call, so
 * that every retry, takeover and recovery re-sends the same key.
 */
public final class StripeKeys {

    private StripeKeys() {
    }

    /**
     * The Stripe key of an attempt, from the identity a row stores (what the console shows was sent); a refund's
     * keys have a namespace of their own, so a client may use one Idempotency-Key for both.
     */
    public static String ofIdentity(boolean refund, String identity, int attempt) {
        return (refund ? "chargeonce-refund-" : "chargeonce-") + identity + "-a" + attempt;
    }

    /** The stable identity of a refund at Stripe (its {@code chargeonce_key} metadata), from (client, refund key). */
    public static String refundIdentity(String clientId, String idempotencyKey) {
        return new IdempotencyKey(idempotencyKey).identity(Operation.REFUND, clientId);
    }

    /**
     * The stable identity of a charge at Stripe: a hash of (client, Idempotency-Key), the same for every row that
     * key ever has (a row lost with a failover and claimed again included). The key itself never leaves the service.
     */
    public static String identity(String clientId, String idempotencyKey) {
        return new IdempotencyKey(idempotencyKey).identity(Operation.CHARGE, clientId);
    }
}

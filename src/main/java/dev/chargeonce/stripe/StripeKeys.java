package dev.chargeonce.stripe;

import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.idempotency.IdempotencyKey;

/**
 * The Stripe idempotency key of a charge: derived from the persisted (client, Idempotency-Key) and the Stripe
 * attempt number, never generated per call, so that every retry, takeover and recovery re-sends the same key.
 */
public final class StripeKeys {

    private StripeKeys() {
    }

    public static String derive(String clientId, IdempotencyKey key, int attempt) {
        return "chargeonce-" + Fingerprint.sha256Hex(clientId + '\n' + key.value()).substring(0, 48) + "-a" + attempt;
    }
}

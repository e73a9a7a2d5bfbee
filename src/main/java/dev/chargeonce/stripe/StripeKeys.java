package dev.chargeonce.stripe;

/**
 * The Stripe idempotency key of a charge or refund: derived from the identity the row stores (a keyed hash of the
 * client and its Idempotency-Key, computed once at the claim: {@code KeyIdentities}) and the Stripe attempt number,
 * never generated per call, so that every retry, takeover and recovery re-sends the same key.
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
}

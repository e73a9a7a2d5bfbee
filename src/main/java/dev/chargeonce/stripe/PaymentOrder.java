package dev.chargeonce.stripe;

import java.util.Map;

/**
 * One create-and-confirm request to Stripe. Everything Stripe sees is a function of (client, Idempotency-Key,
 * request): the idempotency key and the metadata that identify the payment are derived from the client and its key,
 * never from a row's random id, so a row the database lost and a retry claimed again sends the very same request.
 *
 * @param identity  the identity the row stores (a keyed hash of client and key, {@code KeyIdentities}): written as
 *                  {@link #KEY} metadata, what lookups match on
 * @param requestFingerprint the request's fingerprint, written as {@link #REQUEST} metadata (a function of the
 *                   request, so the same for every send of the row); null: not written (rows claimed by versions
 *                   that did not write it, whose later sends must stay identical to their first)
 * @param sendBefore {@link System#nanoTime()} after which no try may start: the holder's lease ends soon after,
 *                   and a send after it could race the next holder's
 */
public record PaymentOrder(String identity, String clientId, int attempt, String stripeIdempotencyKey, long amount,
                           String currency, String paymentMethod, String customer, String description,
                           Map<String, String> metadata, String requestFingerprint, long sendBefore) {

    /** Metadata keys this service writes on every PaymentIntent, so that a payment can be found again. */
    public static final String KEY = "chargeonce_key";
    public static final String CLIENT_ID = "chargeonce_client_id";
    public static final String ATTEMPT = "chargeonce_attempt";
    /**
     * The fingerprint of the request that made the PaymentIntent: what survives at Stripe when the database loses
     * the row, so that a retry with another body is told {@code 422} and the original's retry gets its answer back.
     */
    public static final String REQUEST = "chargeonce_request";
    /** Written by versions before the stable identity; still matched by lookups, never written. */
    public static final String LEGACY_CHARGE_ID = "chargeonce_charge_id";
}

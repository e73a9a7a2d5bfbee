package dev.chargeonce.stripe;

import java.util.Map;

/** One create-and-confirm request to Stripe, with the idempotency key derived from our persisted row. */
public record PaymentOrder(String chargeId, String clientId, int attempt, String stripeIdempotencyKey, long amount,
                           String currency, String paymentMethod, String customer, String description,
                           Map<String, String> metadata) {

    /** Metadata keys this service writes on every PaymentIntent, so that a payment can be found again. */
    public static final String CHARGE_ID = "chargeonce_charge_id";
    public static final String CLIENT_ID = "chargeonce_client_id";
    public static final String ATTEMPT = "chargeonce_attempt";
}

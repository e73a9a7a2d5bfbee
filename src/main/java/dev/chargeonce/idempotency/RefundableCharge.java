package dev.chargeonce.idempotency;

/** The charge a refund is claimed on, as its locked row says, with the refund's resolved amount. */
public record RefundableCharge(String chargeId, String paymentIntentId, String currency, long refundAmount) {
}

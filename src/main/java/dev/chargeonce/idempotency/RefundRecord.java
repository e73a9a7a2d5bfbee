package dev.chargeonce.idempotency;

import java.time.Instant;

/**
 * A refund row as the read endpoints show it.
 *
 * @param refundStatus the refund at Stripe ({@code pending}, {@code succeeded}...); null while its key has no answer
 */
public record RefundRecord(String id, String chargeId, IntentStatus status, String refundStatus, String stripeRefundId,
                           String requestJson, Instant createdAt) {
}

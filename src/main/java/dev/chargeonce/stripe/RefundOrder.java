package dev.chargeonce.stripe;

import java.util.Map;

/**
 * One refund request to Stripe. As for a charge, everything Stripe sees is a function of (client, refund's
 * Idempotency-Key, request): the key, and the {@link PaymentOrder#KEY} metadata (the identity the row stores).
 *
 * @param sendBefore {@link System#nanoTime()} after which no try may start (the holder's lease ends soon after)
 */
public record RefundOrder(String identity, String clientId, int attempt, String stripeIdempotencyKey,
                          String paymentIntentId, long amount, String reason, Map<String, String> metadata, long sendBefore) {
}

package dev.chargeonce.idempotency;

import java.time.Instant;

/** A row as the read endpoints show it. */
public record ChargeRecord(String id, IntentStatus status, long amount, String currency, String paymentIntentId,
                           String requestJson, Integer responseStatus, Instant createdAt) {
}

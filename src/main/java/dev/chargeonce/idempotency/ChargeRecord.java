package dev.chargeonce.idempotency;

import java.time.Instant;

/** A row as the read endpoints show it; {@code chargeStatus} is null for rows finished before it existed. */
public record ChargeRecord(String id, IntentStatus status, ChargeStatus chargeStatus, long amount, String currency,
                           String paymentIntentId, String requestJson, Integer responseStatus, Instant createdAt) {

    /** Processing, or accepted with its outcome still to come: a replica's copy may be behind. */
    public boolean mayStillChange() {
        return status == IntentStatus.PROCESSING
                || (status == IntentStatus.ACCEPTED && (chargeStatus == null || !chargeStatus.isFinal()));
    }
}

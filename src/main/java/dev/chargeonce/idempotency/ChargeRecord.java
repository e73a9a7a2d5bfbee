package dev.chargeonce.idempotency;

import java.time.Instant;

/** A row as the read endpoints show it; {@code chargeStatus} is null for rows finished before it existed. */
public record ChargeRecord(String id, IntentStatus status, ChargeStatus chargeStatus, long amount, String currency,
                           String paymentIntentId, String requestJson, Integer responseStatus, Instant createdAt,
                           long amountRefunded) {

    /**
     * Processing, accepted with its outcome still to come, or succeeded (it can be refunded at any time, and its
     * refunds move): a replica's copy may be behind. Only failed and canceled charges never change again.
     */
    public boolean mayStillChange() {
        return status == IntentStatus.PROCESSING
                || (status == IntentStatus.ACCEPTED && (chargeStatus == null || !chargeStatus.isFinal()))
                || succeeded();
    }

    /** Its payment succeeded (rows answered before the charge's state was kept: by their answer). */
    public boolean succeeded() {
        return chargeStatus != null ? chargeStatus == ChargeStatus.SUCCEEDED : status == IntentStatus.COMPLETED;
    }
}

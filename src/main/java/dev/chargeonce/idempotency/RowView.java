package dev.chargeonce.idempotency;

import java.time.Instant;

/**
 * A row of an operation's table as reconciliation and the operator's console read it: everything about its story
 * that the row itself keeps, without any lease.
 *
 * @param state           the Stripe object's state as this service last heard it ({@code charge_status},
 *                        {@code refund_status}); null before any
 * @param identity        the key's identity at Stripe ({@code chargeonce_key} metadata of everything it sent)
 * @param leaseGeneration the fencing token an operator's action must name: any driver, event or operator that
 *                        touched the row since the operator looked has moved it, and the action changes nothing
 * @param chargeId        a refund's charge (null for a charge)
 * @param amountReserved  a charge's pending and succeeded refunds (0 for a refund)
 */
public record RowView(Operation operation, String id, String clientId, IntentStatus status, String state, String objectId,
                      String identity, long amount, String currency, int leaseGeneration, int stripeAttempt, boolean parked,
                      String parkedReason, String lastStripeError, Integer responseStatus, Instant createdAt,
                      Instant updatedAt, Instant finishedAt, Instant stripeKeyFirstSent, Instant stripeKeyLastSent,
                      Instant leaseUntil, String chargeId, long amountReserved) {
}

package dev.chargeonce.reconcile;

import dev.chargeonce.idempotency.Operation;

/**
 * One difference with Stripe as a run found it. {@code subject} identifies it across runs (the same difference
 * found again is the same finding): the Stripe object, our row, or for duplicates the key's identity.
 */
public record Finding(FindingKind kind, String subject, Operation operation, String rowId, String stripeObjectId,
                      String clientId, String detail) {
}

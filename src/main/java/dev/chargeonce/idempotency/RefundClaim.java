package dev.chargeonce.idempotency;

/**
 * What claiming a refund key found. The refusals come before any row exists, so none is stored: the same key may
 * succeed later (once the charge succeeded, or a failed refund gave its amount back).
 */
public sealed interface RefundClaim {

    /** The key's claim, as for every operation. */
    record Claimed(Claim claim) implements RefundClaim {
    }

    /** No charge with this id for this client (another client's charge is not found either). */
    record ChargeMissing() implements RefundClaim {
    }

    /** The charge has not succeeded (processing, waiting for the customer, failed or canceled). */
    record ChargeNotRefundable(String chargeState) implements RefundClaim {
    }

    /** More than what is left to refund (pending and succeeded refunds count); nothing was asked of Stripe. */
    record AmountTooLarge(long requested, long refundable) implements RefundClaim {
    }
}

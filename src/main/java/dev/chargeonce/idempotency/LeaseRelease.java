package dev.chargeonce.idempotency;

import java.time.Duration;

/**
 * How a holder lets go of a row that is not final yet, and what it did at Stripe meanwhile.
 *
 * @param stripeError            {@link ClaimedIntent#SERVER_ERROR} when Stripe's API answered 5xx first-hand
 *                               (kept until the attempt changes); null leaves the row's value
 * @param sinceLastSend          how long ago the holder's latest request that may have run at Stripe started;
 *                               null when none can have (it then changes nothing about the key's last send)
 * @param recheckAfter           the recovery worker leaves the row alone this long (client retries do not wait);
 *                               null: as soon as the lease is free
 * @param pendingPaymentIntentId a PaymentIntent Stripe named that is not final yet: stored, followed by id from now
 */
public record LeaseRelease(String stripeError, Duration sinceLastSend, Duration recheckAfter, String pendingPaymentIntentId) {

    /** Nothing reached Stripe, or nothing new is known: the next driver may start at once. */
    public static LeaseRelease unchanged() {
        return new LeaseRelease(null, null, null, null);
    }
}

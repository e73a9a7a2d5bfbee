package dev.chargeonce.idempotency;

import java.time.Duration;
import java.time.Instant;

/**
 * A {@code processing} row as seen by the one holder of its lease. {@code leaseGeneration} is the fencing
 * token every write of the holder carries; {@code stripeAttempt} picks the Stripe idempotency key.
 *
 * @param leaseAcquiredNanos {@link System#nanoTime()} taken before the statement that granted the lease: the lease
 *                         runs at most until this plus the configured lease
 * @param lastStripeError  {@code server_error} when Stripe's API answered 5xx first-hand for the current key
 * @param keyBeyondHorizon the current Stripe key is older than the key horizon: Stripe may have forgotten
 *                         it, so a create must never be re-sent with it
 * @param stripeKeyFirstSent when the current key's window opened (claim, or the move to this attempt), by the
 *                         database's clock: a PaymentIntent of this key can only have been created after it
 * @param stripeKeyLastSent the latest a request with the current key may have started, by earlier holders (the
 *                         database's clock); null when no holder has ever sent it
 * @param stripeObjectId   the Stripe object (PaymentIntent, refund) Stripe named for the row when it was not final
 *                         yet: followed by id
 * @param pendingChecks    how often that object was looked at (the back-off's step)
 * @param databaseNow      the database's clock when the lease was granted
 * @param stripeIdentity   the key's identity at Stripe as the row stores it (stripe_identity): every Stripe key of
 *                         the row is derived from it, not recomputed from the client's key
 */
public record ClaimedIntent(Operation operation, String id, String clientId, String requestJson, long amount, String currency,
                            int leaseGeneration, long leaseAcquiredNanos, int stripeAttempt, String lastStripeError,
                            boolean keyBeyondHorizon, Instant createdAt, Instant stripeKeyFirstSent,
                            Instant stripeKeyLastSent, String stripeObjectId, int pendingChecks, Instant databaseNow,
                            String stripeIdentity) {

    public static final String SERVER_ERROR = "server_error";

    /** This row holding another request (see {@link Claims#takeOnEarlierRequest}). */
    public ClaimedIntent withRequest(String requestJson, long amount, String currency) {
        return new ClaimedIntent(operation, id, clientId, requestJson, amount, currency, leaseGeneration, leaseAcquiredNanos,
                stripeAttempt, lastStripeError, keyBeyondHorizon, createdAt, stripeKeyFirstSent, stripeKeyLastSent,
                stripeObjectId, pendingChecks, databaseNow, stripeIdentity);
    }

    /** No holder of this row has ever sent the current Stripe key. */
    public boolean keyNeverSent() {
        return stripeKeyLastSent == null;
    }

    /** Stripe's API answered 5xx first-hand for the current key, and nothing since has resolved it. */
    public boolean keyAnsweredServerError() {
        return SERVER_ERROR.equals(lastStripeError);
    }

    /**
     * No request with the current key can still be running at Stripe: its last send is older than the longest a
     * Stripe request runs. (A key never sent is trivially settled.)
     */
    public boolean keySettled(Duration requestMaxDuration) {
        return stripeKeyLastSent == null || !databaseNow.isBefore(stripeKeyLastSent.plus(requestMaxDuration));
    }

    /** By when a PaymentIntent of the current key, if any, was created: the end of the lookup's window. */
    public Instant keyPaymentCreatedBy(Duration requestMaxDuration) {
        return (stripeKeyLastSent == null ? stripeKeyFirstSent : stripeKeyLastSent).plus(requestMaxDuration);
    }

    /** The lease runs out at this {@link System#nanoTime()} (at the latest). */
    public long leaseEndsNanos(Duration lease) {
        return leaseAcquiredNanos + lease.toNanos();
    }
}

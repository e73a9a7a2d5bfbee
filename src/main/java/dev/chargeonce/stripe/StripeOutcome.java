package dev.chargeonce.stripe;

/**
 * What a Stripe call proved. The first four are final and cached; {@link NotSent} and {@link Unknown} are not:
 * the row stays {@code processing}, and only {@link Unknown} may have charged.
 */
public sealed interface StripeOutcome {

    record Succeeded(String paymentIntentId) implements StripeOutcome {
    }

    /** The card was declined: a PaymentIntent exists, uncharged. */
    record Declined(String paymentIntentId, String code, String declineCode, String message) implements StripeOutcome {
    }

    /** The card needs 3-D Secure, which a server-side charge cannot complete: final, uncharged. */
    record RequiresAction(String paymentIntentId) implements StripeOutcome {
    }

    /** Stripe refused the request itself (400/404): nothing was created; final. */
    record Rejected(int httpStatus, String code, String message, String param) implements StripeOutcome {
    }

    /** Provably not executed at Stripe (429, auth failure, circuit open, bulkhead full). Safe to try again. */
    record NotSent(String reason) implements StripeOutcome {
    }

    /**
     * Maybe charged, maybe not (timeout, dropped connection, 5xx, 409). {@code serverError}: Stripe answered 5xx,
     * which it replays for the same key, so the next attempt must look the payment up rather than re-send.
     */
    record Unknown(String reason, boolean serverError) implements StripeOutcome {
    }
}

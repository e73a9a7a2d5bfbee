package dev.chargeonce.stripe;

/**
 * What a Stripe call (or a lookup) proved. The first four are final and cached. The others are not: the row stays
 * {@code processing}, and each says what the next driver may do.
 */
public sealed interface StripeOutcome {

    record Succeeded(String paymentIntentId) implements StripeOutcome {
    }

    /** The card was declined: a PaymentIntent exists, uncharged. */
    record Declined(String paymentIntentId, String code, String declineCode, String message) implements StripeOutcome {
    }

    /**
     * The customer must authenticate (3-D Secure): the merchant's front end completes it with Stripe.js from the
     * PaymentIntent's {@code client_secret} and {@code next_action}; the outcome arrives later (webhook, sync).
     *
     * @param nextActionJson the PaymentIntent's {@code next_action}, as Stripe's JSON
     */
    record RequiresAction(String paymentIntentId, String clientSecret, String nextActionJson) implements StripeOutcome {
    }

    /** Stripe took the payment and finishes it later (a bank debit): the outcome arrives later (webhook, sync). */
    record Processing(String paymentIntentId) implements StripeOutcome {
    }

    /** The PaymentIntent was canceled (at our request, or by Stripe): final, uncharged. */
    record Canceled(String paymentIntentId) implements StripeOutcome {
    }

    /** Stripe refused the request itself (400/404): nothing was created; final. */
    record Rejected(int httpStatus, String code, String message, String param) implements StripeOutcome {
    }

    /**
     * Stripe named a PaymentIntent in a state this service never asks for ({@code requires_capture},
     * {@code requires_confirmation}, {@code requires_payment_method} without a payment error). It is followed by
     * id until it is final; a create would only replay this stale answer.
     */
    record Pending(String paymentIntentId, String status) implements StripeOutcome {
    }

    /**
     * No try of this call can have run at Stripe (429, authentication, circuit open, bulkhead full, lease spent
     * before sending). Safe to send again with the same key. It says nothing about earlier calls of the key.
     */
    record NotSent(String reason, boolean rateLimited) implements StripeOutcome {

        NotSent(String reason) {
            this(reason, false);
        }
    }

    /**
     * Maybe charged, maybe not: a timeout, a dropped connection, a 5xx from Stripe's edge, Stripe's 409 (another
     * request with the key is running there), or a 5xx Stripe answered first-hand. Re-sending the same key is safe.
     * {@code serverError}: Stripe's API answered 5xx for this key first-hand; the next driver may list the key's
     * PaymentIntents once the key is proven finished (a replayed 5xx, or time).
     */
    record Unknown(String reason, boolean serverError) implements StripeOutcome {
    }

    /**
     * Stripe replayed a stored 5xx for the key ({@code Idempotent-Replayed: true}): its one execution of the key is
     * over (it may have created a PaymentIntent before failing), and every later request with the key replays. A
     * list of the key's PaymentIntents now tells the truth, once it covers that execution's send.
     */
    record KeyFinishedWithError(String reason) implements StripeOutcome {
    }

    /**
     * Stripe refused the key because it was first used with other parameters ({@code idempotency_error}): a request
     * with this key exists at Stripe and it is not this one. Since everything Stripe sees is derived from (client,
     * key, request), only a row lost by the database and a different retry body get here. Never "absent".
     */
    record KeyConflict(String reason) implements StripeOutcome {
    }
}

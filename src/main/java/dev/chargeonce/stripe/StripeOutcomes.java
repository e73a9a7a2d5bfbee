package dev.chargeonce.stripe;

import com.stripe.exception.AuthenticationException;
import com.stripe.exception.CardException;
import com.stripe.exception.IdempotencyException;
import com.stripe.exception.InvalidRequestException;
import com.stripe.exception.RateLimitException;
import com.stripe.exception.StripeException;
import com.stripe.model.PaymentIntent;
import com.stripe.model.Refund;
import com.stripe.model.StripeError;
import org.eclipse.microprofile.faulttolerance.exceptions.BulkheadException;
import org.eclipse.microprofile.faulttolerance.exceptions.CircuitBreakerOpenException;
import org.eclipse.microprofile.faulttolerance.exceptions.TimeoutException;
import org.jboss.logging.Logger;

/**
 * What Stripe's answers mean, as a {@link StripeOutcome}: a PaymentIntent's state, a refund's state, and the failure
 * of a create call together with what its tries did ({@link SendLog}). Nothing Stripe-specific goes past these.
 */
final class StripeOutcomes {

    /** The gateway's category: these lines are the gateway's, wherever the code that writes them lives. */
    private static final Logger LOG = Logger.getLogger(StripeGateway.class);

    private StripeOutcomes() {
    }

    /** What a PaymentIntent's state means for a charge. */
    static StripeOutcome ofPaymentIntent(PaymentIntent pi) {
        StripeError last = pi.getLastPaymentError();
        return switch (nonNull(pi.getStatus(), "unknown")) {
            case "succeeded" -> new StripeOutcome.Succeeded(pi.getId());
            case "requires_action" -> new StripeOutcome.RequiresAction(pi.getId(), pi.getClientSecret(),
                    pi.getNextAction() == null ? null : pi.getNextAction().toJson());
            case "processing" -> new StripeOutcome.Processing(pi.getId());
            case "requires_payment_method" -> last == null
                    // Waiting for a payment method, but no attempt with one failed: not a decline (yet).
                    ? new StripeOutcome.Pending(pi.getId(), pi.getStatus())
                    : new StripeOutcome.Declined(pi.getId(), nonNull(last.getCode(), "card_declined"), last.getDeclineCode(),
                            nonNull(last.getMessage(), "Your card was declined."));
            case "canceled" -> new StripeOutcome.Canceled(pi.getId());
            // requires_capture, requires_confirmation: states this service never asks for; followed by id.
            default -> new StripeOutcome.Pending(pi.getId(), pi.getStatus());
        };
    }

    /**
     * What a refund's state means for its row: {@code succeeded}; {@code pending} (and {@code requires_action}) are
     * answered as made, their outcome to come; {@code failed} and {@code canceled} refunded nothing.
     */
    static StripeOutcome ofRefund(Refund refund) {
        return switch (nonNull(refund.getStatus(), "unknown")) {
            case "succeeded" -> new StripeOutcome.Succeeded(refund.getId());
            case "pending" -> new StripeOutcome.Processing(refund.getId());
            case "requires_action" -> new StripeOutcome.RequiresAction(refund.getId(), null, null);
            case "failed" -> new StripeOutcome.Declined(refund.getId(), "refund_failed", refund.getFailureReason(),
                    "The refund failed at Stripe" + (refund.getFailureReason() == null ? "." : ": " + refund.getFailureReason() + "."));
            case "canceled" -> new StripeOutcome.Canceled(refund.getId());
            default -> new StripeOutcome.Pending(refund.getId(), refund.getStatus());
        };
    }

    /**
     * What a create call proved when its last try threw {@code failure}, given what all its tries did: a
     * {@link StripeOutcome.NotSent} only when no try can have run at Stripe. Throws back a runtime exception that is
     * no answer of Stripe's nor of the fault tolerance around it.
     */
    static StripeOutcome ofFailure(Exception failure, SendLog log) {
        return switch (failure) {
            case CardException e -> {
                StripeError error = e.getStripeError();
                String paymentIntentId = error != null && error.getPaymentIntent() != null ? error.getPaymentIntent().getId() : null;
                yield new StripeOutcome.Declined(paymentIntentId, nonNull(e.getCode(), "card_declined"), e.getDeclineCode(),
                        error != null && error.getMessage() != null ? error.getMessage() : "Your card was declined.");
            }
            case InvalidRequestException e -> {
                int status = e.getStatusCode() == null ? 400 : e.getStatusCode();
                yield new StripeOutcome.Rejected(status, nonNull(e.getCode(), "invalid_request"),
                        nonNull(e.getStripeError() != null ? e.getStripeError().getMessage() : null, "Stripe rejected the payment."),
                        e.getStripeError() != null ? e.getStripeError().getParam() : null);
            }
            case IdempotencyException e -> new StripeOutcome.KeyConflict("idempotency_error: " + e.getMessage());
            // Stripe's 429 is never executed: sent again with the same key once the budget allows.
            case RateLimitException e -> log.maybeExecuted()
                    ? new StripeOutcome.Unknown("stripe rate limited the request, after a try whose outcome is unknown", false)
                    : new StripeOutcome.NotSent("stripe rate limited the request", true);
            case AuthenticationException e -> {
                LOG.error("Stripe refused our API key; check chargeonce.stripe.api-key", e);
                yield notSentUnlessEarlierTries(log, "stripe authentication failed");
            }
            case CircuitBreakerOpenException e -> notSentUnlessEarlierTries(log, "circuit open");
            case BulkheadException e -> notSentUnlessEarlierTries(log, "too many concurrent Stripe calls");
            case StripeApi.LeaseSpentException e -> notSentUnlessEarlierTries(log, e.getMessage());
            case StripeApi.StoredServerErrorException e -> new StripeOutcome.KeyFinishedWithError(e.getMessage());
            case StripeApi.ServerErrorException e -> new StripeOutcome.Unknown(e.getMessage(), true);
            case StripeApi.KeyInUseException e -> new StripeOutcome.Unknown(e.getMessage(), false);
            case StripeApi.UnreachableException e -> unknownUnlessNoTryRan(log, e.getMessage());
            case StripeApi.EdgeErrorException e -> unknownUnlessNoTryRan(log, e.getMessage());
            case TimeoutException e -> new StripeOutcome.Unknown("timeout: " + e.getMessage(), false);
            case StripeException e -> new StripeOutcome.Unknown(e.getClass().getSimpleName() + ": " + e.getMessage(), false);
            case RuntimeException e -> throw e;
            default -> throw new IllegalStateException("a Stripe call threw " + failure, failure);
        };
    }

    /** A refusal of the last try proves nothing about earlier tries of the same call that may have charged. */
    private static StripeOutcome notSentUnlessEarlierTries(SendLog log, String reason) {
        return log.maybeExecuted()
                ? new StripeOutcome.Unknown(reason + ", after a try whose outcome is unknown", false)
                : new StripeOutcome.NotSent(reason);
    }

    /** A lost answer or an edge's 5xx: unknown if any try of the call may have run, else nothing was sent. */
    private static StripeOutcome unknownUnlessNoTryRan(SendLog log, String reason) {
        return log.maybeExecuted() ? new StripeOutcome.Unknown(reason, false) : new StripeOutcome.NotSent(reason);
    }

    static String nonNull(String value, String fallback) {
        return value == null ? fallback : value;
    }
}

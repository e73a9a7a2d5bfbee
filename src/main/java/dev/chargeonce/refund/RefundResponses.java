package dev.chargeonce.refund;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.idempotency.Finishes.Final;
import dev.chargeonce.idempotency.IntentStatus;
import dev.chargeonce.idempotency.StoredAnswer;
import dev.chargeonce.operation.RowRef;
import dev.chargeonce.stripe.StripeOutcome;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * What a refund's state at Stripe means for its key, in one place for every path that learns it (the request, a
 * retry, recovery, a webhook, the sync worker), and the bodies of those answers: rendered once, stored, replayed
 * byte for byte.
 */
final class RefundResponses {

    private static final ObjectMapper JSON = new ObjectMapper();

    private RefundResponses() {
    }

    /**
     * {@code 201} for a refund Stripe made, whatever its state ({@code succeeded}, or {@code pending} and
     * {@code requires_action}, whose outcome GET shows later); {@code 402} for one Stripe made and that failed or
     * was canceled; {@code 400} for one Stripe refused to make. Empty when it is no answer yet.
     */
    static Optional<Final> finalAnswer(RowRef refund, RefundTerms terms, StripeOutcome outcome, Duration firstLook) {
        return Optional.ofNullable(switch (outcome) {
            case StripeOutcome.Succeeded s -> new Final(IntentStatus.COMPLETED,
                    made(refund, terms, "succeeded", s.paymentIntentId()), s.paymentIntentId(), "succeeded", null);
            case StripeOutcome.Processing p -> new Final(IntentStatus.ACCEPTED,
                    made(refund, terms, "pending", p.paymentIntentId()), p.paymentIntentId(), "pending", firstLook);
            case StripeOutcome.RequiresAction a -> new Final(IntentStatus.ACCEPTED,
                    made(refund, terms, "requires_action", a.paymentIntentId()), a.paymentIntentId(), "requires_action", firstLook);
            case StripeOutcome.Declined d -> new Final(IntentStatus.FAILED, refundError(refund, "refund_failed", d.declineCode(),
                    d.message(), d.paymentIntentId()), d.paymentIntentId(), d.paymentIntentId() == null ? null : "failed", null);
            case StripeOutcome.Canceled c -> new Final(IntentStatus.FAILED, refundError(refund, "refund_canceled", null,
                    "The refund was canceled at Stripe before it completed; nothing was refunded.", c.paymentIntentId()),
                    c.paymentIntentId(), "canceled", null);
            case StripeOutcome.Rejected r -> new Final(IntentStatus.FAILED, rejected(refund, r), null, null, null);
            default -> null;
        });
    }

    /** Where an answered refund goes for what Stripe says now; empty when it says nothing new. */
    static Optional<String> state(StripeOutcome outcome) {
        return Optional.ofNullable(switch (outcome) {
            case StripeOutcome.Succeeded s -> "succeeded";
            case StripeOutcome.Processing p -> "pending";
            case StripeOutcome.RequiresAction a -> "requires_action";
            case StripeOutcome.Declined d -> "failed";
            case StripeOutcome.Canceled c -> "canceled";
            default -> null;
        });
    }

    private static StoredAnswer made(RowRef refund, RefundTerms terms, String status, String stripeRefundId) {
        return new StoredAnswer(201, write(terms.view(refund.id(), status, stripeRefundId, refund.createdAt().getEpochSecond())));
    }

    private static StoredAnswer refundError(RowRef refund, String code, String failureReason, String message,
                                            String stripeRefundId) {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("type", "refund_error");
        error.put("code", code);
        error.put("failure_reason", failureReason);
        error.put("message", message);
        error.put("refund", refund.id());
        error.put("stripe_refund", stripeRefundId);
        return new StoredAnswer(402, write(Map.of("error", error)));
    }

    private static StoredAnswer rejected(RowRef refund, StripeOutcome.Rejected rejected) {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("type", "invalid_request_error");
        error.put("code", rejected.code());
        error.put("message", rejected.message());
        error.put("param", rejected.param());
        return new StoredAnswer(rejected.httpStatus() == 404 ? 400 : rejected.httpStatus(), write(Map.of("error", error)));
    }

    static String write(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}

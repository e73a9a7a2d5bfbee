package dev.chargeonce.operation;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.web.ErrorBody;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The answers that are not final and never stored (503, 409 + {@code Retry-After}), the same for every operation
 * but for the promise they make: a charge is never charged twice, a refund never paid out twice.
 */
public final class RetryLaterAnswers {

    private static final ObjectMapper JSON = new ObjectMapper();

    private RetryLaterAnswers() {
    }

    private static String promise(Operation op) {
        return op == Operation.REFUND ? "the refund will not be made twice" : "you will not be charged twice";
    }

    public static KeyAnswer stripeOutcomeUnknown(Operation op, Duration retryAfter) {
        return KeyAnswer.retryLater(503, write(ErrorBody.of("api_error", "stripe_outcome_unknown",
                "Stripe did not confirm the outcome yet. Retry with the same Idempotency-Key: " + promise(op) + ".",
                null)), retryAfter);
    }

    /**
     * Stripe was not called this time. "Nothing was charged" only when no request of this key can ever have reached
     * Stripe: otherwise an earlier try may still complete there, and the retry finds out.
     */
    public static KeyAnswer stripeUnavailable(Operation op, boolean nothingEverSent, Duration retryAfter) {
        String nothing = op == Operation.REFUND ? "nothing was refunded" : "nothing was charged";
        return KeyAnswer.retryLater(503, write(ErrorBody.of("api_error", "stripe_unavailable", nothingEverSent
                ? "Stripe is not taking requests right now and " + nothing + ". Retry with the same Idempotency-Key."
                : "Stripe is not taking requests right now. An earlier try of this request may still complete at Stripe: "
                        + "retry with the same Idempotency-Key to learn its outcome; " + promise(op) + ".",
                null)), retryAfter);
    }

    /**
     * The Stripe account's request rate is used up for longer than this request may wait (the service's shared rate
     * budget, or Stripe's own 429 while the budget caught up): {@code retryAfter} is when a permit will be free.
     */
    public static KeyAnswer stripeRateLimited(Operation op, boolean nothingEverSent, Duration retryAfter) {
        String nothing = op == Operation.REFUND ? "nothing was refunded" : "nothing was charged";
        return KeyAnswer.retryLater(503, write(ErrorBody.of("api_error", "stripe_rate_limited", nothingEverSent
                ? "The Stripe account's request rate is used up for now and " + nothing + ". Retry with the same"
                        + " Idempotency-Key after the Retry-After delay."
                : "The Stripe account's request rate is used up for now. An earlier try of this request may still"
                        + " complete at Stripe: retry with the same Idempotency-Key after the Retry-After delay to learn"
                        + " its outcome; " + promise(op) + ".", null)), retryAfter);
    }

    /** Stripe named its object but has not finished it: it is followed by id until it has. */
    public static KeyAnswer stripePending(Operation op, String objectId, Duration retryAfter) {
        return KeyAnswer.retryLater(503, write(ErrorBody.of("api_error",
                op == Operation.REFUND ? "refund_processing" : "payment_processing",
                "Stripe is still processing this " + (op == Operation.REFUND ? "refund" : "payment") + " (" + objectId
                        + "); its outcome is not final yet. Retry with the same Idempotency-Key: " + promise(op) + ".", null)),
                retryAfter);
    }

    public static KeyAnswer databaseUnavailable(Operation op, Duration retryAfter) {
        return KeyAnswer.retryLater(503, write(ErrorBody.of("api_error", "database_unavailable",
                "The outcome could not be recorded yet. Retry with the same Idempotency-Key: " + promise(op) + ".",
                null)), retryAfter);
    }

    /** @param row the key's row, which a request may wait for ({@link KeyAnswer#inFlightRow}); null if unknown */
    public static KeyAnswer inFlight(Duration retryAfter, KeyAnswer.InFlightRow row) {
        return KeyAnswer.retryLater(409, write(ErrorBody.of("idempotency_error", "idempotency_key_in_use",
                "Another request with this Idempotency-Key is being processed. Retry after the Retry-After delay.",
                "Idempotency-Key")), retryAfter).inFlightOn(row);
    }

    /**
     * A refund of a charge that is not final yet (its request in flight, the bank or 3-D Secure still to answer): it
     * may still succeed, and the same refund request then be made. Nothing is claimed or reserved.
     */
    public static KeyAnswer chargeNotFinal(String chargeState, Duration retryAfter) {
        return KeyAnswer.retryLater(409, write(ErrorBody.of("invalid_request_error", "charge_not_final",
                "The charge is " + chargeState + ", not final yet: only a charge that succeeded can be refunded. Retry after"
                        + " the Retry-After delay.", null)), retryAfter);
    }

    /**
     * The key's row waits for an operator. The answer names it ({@code charge} or {@code refund}: the same field a
     * stored answer about the row uses), so that the client can quote it to support and the operator find it.
     */
    public static KeyAnswer underReconciliation(Operation op, String rowId) {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("type", "api_error");
        error.put("code", op == Operation.REFUND ? "refund_under_reconciliation" : "charge_under_reconciliation");
        error.put("message", op == Operation.REFUND
                ? "The outcome of this refund is being reconciled with Stripe; it will not be made again."
                : "The outcome of this charge is being reconciled with Stripe; it will not be charged again.");
        error.put("param", null);
        if (rowId != null) {
            error.put(op.column(), rowId);
        }
        return KeyAnswer.retryLater(503, write(Map.of("error", error)), Duration.ofMinutes(10));
    }

    static String write(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}

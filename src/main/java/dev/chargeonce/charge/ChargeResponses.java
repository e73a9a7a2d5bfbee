package dev.chargeonce.charge;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.idempotency.StoredAnswer;
import dev.chargeonce.operation.RowRef;
import dev.chargeonce.stripe.StripeOutcome;
import dev.chargeonce.web.ErrorBody;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The bodies of final answers. They are rendered once, stored in the row and replayed byte for byte, so their
 * field order is fixed here and never depends on a serializer's mood.
 */
final class ChargeResponses {

    private static final ObjectMapper JSON = new ObjectMapper();

    private ChargeResponses() {
    }

    static StoredAnswer succeeded(RowRef charge, ChargeRequest request, String paymentIntentId) {
        return new StoredAnswer(201, write(request.view(charge.id(), "succeeded", paymentIntentId,
                charge.createdAt().getEpochSecond())));
    }

    /**
     * {@code 202}: Stripe took the payment and finishes it later. For 3-D Secure the body carries what the
     * merchant's front end needs to let the customer authenticate (Stripe.js: {@code client_secret},
     * {@code next_action}); the charge's outcome then shows in {@code GET /v1/charges/{id}}.
     */
    static StoredAnswer accepted(RowRef charge, ChargeRequest request, String paymentIntentId, String status,
                                 String clientSecret, String nextActionJson) {
        Map<String, Object> view = request.view(charge.id(), status, paymentIntentId, charge.createdAt().getEpochSecond());
        if (clientSecret != null) {
            view.put("client_secret", clientSecret);
        }
        if (nextActionJson != null) {
            try {
                view.put("next_action", JSON.readTree(nextActionJson));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException("Stripe's next_action is not JSON", e);
            }
        }
        return new StoredAnswer(202, write(view));
    }

    static StoredAnswer declined(RowRef charge, StripeOutcome.Declined declined) {
        return cardError(charge, declined.code(), declined.declineCode(), declined.message(), declined.paymentIntentId());
    }

    static StoredAnswer canceled(RowRef charge, String paymentIntentId) {
        return cardError(charge, "payment_intent_canceled", null,
                "The payment was canceled at Stripe before it completed; nothing was charged.", paymentIntentId);
    }

    static StoredAnswer rejected(RowRef charge, StripeOutcome.Rejected rejected) {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("type", "invalid_request_error");
        error.put("code", rejected.code());
        error.put("message", rejected.message());
        error.put("param", rejected.param());
        error.put("charge", charge.id());
        return new StoredAnswer(rejected.httpStatus() == 404 ? 400 : rejected.httpStatus(), write(Map.of("error", error)));
    }

    private static StoredAnswer cardError(RowRef charge, String code, String declineCode, String message,
                                          String paymentIntentId) {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("type", "card_error");
        error.put("code", code);
        error.put("decline_code", declineCode);
        error.put("message", message);
        error.put("param", "payment_method");
        error.put("charge", charge.id());
        error.put("payment_intent", paymentIntentId);
        return new StoredAnswer(402, write(Map.of("error", error)));
    }

    static String write(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}

package dev.chargeonce.refund;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A refund as its row stores it ({@code request}): the charge and its PaymentIntent, the amount resolved when the
 * key was claimed, the reason and metadata. Everything sent to Stripe for the refund comes from here and from
 * (client, key), so the recovery worker re-drives a refund without its client.
 */
public record RefundTerms(String charge, String paymentIntent, long amount, String currency, String reason,
                          SortedMap<String, String> metadata) {

    private static final ObjectMapper CANONICAL = new ObjectMapper()
            .configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);

    String toJson() {
        Map<String, Object> fields = new TreeMap<>();
        fields.put("charge", charge);
        fields.put("payment_intent", paymentIntent);
        fields.put("amount", amount);
        fields.put("currency", currency);
        if (reason != null) {
            fields.put("reason", reason);
        }
        fields.put("metadata", metadata);
        return write(fields);
    }

    static RefundTerms fromJson(String json) {
        try {
            Map<String, Object> fields = CANONICAL.readValue(json, new TypeReference<>() {
            });
            @SuppressWarnings("unchecked")
            Map<String, String> metadata = (Map<String, String>) fields.getOrDefault("metadata", Map.of());
            return new RefundTerms((String) fields.get("charge"), (String) fields.get("payment_intent"),
                    ((Number) fields.get("amount")).longValue(), (String) fields.get("currency"), (String) fields.get("reason"),
                    new TreeMap<>(metadata));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a refund row's request is not its JSON", e);
        }
    }

    /** The refund as every answer shows it, in a fixed field order. */
    Map<String, Object> view(String refundId, String status, String stripeRefundId, long createdEpochSeconds) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("id", refundId);
        view.put("object", "refund");
        view.put("status", status);
        view.put("amount", amount);
        view.put("currency", currency);
        view.put("charge", charge);
        view.put("payment_intent", paymentIntent);
        view.put("reason", reason);
        view.put("metadata", metadata);
        view.put("stripe_refund", stripeRefundId);
        view.put("created", createdEpochSeconds);
        return view;
    }

    static String write(Object value) {
        try {
            return CANONICAL.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}

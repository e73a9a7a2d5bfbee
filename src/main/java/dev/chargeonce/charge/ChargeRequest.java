package dev.chargeonce.charge;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A validated {@code POST /v1/charges} body. Its canonical JSON (keys sorted, absent fields omitted) is what the
 * fingerprint covers and what the row stores, so that recovery can re-drive a charge without its client.
 */
public record ChargeRequest(long amount, String currency, String paymentMethod, String customer, String description,
                            SortedMap<String, String> metadata) {

    private static final ObjectMapper CANONICAL = new ObjectMapper()
            .configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);

    public String canonicalJson() {
        Map<String, Object> fields = new TreeMap<>();
        fields.put("amount", amount);
        fields.put("currency", currency);
        fields.put("payment_method", paymentMethod);
        if (customer != null) {
            fields.put("customer", customer);
        }
        if (description != null) {
            fields.put("description", description);
        }
        if (!metadata.isEmpty()) {
            fields.put("metadata", metadata);
        }
        try {
            return CANONICAL.writeValueAsString(fields);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Reads back what {@link #canonicalJson()} wrote (the row's {@code request} column). */
    public static ChargeRequest fromCanonicalJson(String json) {
        return ChargeRequestParser.parse(json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** The charge as every answer shows it, in a fixed field order (nothing refunded yet: the POST's answers). */
    Map<String, Object> view(String chargeId, String status, String paymentIntentId, long createdEpochSeconds) {
        return view(chargeId, status, paymentIntentId, createdEpochSeconds, 0);
    }

    /** {@code refunded}: refunded in full, as Stripe's charge says it. */
    Map<String, Object> view(String chargeId, String status, String paymentIntentId, long createdEpochSeconds,
                             long amountRefunded) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("id", chargeId);
        view.put("object", "charge");
        view.put("status", status);
        view.put("amount", amount);
        view.put("currency", currency);
        view.put("payment_method", paymentMethod);
        view.put("customer", customer);
        view.put("description", description);
        view.put("metadata", metadata);
        view.put("payment_intent", paymentIntentId);
        view.put("amount_refunded", amountRefunded);
        view.put("refunded", amountRefunded >= amount);
        view.put("created", createdEpochSeconds);
        return view;
    }
}

package dev.chargeonce.refund;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chargeonce.charge.ChargeRequestParser;
import dev.chargeonce.web.ApiException;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A validated {@code POST /v1/charges/{id}/refunds} body, as the client sent it: its canonical JSON is what the
 * key's fingerprint covers (with the charge's path), so a retry without {@code amount} is the same request even
 * after the amount it stands for was resolved.
 *
 * @param amount null: what is left to refund
 */
record RefundRequest(Long amount, String reason, SortedMap<String, String> metadata) {

    /** Stripe's refund reasons. */
    static final Set<String> REASONS = Set.of("duplicate", "fraudulent", "requested_by_customer");
    private static final Set<String> FIELDS = Set.of("amount", "reason", "metadata");

    static RefundRequest parse(byte[] body) {
        // No body (none, or the JSON null a generated client sends for an omitted one) is a full refund with nothing
        // else said, the same request as {} for the key's fingerprint.
        JsonNode root = ChargeRequestParser.readOptionalObject(body, FIELDS);
        if (root == null) {
            return new RefundRequest(null, null, new TreeMap<>());
        }
        JsonNode amount = root.get("amount");
        JsonNode reason = root.get("reason");
        if (reason != null && !reason.isNull() && (!reason.isTextual() || !REASONS.contains(reason.textValue()))) {
            throw ApiException.invalidRequest("parameter_invalid",
                    "reason must be one of duplicate, fraudulent, requested_by_customer.", "reason");
        }
        return new RefundRequest(amount == null || amount.isNull() ? null : ChargeRequestParser.amount(amount),
                reason == null || reason.isNull() ? null : reason.textValue(), ChargeRequestParser.metadata(root.get("metadata")));
    }

    String canonicalJson() {
        Map<String, Object> fields = new TreeMap<>();
        if (amount != null) {
            fields.put("amount", amount);
        }
        if (reason != null) {
            fields.put("reason", reason);
        }
        if (!metadata.isEmpty()) {
            fields.put("metadata", metadata);
        }
        return RefundTerms.write(fields);
    }
}

package dev.chargeonce.charge;

import dev.chargeonce.idempotency.ChargeRecord;
import dev.chargeonce.idempotency.IdempotencyStore;
import dev.chargeonce.web.ApiException;
import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** {@code GET /v1/charges/{id}} and {@code GET /v1/charges}: a client sees its own charges only. */
@ApplicationScoped
public class ChargeQueries {

    static final int DEFAULT_LIMIT = 10;
    static final int MAX_LIMIT = 100;

    private final IdempotencyStore store;

    ChargeQueries(IdempotencyStore store) {
        this.store = store;
    }

    Map<String, Object> find(String clientId, String chargeId) {
        return store.findCharge(readSource(), clientId, chargeId)
                .map(ChargeQueries::view)
                .orElseThrow(() -> new ApiException(404, "invalid_request_error", "resource_missing",
                        "No such charge: " + chargeId, "id", null));
    }

    Map<String, Object> list(String clientId, int limit) {
        List<Map<String, Object>> data = store.listCharges(readSource(), clientId, limit).stream().map(ChargeQueries::view).toList();
        Map<String, Object> page = new LinkedHashMap<>();
        page.put("object", "list");
        page.put("data", data);
        page.put("has_more", data.size() == limit);
        return page;
    }

    static int parseLimit(String limit) {
        if (limit == null) {
            return DEFAULT_LIMIT;
        }
        try {
            int value = Integer.parseInt(limit);
            if (value >= 1 && value <= MAX_LIMIT) {
                return value;
            }
        } catch (NumberFormatException e) {
            // answered below
        }
        throw ApiException.invalidRequest("parameter_invalid", "limit must be an integer between 1 and " + MAX_LIMIT + ".", "limit");
    }

    private AgroalDataSource readSource() {
        return store.primary();
    }

    private static Map<String, Object> view(ChargeRecord record) {
        String status = switch (record.status()) {
            case PROCESSING -> "processing";
            case COMPLETED -> "succeeded";
            case FAILED -> "failed";
        };
        return ChargeRequest.fromCanonicalJson(record.requestJson())
                .view(record.id(), status, record.paymentIntentId(), record.createdAt().getEpochSecond());
    }
}

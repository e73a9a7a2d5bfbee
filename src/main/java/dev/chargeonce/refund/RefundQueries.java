package dev.chargeonce.refund;

import dev.chargeonce.idempotency.Reads;
import dev.chargeonce.charge.ChargeQueries;
import dev.chargeonce.idempotency.RefundRecord;
import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code GET /v1/refunds/{id}} and {@code GET /v1/charges/{id}/refunds}: a client sees its own refunds only. Read
 * from the primary: a refund moves (pending, then succeeded or failed) and a client reads its own writes.
 */
@ApplicationScoped
public class RefundQueries {

    private final Reads reads;

    RefundQueries(Reads reads) {
        this.reads = reads;
    }

    Map<String, Object> find(String clientId, String refundId) {
        ApiException none = new ApiException(404, "invalid_request_error", "resource_missing",
                "No such refund: " + dev.chargeonce.idempotency.RowIds.echo(refundId), "id", null);
        if (!dev.chargeonce.idempotency.RowIds.wellFormed(RefundService.PREFIX, refundId)) {
            throw none;
        }
        return reads.findRefund(reads.primary(), clientId, refundId).map(RefundQueries::view).orElseThrow(() -> none);
    }

    /** A charge's refunds, newest first; another client's or an unknown charge is not found, identically. */
    Map<String, Object> listOfCharge(String clientId, String chargeId, int limit) {
        if (!dev.chargeonce.idempotency.RowIds.wellFormed(ChargeQueries.PREFIX, chargeId)
                || reads.findCharge(reads.primary(), clientId, chargeId).isEmpty()) {
            throw noSuchCharge(chargeId);
        }
        List<RefundRecord> newest = reads.listRefunds(reads.primary(), clientId, chargeId, limit + 1);
        Map<String, Object> page = new LinkedHashMap<>();
        page.put("object", "list");
        page.put("data", newest.stream().limit(limit).map(RefundQueries::view).toList());
        page.put("has_more", newest.size() > limit);
        return page;
    }

    /** The answer for a charge this client cannot see: the same whether it is another client's or none at all. */
    static ApiException noSuchCharge(String chargeId) {
        return ChargeQueries.noSuchCharge(chargeId);
    }

    private static Map<String, Object> view(RefundRecord record) {
        // The refund's state at Stripe once known; a key still being driven shows as pending (it may yet be made).
        String status = record.refundStatus() != null ? record.refundStatus() : switch (record.status()) {
            case PROCESSING, ACCEPTED, COMPLETED -> "pending";
            case FAILED -> "failed";
        };
        return RefundTerms.fromJson(record.requestJson())
                .view(record.id(), status, record.stripeRefundId(), record.createdAt().getEpochSecond());
    }
}

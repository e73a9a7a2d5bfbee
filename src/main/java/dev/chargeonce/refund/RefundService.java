package dev.chargeonce.refund;

import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.idempotency.IdempotencyStore;
import dev.chargeonce.idempotency.RowIds;
import dev.chargeonce.idempotency.NewRefund;
import dev.chargeonce.idempotency.RefundClaim;
import dev.chargeonce.operation.Admission;
import dev.chargeonce.operation.KeyAnswer;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * {@code POST /v1/charges/{id}/refunds}: claim the refund's key on the primary together with its amount, then drive
 * it with the same driver as a charge, or answer what the key holds.
 */
@ApplicationScoped
public class RefundService {

    static final String METHOD = "POST";


    private final IdempotencyStore store;
    private final OperationDriver driver;
    private final RefundStripeSide side;
    private final StripeConfig stripeConfig;
    private final Admission admission;

    RefundService(IdempotencyStore store, OperationDriver driver, RefundStripeSide side, StripeConfig stripeConfig,
                  Admission admission) {
        this.store = store;
        this.driver = driver;
        this.side = side;
        this.stripeConfig = stripeConfig;
        this.admission = admission;
    }

    KeyAnswer refund(String clientId, String chargeId, IdempotencyKey key, RefundRequest request) {
        // The key covers the request as sent, on this charge: a retry without an amount is the same request.
        Fingerprint fingerprint = Fingerprint.of(METHOD, path(chargeId), request.canonicalJson());
        NewRefund refund = new NewRefund(newRefundId(), chargeId, clientId, key, fingerprint, request.amount(),
                StripeKeys.refundIdentity(clientId, key.value()),
                charge -> new RefundTerms(charge.chargeId(), charge.paymentIntentId(), charge.refundAmount(),
                        charge.currency(), request.reason(), request.metadata()).toJson());
        try (Admission.Ticket ticket = admission.enter()) {
            return switch (store.claimRefund(refund, stripeConfig.keyHorizon())) {
                case RefundClaim.Claimed claimed -> driver.answer(claimed.claim(), side, null);
                case RefundClaim.ChargeMissing missing -> throw RefundQueries.noSuchCharge(chargeId);
                case RefundClaim.ChargeNotRefundable not -> throw ApiException.invalidRequest("charge_not_refundable",
                        "Only a charge that succeeded can be refunded; this one is " + not.chargeState() + ".", null);
                case RefundClaim.AmountTooLarge tooLarge -> throw ApiException.invalidRequest("amount_too_large",
                        tooLarge.refundable() == 0
                                ? "The charge has nothing left to refund (pending and succeeded refunds count)."
                                : "Refund amount (" + tooLarge.requested() + ") is greater than what is left to refund on the charge ("
                                        + tooLarge.refundable() + "; pending and succeeded refunds count).", "amount");
            };
        }
    }

    static String path(String chargeId) {
        return "/v1/charges/" + chargeId + "/refunds";
    }

    static String newRefundId() {
        return RowIds.next("rfd_");
    }
}

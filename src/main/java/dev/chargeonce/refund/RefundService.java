package dev.chargeonce.refund;

import dev.chargeonce.idempotency.AnswerLimit;
import dev.chargeonce.idempotency.Claim;
import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.idempotency.Claims;
import dev.chargeonce.idempotency.RefundReservations;
import dev.chargeonce.idempotency.RowIds;
import dev.chargeonce.idempotency.NewRefund;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.idempotency.RefundClaim;
import dev.chargeonce.operation.Admission;
import dev.chargeonce.operation.KeyAnswer;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.operation.OperationMetrics;
import dev.chargeonce.operation.RetryLaterAnswers;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.Optional;

/**
 * {@code POST /v1/charges/{id}/refunds}: claim the refund's key on the primary together with its amount, then drive
 * it with the same driver as a charge, or answer what the key holds.
 */
@ApplicationScoped
public class RefundService {

    static final String METHOD = "POST";

    private final Claims claims;
    private final RefundReservations reservations;
    private final OperationDriver driver;
    private final RefundStripeSide side;
    private final StripeConfig stripeConfig;
    private final Admission admission;
    private final StripeGateway stripe;
    private final OperationMetrics metrics;
    private final AnswerLimit answerLimit;

    RefundService(Claims claims, RefundReservations reservations, OperationDriver driver, RefundStripeSide side,
                  StripeConfig stripeConfig, Admission admission, StripeGateway stripe, OperationMetrics metrics, AnswerLimit answerLimit) {
        this.answerLimit = answerLimit;
        this.claims = claims;
        this.reservations = reservations;
        this.driver = driver;
        this.side = side;
        this.stripeConfig = stripeConfig;
        this.admission = admission;
        this.stripe = stripe;
        this.metrics = metrics;
    }

    KeyAnswer refund(String clientId, String chargeId, IdempotencyKey key, RefundRequest request) {
        if (!RowIds.wellFormed(dev.chargeonce.charge.ChargeQueries.PREFIX, chargeId)) {
            throw RefundQueries.noSuchCharge(chargeId); // nothing claimed for an id this service never made
        }
        // The key covers the request as sent, on this charge: a retry without an amount is the same request.
        Fingerprint fingerprint = Fingerprint.of(METHOD, path(chargeId), request.canonicalJson());
        NewRefund refund = new NewRefund(newRefundId(), chargeId, clientId, key, fingerprint, request.amount(),
                charge -> new RefundTerms(charge.chargeId(), charge.paymentIntentId(), charge.refundAmount(),
                        charge.currency(), request.reason(), request.metadata()).toJson());
        try (Admission.Ticket ticket = admission.enter()) {
            boolean fits = answerLimit.admits(request.canonicalJson());
            if (!fits || !stripe.acceptingCalls(Operation.REFUND)) {
                // Circuit open, or an answer that could exceed the stored answers' bound: answer what the key
                // already holds, but reserve nothing for a call we will not make.
                Optional<Claim> existing = claims.peek(Operation.REFUND, clientId, key, fingerprint, stripeConfig.keyHorizon());
                if (existing.isEmpty()) {
                    if (!fits) {
                        throw answerLimit.tooLarge();
                    }
                    metrics.circuitOpenRejection(Operation.REFUND);
                    return RetryLaterAnswers.stripeUnavailable(Operation.REFUND, true, Duration.ofSeconds(2));
                }
                return driver.answer(existing.get(), side, null);
            }
            return switch (reservations.claimRefund(refund, stripeConfig.keyHorizon())) {
                case RefundClaim.Claimed claimed -> driver.answer(claimed.claim(), side, null);
                case RefundClaim.ChargeMissing missing -> throw RefundQueries.noSuchCharge(chargeId);
                case RefundClaim.ChargeNotRefundable not when !FINAL_CHARGE_STATES.contains(not.chargeState()) ->
                        // It may still succeed: a final 400 now, and a 201 to the same request later, would be two answers.
                        RetryLaterAnswers.chargeNotFinal(not.chargeState(), CHARGE_NOT_FINAL_RETRY);
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

    /** The charge states no charge leaves: a refund refused in one of them is refused for good. */
    private static final java.util.Set<String> FINAL_CHARGE_STATES = java.util.Set.of("succeeded", "failed", "canceled");
    private static final Duration CHARGE_NOT_FINAL_RETRY = Duration.ofSeconds(2);

    static String path(String chargeId) {
        return "/v1/charges/" + chargeId + "/refunds";
    }

    static final String PREFIX = "rfd_";

    static String newRefundId() {
        return RowIds.next(PREFIX);
    }
}

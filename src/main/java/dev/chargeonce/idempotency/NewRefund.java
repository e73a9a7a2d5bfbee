package dev.chargeonce.idempotency;

import java.util.function.Function;

/**
 * What a refund's claim inserts when its key is new.
 *
 * @param requestedAmount the amount asked for; null: what is left to refund on the charge
 * @param terms           the row's stored request, written once the charge is locked and the amount resolved (it
 *                        names the PaymentIntent and the amount, so that recovery can re-drive the refund alone)
 */
public record NewRefund(String id, String chargeId, String clientId, IdempotencyKey key, Fingerprint fingerprint,
                        Long requestedAmount, Function<RefundableCharge, String> terms) {
}

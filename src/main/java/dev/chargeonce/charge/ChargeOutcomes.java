package dev.chargeonce.charge;

import dev.chargeonce.idempotency.ChargeStatus;
import dev.chargeonce.idempotency.Finishes.Final;
import dev.chargeonce.idempotency.IntentStatus;
import dev.chargeonce.operation.RowRef;
import dev.chargeonce.stripe.StripeOutcome;
import java.time.Duration;
import java.util.Optional;

/**
 * What a PaymentIntent's state means for a charge, in one place for every path that learns it: the request's
 * driver, a retry, the recovery worker, a webhook and the sync worker all write the same answer for the same state.
 */
final class ChargeOutcomes {

    private ChargeOutcomes() {
    }

    /**
     * The key's final answer for what Stripe said; empty when it is no answer yet ({@code Pending}, unknown, not
     * sent...). {@code firstLook}: when the sync worker first looks at an accepted charge.
     */
    static Optional<Final> finalAnswer(RowRef charge, ChargeRequest request, StripeOutcome outcome, Duration firstLook) {
        return Optional.ofNullable(switch (outcome) {
            case StripeOutcome.Succeeded s -> new Final(IntentStatus.COMPLETED,
                    ChargeResponses.succeeded(charge, request, s.paymentIntentId()), s.paymentIntentId(), ChargeStatus.SUCCEEDED.column(), null);
            case StripeOutcome.Declined d -> new Final(IntentStatus.FAILED, ChargeResponses.declined(charge, d),
                    d.paymentIntentId(), d.paymentIntentId() == null ? null : ChargeStatus.FAILED.column(), null);
            case StripeOutcome.Canceled c -> new Final(IntentStatus.FAILED, ChargeResponses.canceled(charge, c.paymentIntentId()),
                    c.paymentIntentId(), ChargeStatus.CANCELED.column(), null);
            case StripeOutcome.RequiresAction a -> new Final(IntentStatus.ACCEPTED,
                    ChargeResponses.accepted(charge, request, a.paymentIntentId(), "requires_action", a.clientSecret(),
                            a.nextActionJson()), a.paymentIntentId(), ChargeStatus.REQUIRES_ACTION.column(), firstLook);
            case StripeOutcome.Processing p -> new Final(IntentStatus.ACCEPTED,
                    ChargeResponses.accepted(charge, request, p.paymentIntentId(), "processing", null, null),
                    p.paymentIntentId(), ChargeStatus.PROCESSING.column(), firstLook);
            case StripeOutcome.Rejected r -> new Final(IntentStatus.FAILED, ChargeResponses.rejected(charge, r), null, null, null);
            default -> null;
        });
    }

    /** Where an answered charge goes for what Stripe says now; empty when the state says nothing new. */
    static Optional<ChargeStatus> chargeStatus(StripeOutcome outcome) {
        return Optional.ofNullable(switch (outcome) {
            case StripeOutcome.Succeeded s -> ChargeStatus.SUCCEEDED;
            case StripeOutcome.Declined d -> ChargeStatus.FAILED;
            case StripeOutcome.Canceled c -> ChargeStatus.CANCELED;
            case StripeOutcome.RequiresAction a -> ChargeStatus.REQUIRES_ACTION;
            case StripeOutcome.Processing p -> ChargeStatus.PROCESSING;
            default -> null;
        });
    }
}

package dev.chargeonce.refund;

import com.stripe.model.Charge;
import com.stripe.model.Refund;
import com.stripe.model.RefundCollection;
import com.stripe.model.StripeObject;
import dev.chargeonce.idempotency.ClaimedIntent;
import dev.chargeonce.idempotency.Finishes.Final;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.operation.RowRef;
import dev.chargeonce.operation.StripeSide;
import dev.chargeonce.stripe.PaymentOrder;
import dev.chargeonce.stripe.RefundOrder;
import dev.chargeonce.stripe.StripeCall;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.stripe.StripeOutcome;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * A refund at Stripe: created on the charge's PaymentIntent with a key and metadata derived from (client, refund
 * key), found again among the PaymentIntent's refunds by that identity, followed by id while pending.
 */
@ApplicationScoped
public class RefundStripeSide implements StripeSide<RefundTerms> {

    /**
     * Events whose object is a refund; {@code charge.refunded} carries the charge, which lists its refunds only when
     * expanded (since API version 2022-11-15, and an event's object never is): {@link #completed} lists them.
     */
    private static final List<String> REFUND_EVENTS = List.of("refund.created", "refund.updated", "refund.failed",
            "charge.refund.updated");
    private static final List<String> EVENTS = java.util.stream.Stream.concat(REFUND_EVENTS.stream(),
            java.util.stream.Stream.of("charge.refunded")).toList();

    /** Pages of 100 refunds read for one charge: far more than a charge is ever refunded in. */
    private static final int CHARGE_REFUND_PAGES = 20;

    private final StripeGateway stripe;

    RefundStripeSide(StripeGateway stripe) {
        this.stripe = stripe;
    }

    @Override
    public Operation operation() {
        return Operation.REFUND;
    }

    @Override
    public RefundTerms parse(String requestJson) {
        return RefundTerms.fromJson(requestJson);
    }

    @Override
    public StripeCall send(ClaimedIntent intent, RefundTerms terms, long sendBefore) {
        return stripe.createRefund(new RefundOrder(identity(intent), intent.clientId(), intent.stripeAttempt(),
                StripeKeys.ofIdentity(true, identity(intent), intent.stripeAttempt()), terms.paymentIntent(),
                terms.amount(), terms.reason(), terms.metadata(), sendBefore));
    }

    @Override
    public Optional<StripeOutcome> find(ClaimedIntent intent, RefundTerms terms, Instant from, Instant until, int maxPages,
                                        BooleanSupplier stillHolding) {
        return stripe.findRefund(identity(intent), terms.paymentIntent(), from, until, maxPages, stillHolding);
    }

    /**
     * Never gives up on a refund: one that waits for the customer ({@code requires_action}: bank details for a
     * refund to a method that needs them) is the merchant's wish, and Stripe expires it itself.
     */
    @Override
    public ObjectState look(String objectId, boolean giveUp) {
        return state(stripe.retrieveRefund(objectId));
    }

    @Override
    public List<String> eventTypes() {
        return EVENTS;
    }

    /**
     * A {@code charge.refunded} whose charge does not list its refunds (Stripe's shape at every API version since
     * 2022-11-15), or lists only the first of them ({@code has_more}), gets them from Stripe's list of the charge's
     * refunds, read to the end: each is then applied exactly as a {@code refund.*} event's refund, so a refund seen
     * through both, and through reconciliation, still counts once. A charge that lists them all (an older API
     * version, an expanded object) is used as it is: no read.
     */
    @Override
    public StripeObject completed(String eventType, StripeObject stripeObject) {
        if ("charge.refunded".equals(eventType) && stripeObject instanceof Charge charge && charge.getId() != null
                && (charge.getRefunds() == null || charge.getRefunds().getData() == null
                || Boolean.TRUE.equals(charge.getRefunds().getHasMore()))) {
            RefundCollection refunds = new RefundCollection();
            refunds.setObject("list");
            refunds.setData(stripe.refundsOfCharge(charge.getId(), CHARGE_REFUND_PAGES));
            refunds.setHasMore(false);
            charge.setRefunds(refunds);
        }
        return stripeObject;
    }

    @Override
    public List<ObjectState> objectsOf(String eventType, StripeObject stripeObject) {
        if (REFUND_EVENTS.contains(eventType) && stripeObject instanceof Refund refund) {
            return List.of(state(refund));
        }
        if ("charge.refunded".equals(eventType) && stripeObject instanceof Charge charge && charge.getRefunds() != null
                && charge.getRefunds().getData() != null) {
            return charge.getRefunds().getData().stream().map(RefundStripeSide::state).toList();
        }
        return List.of();
    }

    private static ObjectState state(Refund refund) {
        return new ObjectState(refund.getId(), refund.getMetadata() == null ? null : refund.getMetadata().get(PaymentOrder.KEY),
                refund.getMetadata() == null ? null : refund.getMetadata().get(PaymentOrder.CLIENT_ID),
                StripeGateway.classifyRefund(refund), refund.getStatus(), refund.getPaymentIntent(),
                refund.getAmount() == null ? 0 : refund.getAmount(), null);
    }

    @Override
    public Optional<Final> finalAnswer(RowRef row, RefundTerms terms, StripeOutcome outcome, Duration firstLook) {
        return RefundResponses.finalAnswer(row, terms, outcome, firstLook);
    }

    @Override
    public Optional<String> state(StripeOutcome outcome) {
        return RefundResponses.state(outcome);
    }

    /**
     * The identity the row stores (what was sent, what the console shows): never recomputed from the client's key,
     * which the row does not keep (and which a later secret would hash differently). Every row has one (V1.8.2).
     */
    private static String identity(ClaimedIntent intent) {
        return java.util.Objects.requireNonNull(intent.stripeIdentity(), "a row without its identity");
    }
}

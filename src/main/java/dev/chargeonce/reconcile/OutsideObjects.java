package dev.chargeonce.reconcile;

import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.idempotency.OutsideRefundRows;
import dev.chargeonce.idempotency.OutsideRefundRows.OutsideRefund;
import dev.chargeonce.idempotency.OutsideRefundRows.Recorded;
import dev.chargeonce.operation.MadeOutside;
import dev.chargeonce.operation.Settlement;
import dev.chargeonce.operation.StripeSide;
import dev.chargeonce.stripe.StripeGateway.StripeRecord;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * What others did at Stripe (in its Dashboard, through another integration), seen by an event or by reconciliation's
 * lists: objects that carry none of the service's metadata.
 * <ul>
 *   <li>A PaymentIntent that moved money is a finding of its own ({@link FindingKind#MADE_OUTSIDE}), once: nothing
 *       to do here unless it duplicates an order.</li>
 *   <li>A refund of one of the service's charges counts against that charge ({@link OutsideRefundRows}: its
 *       refunded amount, and what a refund through the API may still reserve) and is a finding once
 *       ({@link FindingKind#REFUNDED_OUTSIDE}, by the Stripe refund's id), whichever sees it first and however often.
 *       An event records both in its own transaction; a run records the refund, then the finding with its page.</li>
 * </ul>
 */
@ApplicationScoped
public class OutsideObjects implements MadeOutside {

    private static final Logger LOG = Logger.getLogger(OutsideObjects.class);

    private final OutsideRefundRows refunds;
    private final ReconciliationStore store;

    OutsideObjects(OutsideRefundRows refunds, ReconciliationStore store) {
        this.refunds = refunds;
        this.store = store;
    }

    /** A listed object carries none of the service's metadata (no key, no client, no charge id of an older version). */
    static boolean madeOutside(StripeRecord r) {
        return r.identity() == null && r.legacyChargeId() == null && r.clientId() == null;
    }

    /**
     * An event's object that no row has and that carries none of the service's metadata: a refund of one of the
     * service's charges is recorded against it, with its finding, in the event's transaction. Empty for anything
     * else (a PaymentIntent made outside stays an unknown event: reconciliation records its finding).
     */
    @Override
    public Optional<Settlement.Result> apply(Connection tx, Operation op, StripeSide.ObjectState object) throws SQLException {
        if (op != Operation.REFUND) {
            return Optional.empty();
        }
        OutsideRefund refund = new OutsideRefund(object.objectId(), object.paymentIntentId(), object.amount(), object.stripeStatus());
        Optional<Recorded> recorded = refunds.record(tx, refund, "event");
        if (recorded.isEmpty()) {
            return Optional.empty();
        }
        Recorded r = recorded.get();
        if (r.counts()) {
            store.record(tx, null, finding(refund, r));
        }
        boolean changed = r.first() || !r.status().equals(r.statusBefore());
        return Optional.of(new Settlement.Result(changed ? Settlement.Effect.APPLIED : Settlement.Effect.IGNORED, r.chargeId(),
                describe(refund, r) + (changed ? "" : ": recorded already")));
    }

    /**
     * An object reconciliation listed that no row names and that carries none of the service's metadata: the finding
     * it is, if any (the run records it with its page). A refund of one of the service's charges is recorded against
     * the charge first, in a transaction of its own (the page's findings follow; a run that stops between the two
     * goes on from its last checkpoint, before this page, and records both again, once each).
     */
    Optional<Finding> listed(Operation op, StripeRecord r) {
        if (op == Operation.CHARGE) {
            if (!r.movesMoney()) {
                return Optional.empty(); // a payment that failed moved no money
            }
            return Optional.of(new Finding(FindingKind.MADE_OUTSIDE, r.id(), Operation.CHARGE, null, r.id(), null,
                    "PaymentIntent " + r.id() + " (" + r.status() + ", " + r.amount() + " " + r.currency() + ", created "
                            + r.created() + ") was made outside the service: it carries none of its metadata"));
        }
        OutsideRefund refund = new OutsideRefund(r.id(), r.paymentIntentId(), r.amount(), r.status());
        Optional<Recorded> recorded = refunds.record(refund, "reconciliation");
        recorded.filter(x -> x.first()).ifPresent(x -> LOG.infof("refund %s made outside the service recorded against %s", r.id(), x.chargeId()));
        return recorded.filter(Recorded::counts).map(x -> finding(refund, x));
    }

    /** What a charge's refunds made outside the service hold against it (pending and succeeded). */
    long refundedOutside(String clientId, String chargeId) {
        return refunds.refundedOutside(clientId, chargeId);
    }

    private static Finding finding(OutsideRefund refund, Recorded r) {
        return new Finding(FindingKind.REFUNDED_OUTSIDE, refund.stripeRefundId(), Operation.CHARGE, r.chargeId(),
                refund.stripeRefundId(), r.clientId(), describe(refund, r) + ": it counts against the charge");
    }

    private static String describe(OutsideRefund refund, Recorded r) {
        return "refund " + refund.stripeRefundId() + " (" + r.status() + ", " + refund.amount() + " " + r.currency() + ") of "
                + r.chargeId() + " (" + refund.paymentIntentId() + ", " + r.chargeAmount() + " " + r.currency()
                + ") was made outside the service";
    }
}

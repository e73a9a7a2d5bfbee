package dev.chargeonce.reconcile;

import dev.chargeonce.idempotency.IntentStatus;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.idempotency.RowView;
import dev.chargeonce.webhook.StripeEventInbox;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A row's story in time order, from what the database holds of it: its claim, its current Stripe key's first and
 * last send, its answer (or its parking), the Stripe events that concerned it, a charge's refunds, the findings
 * about it and what operators did. What the row keeps without a time (how often it was driven, the earlier
 * attempts' keys, its last Stripe error) stays in the row's facts; an earlier attempt's send times are not kept
 * (the row holds the current key's only).
 */
public final class StoryTimeline {

    private StoryTimeline() {
    }

    /**
     * One moment.
     *
     * @param kind     what it is, for the page's styling and the scripts: {@code claim}, {@code stripe},
     *                 {@code answer}, {@code parked}, {@code event}, {@code refund}, {@code finding}, {@code operator}
     * @param link     the row it names, as {@code <operation>/<id>} (a refund of a charge, a refund's charge), or null
     * @param amount   an amount it is about, in minor units, with {@code currency}; null if none
     */
    public record Moment(Instant at, String kind, String what, String detail, String link, Long amount, String currency) {
    }

    static List<Moment> of(RowView row, List<StripeEventInbox.RecordedEvent> events, List<ReconciliationStore.AuditEntry> actions,
                           List<ReconciliationStore.StoredFinding> findings, List<RowView> refunds) {
        List<Moment> moments = new ArrayList<>();
        String name = row.operation().column();
        moments.add(new Moment(row.createdAt(), "claim", name + " claimed: its Idempotency-Key's first request",
                row.chargeId() != null ? "a refund of " + row.chargeId() : null,
                row.chargeId() != null ? "charge/" + row.chargeId() : null, row.amount(), row.currency()));
        if (row.stripeKeyLastSent() != null) {
            moments.add(new Moment(row.stripeKeyFirstSent(), "stripe", "Stripe attempt " + row.stripeAttempt() + ": its key first in use",
                    null, null, null, null));
            moments.add(new Moment(row.stripeKeyLastSent(), "stripe", "Stripe attempt " + row.stripeAttempt() + ": its key last sent",
                    row.lastStripeError() == null ? null : "last Stripe error: " + row.lastStripeError(), null, null, null));
        }
        if (row.finishedAt() != null) {
            moments.add(new Moment(row.finishedAt(), "answer", "answered " + row.responseStatus() + " (" + row.status().column() + ")",
                    row.objectId() == null ? null : "Stripe " + (row.operation() == Operation.REFUND ? "refund " : "PaymentIntent ")
                            + row.objectId() + (row.state() == null ? "" : ", " + row.state()), null, null, null));
        } else if (row.status() == IntentStatus.PROCESSING && row.parked()) {
            moments.add(new Moment(row.updatedAt(), "parked", "parked for reconciliation (as of its last change)",
                    row.parkedReason(), null, null, null));
        }
        for (StripeEventInbox.RecordedEvent e : events) {
            moments.add(new Moment(e.stripeCreated(), "event", "Stripe event " + e.type() + " (" + e.source() + ", " + e.outcome() + ")",
                    e.id() + (e.detail() == null ? "" : ": " + e.detail()), null, null, null));
        }
        for (RowView refund : refunds) {
            moments.add(new Moment(refund.createdAt(), "refund", "refund " + refund.id() + " claimed", null,
                    "refund/" + refund.id(), refund.amount(), refund.currency()));
            if (refund.finishedAt() != null) {
                moments.add(new Moment(refund.finishedAt(), "refund", "refund " + refund.id() + " answered " + refund.responseStatus()
                        + " (" + refund.status().column() + (refund.state() == null ? "" : ", " + refund.state()) + ")", null,
                        "refund/" + refund.id(), null, null));
            }
        }
        for (ReconciliationStore.StoredFinding f : findings) {
            moments.add(new Moment(f.firstSeen(), "finding", "finding " + f.kind().column() + " (seen " + f.timesSeen() + "×)",
                    f.detail(), null, null, null));
            if (f.resolvedAt() != null) {
                moments.add(new Moment(f.resolvedAt(), "finding", "finding " + f.kind().column() + " resolved by " + f.resolvedBy(),
                        f.resolution(), null, null, null));
            }
        }
        for (ReconciliationStore.AuditEntry a : actions) {
            moments.add(new Moment(a.at(), "operator", a.operator() + ": " + a.action() + " (" + a.outcome() + ")",
                    a.reason() + (a.detail() == null ? "" : " — " + a.detail()), null, null, null));
        }
        moments.removeIf(m -> m.at() == null);
        moments.sort(Comparator.comparing(Moment::at));
        return List.copyOf(moments);
    }
}

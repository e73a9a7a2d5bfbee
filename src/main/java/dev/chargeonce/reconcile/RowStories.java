package dev.chargeonce.reconcile;

import dev.chargeonce.idempotency.OperatorRows;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.idempotency.RowView;
import dev.chargeonce.recovery.RecoveryConfig;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.webhook.StripeEventInbox;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;

/**
 * What an operator reads before acting: the rows that need one, the findings, and a row's whole story (its claim,
 * how often it was driven, the Stripe keys its attempts sent, its last Stripe error, the events that concerned it,
 * a charge's refunds, the findings about it, what operators did to it; in time order through {@link StoryTimeline}).
 * Reads only.
 */
@ApplicationScoped
public class RowStories {

    private static final int EVENTS = 200;
    private static final int AUDIT = 200;

    private final OperatorRows rows;
    private final ReconciliationStore store;
    private final StripeEventInbox inbox;
    private final RecoveryConfig recovery;
    private final dev.chargeonce.idempotency.OutsideRefundRows outsideRefunds;

    RowStories(OperatorRows rows, ReconciliationStore store, StripeEventInbox inbox, RecoveryConfig recovery,
               dev.chargeonce.idempotency.OutsideRefundRows outsideRefunds) {
        this.rows = rows;
        this.store = store;
        this.inbox = inbox;
        this.recovery = recovery;
        this.outsideRefunds = outsideRefunds;
    }

    /**
     * A row's story. {@code stripeKeys}: every Stripe idempotency key its attempts used, first to current;
     * {@code findings}: the open ones; {@code refunds}: a charge's refunds (none for a refund); {@code timeline}:
     * everything above that has a time, in time order ({@link StoryTimeline}); {@code refundedOutside}: what a
     * charge's refunds made outside the service (Stripe's Dashboard) hold, pending and succeeded (0 for a refund).
     */
    public record RowStory(RowView row, List<String> stripeKeys, List<StripeEventInbox.RecordedEvent> events,
                           List<ReconciliationStore.AuditEntry> actions, List<ReconciliationStore.StoredFinding> findings,
                           List<RowView> refunds, List<StoryTimeline.Moment> timeline, long refundedOutside) {

        /** A charge's pending and succeeded refunds, the service's and those made outside it. */
        public long refunded() {
            return row.amountReserved() + refundedOutside;
        }
    }

    public Optional<RowStory> story(Operation op, String rowId) {
        return rows.view(op, rowId).map(row -> {
            List<StripeEventInbox.RecordedEvent> events = inbox.eventsOf(rowId, row.objectId(), EVENTS);
            List<ReconciliationStore.AuditEntry> actions = store.auditTrail(rowId, AUDIT);
            List<ReconciliationStore.StoredFinding> findings = store.findingsOfRow(rowId);
            List<RowView> refunds = op == Operation.CHARGE ? rows.refundsOf(row.clientId(), row.id()) : List.of();
            return new RowStory(row, row.identity() == null ? List.of() : IntStream.rangeClosed(1, row.stripeAttempt())
                    .mapToObj(attempt -> StripeKeys.ofIdentity(op == Operation.REFUND, row.identity(), attempt)).toList(),
                    events, actions, findings.stream().filter(ReconciliationStore.StoredFinding::open).toList(), refunds,
                    StoryTimeline.of(row, events, actions, findings, refunds),
                    op == Operation.CHARGE ? outsideRefunds.refundedOutside(row.clientId(), row.id()) : 0);
        });
    }

    /** The latest findings operators or the job resolved, newest first: where finished rows are linked from. */
    public List<ReconciliationStore.StoredFinding> resolvedFindings(int limit) {
        return store.findings(false, 200 + limit).stream().filter(f -> !f.open())
                .sorted(java.util.Comparator.comparing(ReconciliationStore.StoredFinding::resolvedAt).reversed()).limit(limit).toList();
    }

    /** Parked and stuck rows of both operations, oldest first. */
    public List<RowView> attentionRows(int limitPerOperation) {
        return java.util.Arrays.stream(Operation.values())
                .flatMap(op -> rows.attentionRows(op, recovery.overdueAfter(), limitPerOperation).stream())
                .sorted(java.util.Comparator.comparing(RowView::createdAt)).toList();
    }

    public List<ReconciliationStore.StoredFinding> findings(boolean openOnly, int limit) {
        return store.findings(openOnly, limit);
    }

    public Optional<ReconciliationStore.StoredFinding> finding(long id) {
        return store.finding(id);
    }

    public List<ReconciliationStore.Run> runs(int limit) {
        return store.recentRuns(limit);
    }

    public List<ReconciliationStore.AuditEntry> recentActions(int limit) {
        return store.auditTrail(null, limit);
    }
}

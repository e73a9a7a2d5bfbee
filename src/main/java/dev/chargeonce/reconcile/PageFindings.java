package dev.chargeonce.reconcile;

import dev.chargeonce.idempotency.IntentStatus;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.idempotency.OperatorRows;
import dev.chargeonce.idempotency.RowView;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.recovery.RecoveryConfig;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeGateway.RecordPage;
import dev.chargeonce.stripe.StripeGateway.StripeRecord;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * What one page of a {@link ReconciliationJob} run finds: the decision, object by object and row by row, of what
 * is a difference and of which {@link FindingKind}. The job walks the pages, keeps the checkpoints and records the
 * findings; this holds them against each other. The Stripe reads it makes itself (a charge's PaymentIntent or
 * refund retrieved by id, its list of refunds) wait for the job's pace first, as the job's own list reads do.
 */
final class PageFindings {

    private static final int ATTENTION_LIMIT = 1000;

    private final ReconciliationStore store;
    private final OutsideObjects outsideObjects;
    private final OperatorRows rows;
    private final StripeGateway stripe;
    private final OperationDriver driver;
    private final ReconciliationConfig config;
    private final RecoveryConfig recovery;
    /** Waits before each Stripe read, at the job's configured requests per second. */
    private final Runnable pace;

    PageFindings(ReconciliationStore store, OutsideObjects outsideObjects, OperatorRows rows, StripeGateway stripe,
                 OperationDriver driver, ReconciliationConfig config, RecoveryConfig recovery, Runnable pace) {
        this.store = store;
        this.outsideObjects = outsideObjects;
        this.rows = rows;
        this.stripe = stripe;
        this.driver = driver;
        this.config = config;
        this.recovery = recovery;
        this.pace = pace;
    }

    // ---- phase 1 and 3: Stripe's objects against our rows ------------------------------------------------------

    List<Finding> compareStripePage(long runId, Operation op, List<StripeRecord> records) {
        List<StripeRecord> ours = records.stream().filter(r -> r.identity() != null || r.legacyChargeId() != null).toList();
        List<StripeRecord> outside = records.stream().filter(OutsideObjects::madeOutside).toList();
        Set<String> ids = new LinkedHashSet<>();
        Set<String> identities = new LinkedHashSet<>();
        for (StripeRecord r : ours) {
            ids.add(r.id());
            if (r.identity() != null) {
                identities.add(r.identity());
            }
        }
        outside.forEach(r -> ids.add(r.id())); // unless a row names it (an operator attached it)
        List<RowView> candidates = rows.viewsOf(op, ids, identities);
        Map<String, RowView> byObject = new HashMap<>();
        Map<String, List<RowView>> byIdentity = new HashMap<>();
        for (RowView row : candidates) {
            if (row.objectId() != null) {
                byObject.put(row.objectId(), row);
            }
            if (row.identity() != null) {
                byIdentity.computeIfAbsent(row.identity(), k -> new ArrayList<>()).add(row);
            }
        }
        List<Finding> found = new ArrayList<>();
        for (StripeRecord r : outside) {
            if (!byObject.containsKey(r.id())) {
                outsideObjects.listed(op, r).ifPresent(found::add);
            }
        }
        Set<String> seen = new HashSet<>();
        Map<String, List<StripeRecord>> movingByIdentity = new HashMap<>();
        for (StripeRecord r : ours) {
            seen.add(r.id());
            if (r.identity() != null && r.movesMoney()) {
                movingByIdentity.computeIfAbsent(r.identity(), k -> new ArrayList<>()).add(r);
            }
            RowView named = byObject.get(r.id());
            if (named == null && r.legacyChargeId() != null) {
                named = candidates.stream().filter(row -> row.id().equals(r.legacyChargeId())).findFirst().orElse(null);
            }
            if (named != null) {
                seen.add(named.id());
                compare(op, named, r).ifPresent(found::add);
                continue;
            }
            if (!r.movesMoney()) {
                continue; // an attempt that failed or was canceled moved no money: nothing to reconcile
            }
            List<RowView> keyRows = r.identity() == null ? List.of() : byIdentity.getOrDefault(r.identity(), List.of());
            if (keyRows.isEmpty()) {
                found.add(new Finding(op == Operation.REFUND ? FindingKind.UNKNOWN_REFUND : FindingKind.UNKNOWN_PAYMENT_INTENT,
                        r.id(), op, null, r.id(), r.clientId(), describe(r) + ": no row here has its key"));
                continue;
            }
            for (RowView row : keyRows) {
                if (row.objectId() != null && !row.objectId().equals(r.id())) {
                    found.add(new Finding(op == Operation.REFUND ? FindingKind.DUPLICATE_REFUNDS : FindingKind.DUPLICATE_PAYMENT_INTENTS,
                            r.identity(), op, row.id(), r.id(), row.clientId(), describe(r) + " and " + row.objectId()
                            + " (named by " + row.id() + ") both belong to one key"));
                } else if (row.objectId() == null && !beingDriven(row)) {
                    found.add(new Finding(op == Operation.REFUND ? FindingKind.UNRECORDED_REFUND : FindingKind.UNRECORDED_PAYMENT_INTENT,
                            r.id(), op, row.id(), r.id(), row.clientId(), describe(r) + " belongs to " + row.id() + ", which is "
                            + row.status().column() + (row.parked() ? " (parked)" : "") + " and names none"));
                }
            }
        }
        // Two that moved money for one key within this page, whatever the rows say.
        movingByIdentity.forEach((identity, moving) -> {
            if (moving.size() > 1) {
                List<RowView> keyRows = byIdentity.getOrDefault(identity, List.of());
                found.add(new Finding(op == Operation.REFUND ? FindingKind.DUPLICATE_REFUNDS : FindingKind.DUPLICATE_PAYMENT_INTENTS,
                        identity, op, keyRows.isEmpty() ? null : keyRows.get(0).id(), moving.get(0).id(), moving.get(0).clientId(),
                        moving.size() + " objects for one key: " + moving.stream().map(StripeRecord::id).toList()));
            }
        });
        store.saw(runId, seen);
        return dedupe(found);
    }

    /** A row whose key is being driven right now (young, not parked): its object is on its way, not a difference. */
    private boolean beingDriven(RowView row) {
        return row.status() == IntentStatus.PROCESSING && !row.parked()
                && row.createdAt().isAfter(Instant.now().minus(recovery.overdueAfter()));
    }

    /** The row that names a Stripe object against that object: amount, currency, state. */
    private Optional<Finding> compare(Operation op, RowView row, StripeRecord r) {
        List<String> differences = new ArrayList<>();
        if (row.amount() != r.amount()) {
            differences.add("amount " + row.amount() + " here, " + r.amount() + " at Stripe");
        }
        if (r.currency() != null && !r.currency().equalsIgnoreCase(row.currency())) {
            differences.add("currency " + row.currency() + " here, " + r.currency() + " at Stripe");
        }
        Optional<String> stripeState = driver.side(op).state(r.outcome());
        String ourState = ourState(row);
        boolean settledLongEnough = row.updatedAt() != null && row.updatedAt().isBefore(Instant.now().minus(config.grace()));
        if (row.status() != IntentStatus.PROCESSING && stripeState.isPresent() && !stripeState.get().equals(ourState) && settledLongEnough) {
            differences.add("state " + ourState + " here, " + stripeState.get() + " at Stripe (" + r.status() + ")");
        }
        if (differences.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new Finding(op == Operation.REFUND ? FindingKind.REFUND_DIFFERS : FindingKind.DIFFERS_AT_STRIPE, row.id(),
                op, row.id(), r.id(), row.clientId(), String.join("; ", differences)));
    }

    /** The row's Stripe state; rows answered before the state column existed: by their answer. */
    private static String ourState(RowView row) {
        if (row.state() != null) {
            return row.state();
        }
        return switch (row.status()) {
            case COMPLETED -> "succeeded";
            case FAILED -> "failed";
            case PROCESSING, ACCEPTED -> "processing";
        };
    }

    private static String describe(StripeRecord r) {
        return (r.refund() ? "refund " : "PaymentIntent ") + r.id() + " (" + r.status() + ", " + r.amount() + " " + r.currency()
                + (r.refund() ? ", on " + r.paymentIntentId() : "") + ")";
    }

    // ---- phase 2 and 4: our rows against Stripe ------------------------------------------------------------------

    List<Finding> checkOurRows(long runId, Operation op, List<RowView> page) {
        List<Finding> found = new ArrayList<>();
        Set<String> seen = store.seen(runId, page.stream().map(RowView::id).toList());
        for (RowView row : page) {
            if (row.objectId() != null && !seen.contains(row.id())) {
                pace.run();
                Optional<StripeRecord> atStripe = op == Operation.REFUND ? stripe.refundRecord(row.objectId())
                        : stripe.paymentIntentRecord(row.objectId());
                if (atStripe.isEmpty()) {
                    found.add(new Finding(op == Operation.REFUND ? FindingKind.REFUND_MISSING_AT_STRIPE : FindingKind.MISSING_AT_STRIPE,
                            row.id(), op, row.id(), row.objectId(), row.clientId(), row.id() + " (" + row.status().column()
                            + ", " + ourState(row) + ") names " + row.objectId() + ", which Stripe does not have"));
                } else {
                    compare(op, row, atStripe.get()).ifPresent(found::add);
                }
            }
            if (op == Operation.CHARGE && row.amountReserved() > 0 && row.objectId() != null) {
                found.addAll(refundTotal(row));
            }
        }
        return found;
    }

    /**
     * A charge's refunds here (answered ones: a refund still being driven may or may not exist at Stripe yet, and
     * those made outside the service, recorded first from Stripe's list) against the refunds Stripe made on its
     * PaymentIntent (but those of our refunds still being driven). With it, the findings of the refunds made outside.
     */
    private List<Finding> refundTotal(RowView charge) {
        List<Finding> found = new ArrayList<>();
        List<RowView> refunds = rows.refundsOf(charge.clientId(), charge.id());
        Set<String> drivenIdentities = new HashSet<>();
        long reservedByDriven = 0;
        for (RowView refund : refunds) {
            if (refund.status() == IntentStatus.PROCESSING) {
                drivenIdentities.add(refund.identity());
                reservedByDriven += refund.amount();
            }
        }
        long ours = charge.amountReserved() - reservedByDriven;
        long atStripe = 0;
        String after = null;
        do {
            pace.run();
            RecordPage page = stripe.listRefunds(Instant.EPOCH, Instant.now().plus(Duration.ofDays(1)), charge.objectId(), after);
            for (StripeRecord r : page.records()) {
                if (r.movesMoney() && (r.identity() == null || !drivenIdentities.contains(r.identity()))) {
                    atStripe += r.amount();
                }
                if (OutsideObjects.madeOutside(r)) {
                    outsideObjects.listed(Operation.REFUND, r).ifPresent(found::add);
                }
            }
            after = page.hasMore() && !page.records().isEmpty() ? page.lastId() : null;
        } while (after != null);
        long outside = outsideObjects.refundedOutside(charge.clientId(), charge.id());
        ours += outside;
        if (ours != atStripe) {
            found.add(new Finding(FindingKind.REFUND_TOTAL_DIFFERS, charge.id(), Operation.CHARGE, charge.id(), charge.objectId(),
                    charge.clientId(), "refunds of " + charge.id() + " add up to " + ours + " here (" + outside
                            + " of it made outside the service) and " + atStripe + " at Stripe (" + charge.objectId() + ")"));
        }
        return found;
    }

    // ---- phase 5: rows for an operator ---------------------------------------------------------------------------

    List<Finding> attentionRows() {
        List<Finding> found = new ArrayList<>();
        List<String> subjects = new ArrayList<>();
        for (Operation op : Operation.values()) {
            for (RowView row : rows.attentionRows(op, recovery.overdueAfter(), ATTENTION_LIMIT)) {
                FindingKind kind = row.parked() ? FindingKind.PARKED_ROW : FindingKind.STUCK_ROW;
                found.add(new Finding(kind, row.id(), op, row.id(), row.objectId(), row.clientId(), row.parked()
                        ? "parked: " + Objects.requireNonNullElse(row.parkedReason(), "no reason recorded")
                        : "processing since " + row.createdAt() + ", driven " + row.leaseGeneration() + " time(s), Stripe attempt "
                                + row.stripeAttempt() + (row.lastStripeError() == null ? "" : ", last error " + row.lastStripeError())));
                subjects.add(row.id());
            }
        }
        store.resolveNoLongerSeen(List.of(FindingKind.PARKED_ROW, FindingKind.STUCK_ROW), subjects);
        return found;
    }

    private static List<Finding> dedupe(Collection<Finding> findings) {
        Map<String, Finding> once = new LinkedHashMap<>();
        for (Finding f : findings) {
            once.putIfAbsent(f.kind() + " " + f.subject(), f);
        }
        return new ArrayList<>(once.values());
    }
}

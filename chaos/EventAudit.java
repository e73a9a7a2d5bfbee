package chaos;

import static chaos.Chaos.results;

import java.nio.file.Files;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Webhooks, 3-D Secure and the charges' states (chargeonce only: the naive control has no webhook endpoint): every
 * charge's state against its PaymentIntent's, the states the watchers saw (never backwards), and every event Stripe
 * made against the service's inbox.
 */
final class EventAudit {

    private EventAudit() {
    }

    /**
     * The event types the service follows: the webhook endpoint's subscription (README "Webhooks") and what its
     * catch-up lists (EventCatchUp: ChargeStripeSide's and RefundStripeSide's eventTypes()). Every such event Stripe
     * made must reach the inbox. The stand-in also makes {@code payment_intent.created}, which no subscription names
     * and the catch-up does not list, and delivers every event it makes: one of those the inbox lacks is reported,
     * not counted.
     */
    static final List<String> PAYMENT_INTENT_EVENTS = List.of("payment_intent.succeeded", "payment_intent.payment_failed",
            "payment_intent.canceled", "payment_intent.processing", "payment_intent.requires_action");
    static final List<String> REFUND_EVENTS = List.of("refund.created", "refund.updated", "refund.failed",
            "charge.refund.updated", "charge.refunded");

    /** The charge's state as GET /v1/charges/{id} shows it (ChargeQueries.view): charge_status, else by the row's status. */
    static String chargeState(String status, String chargeStatus) {
        if (chargeStatus != null) {
            return chargeStatus;
        }
        return switch (status) {
            case "completed" -> "succeeded";
            case "failed" -> "failed";
            default -> "processing";
        };
    }

    /** A row as the state audit reads it. */
    record StateRow(String id, String client, String key, String status, String chargeStatus, String paymentIntentId,
                    long createdAt, boolean parked) {
        String state() {
            return chargeState(status, chargeStatus);
        }
    }

    /** An event as the service's inbox recorded it. */
    record InboxEvent(String id, String type, String objectId, String source, String outcome, String chargeId,
                      String detail, long stripeCreated, long receivedAt) {
        String describe(long t0) {
            return String.format(Locale.ROOT, "%8.2fs %s %s %s -> %s %s (%s), made at %.0fs", (receivedAt - t0) / 1000.0, id,
                    type, source, outcome, chargeId, detail, (stripeCreated - t0) / 1000.0);
        }
    }

    /**
     * Webhooks, 3-D Secure and the charges' states (chargeonce only): every charge's state against its
     * PaymentIntent at Stripe (succeeded, failed = requires_payment_method with an error, canceled, and the
     * pending ones), every state a watcher saw against the ones before it (never backwards), every event the
     * service recorded as unknown against the rows (a PaymentIntent that has a row is never unknown, unless the
     * row was deleted by a lost commit when the event came), and every event Stripe made against the inbox.
     */
    static void audit(Audit a, Run run, List<ChargeAudit.Intent> ledger, long t0) throws Exception {
        a.webhooks = true;
        a.stateWaitMillis = run.stateWaitMillis;
        a.statesLeft = run.statesLeft;
        Map<String, ChargeAudit.Intent> byId = new java.util.HashMap<>();
        ledger.forEach(pi -> byId.put(pi.id(), pi));

        Map<?, ?> stats = run.stripe.webhookStats();
        a.eventsMade = Json.number(stats.get("events"));
        a.standInDelivered = Json.number(stats.get("delivered"));
        a.standInFailedTries = Json.number(stats.get("failed_deliveries"));
        a.deliveries = run.relay.deliveries.get();
        a.deliveriesAcknowledged = run.relay.acknowledged.get();
        a.duplicatesAcknowledged = run.relay.duplicatesAcknowledged.get();
        a.deliveriesFailed = run.relay.failed.get();
        a.deliveriesUnreachable = run.relay.unreachable.get();
        a.deliveriesRefused = run.relay.refused.get();
        for (String refusal : List.copyOf(run.relay.refusals)) {
            a.note("WEBHOOK REFUSED", refusal);
        }
        a.stateReads = run.stateReads.requests.get();
        a.stateReadsOk = run.stateReads.of(200);
        a.stateReadsNotFound = run.stateReads.of(404);

        for (Payment p : List.copyOf(run.payments)) {
            if (p.customerChoice == null) {
                continue;
            }
            switch (p.customerChoice) {
                case "succeeded" -> a.customersCompleted++;
                case "failed" -> a.customersFailed++;
                default -> a.customersAbandoned++;
            }
            if (p.customerOutcome != null && p.customerOutcome.startsWith("refused")) {
                a.customersTooLate++;
                a.note("CUSTOMER TOO LATE", "payment " + p.id + ": " + p.customerOutcome + p.story(t0));
            }
        }

        Map<String, StateRow> rowByPaymentIntent = new java.util.HashMap<>();
        Map<String, StateRow> rowByIdentity = new java.util.HashMap<>();
        List<StateRow> rows = new ArrayList<>();
        Map<String, List<InboxEvent>> eventsByObject = new java.util.HashMap<>();
        Set<String> recorded = new java.util.HashSet<>();
        List<InboxEvent> unknown = new ArrayList<>();
        try (Connection c = Audit.connect(run.variant); Statement st = c.createStatement()) {
            try (ResultSet rs = st.executeQuery("SELECT id, client_id, " + Keys.keyColumn(run.variant) + ", status, charge_status, payment_intent_id,"
                    + " created_at, needs_reconciliation FROM stripe_intents")) {
                while (rs.next()) {
                    StateRow row = new StateRow(rs.getString(1), rs.getString(2), Keys.keyOf(run.variant, rs.getString(3)), rs.getString(4),
                            rs.getString(5), rs.getString(6), rs.getTimestamp(7).getTime(), rs.getBoolean(8));
                    rows.add(row);
                    if (row.paymentIntentId() != null) {
                        rowByPaymentIntent.put(row.paymentIntentId(), row);
                    }
                    rowByIdentity.put(Keys.identity(row.client(), row.key()), row);
                }
            }
            try (ResultSet rs = st.executeQuery("SELECT id, type, object_id, source, outcome, row_id, detail, stripe_created,"
                    + " received_at FROM stripe_events ORDER BY received_at");
                 var out = Files.newBufferedWriter(results.resolve(run.variant.database + "-events.txt"))) {
                out.write("# the service's inbox (stripe_events): received (s from the chaos' start), id, type, source -> outcome, charge (detail), made at\n");
                while (rs.next()) {
                    InboxEvent e = new InboxEvent(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.getString(5), rs.getString(6), rs.getString(7), rs.getTimestamp(8).getTime(),
                            rs.getTimestamp(9).getTime());
                    out.write(e.describe(t0) + " " + e.objectId() + "\n");
                    recorded.add(e.id());
                    a.inboxRecorded++;
                    if ("catch_up".equals(e.source())) {
                        a.inboxFromCatchUp++;
                    } else {
                        a.inboxFromWebhook++;
                    }
                    switch (e.outcome()) {
                        case "applied" -> a.inboxApplied++;
                        case "unknown" -> {
                            a.inboxUnknown++;
                            unknown.add(e);
                        }
                        default -> a.inboxIgnored++;
                    }
                    if (e.objectId() != null) {
                        eventsByObject.computeIfAbsent(e.objectId(), k -> new ArrayList<>()).add(e);
                    }
                }
            }
        }

        // Every charge's final state against its PaymentIntent's at Stripe.
        int withLogs = 0;
        for (StateRow row : rows) {
            if (row.paymentIntentId() == null || row.parked() || "processing".equals(row.status())) {
                continue; // no PaymentIntent (a 400), or judged by the rows-not-terminal and parked counts
            }
            a.statesCompared++;
            String state = row.state();
            a.finalStates.merge(state, 1L, Long::sum);
            ChargeAudit.Intent pi = byId.get(row.paymentIntentId());
            String stripeState = pi == null ? "absent" : pi.state();
            if (!state.equals(stripeState)) {
                a.stateMismatches++;
                Payment owner = run.paymentsByKey.get(row.client() + "\n" + row.key());
                a.note("CHARGE STATE DIFFERS FROM STRIPE", "charge " + row.id() + " (" + row.status() + ", charge_status "
                        + row.chargeStatus() + ") shows " + state + ", its PaymentIntent " + row.paymentIntentId() + " is "
                        + (pi == null ? "absent from the ledger" : pi.status() + (pi.paymentError() ? " with an error" : ""))
                        + eventsOf(eventsByObject, row.paymentIntentId(), t0)
                        + (owner == null ? "" : "\n  payment " + owner.id + owner.story(t0))
                        + (withLogs++ < 10 ? Evidence.logLines(row.id(), row.paymentIntentId()) : ""));
            }
        }

        // Every state a watcher saw: never backwards (a lower rank, or out of a final state), the row's included.
        for (Payment p : List.copyOf(run.payments)) {
            List<StateSeen> seen = new ArrayList<>(List.copyOf(p.statesSeen));
            if (seen.isEmpty()) {
                continue;
            }
            StateRow row = rowByIdentity.get(Keys.identity(p.client, p.key));
            if (row != null) {
                seen.add(new StateSeen(System.currentTimeMillis(), 0, row.state(), "the row at the audit"));
            }
            String best = null;
            for (StateSeen s : seen) {
                if (StateSeen.rank(s.status()) == 0) {
                    continue;
                }
                if (best != null && (StateSeen.rank(s.status()) < StateSeen.rank(best) || (StateSeen.finalState(best) && !s.status().equals(best)))) {
                    a.statesBackwards++;
                    a.note("CHARGE STATE MOVED BACKWARDS", "payment " + p.id + ", charge " + (row == null ? "?" : row.id())
                            + ": " + s.status() + " (" + s.via() + ") after " + best
                            + (row == null ? "" : eventsOf(eventsByObject, row.paymentIntentId(), t0)) + p.story(t0)
                            + (row == null ? "" : Evidence.logLines(row.id(), String.valueOf(row.paymentIntentId()))));
                    break;
                }
                if (best == null || StateSeen.rank(s.status()) > StateSeen.rank(best)) {
                    best = s.status();
                }
            }
        }

        // Unknown events: a PaymentIntent of a row is never unknown, unless a lost commit had deleted its row then.
        for (InboxEvent e : unknown) {
            if (e.objectId() != null && e.objectId().startsWith("re_")) {
                // A refund's event: its row exists before Stripe is asked, and refund rows are never deleted.
                RefundAudit.StripeRefund sr = a.stripeRefundById.get(e.objectId());
                RefundAudit.RefundRow refundRow = sr == null || sr.identity() == null ? null : a.refundRowByIdentity.get(sr.identity());
                if (refundRow == null) {
                    a.unknownOfNoRow++; // a refund of no refund key the database has: counted as an orphan refund
                } else {
                    a.unknownOfKnownRefund++;
                    a.note("UNKNOWN EVENT OF A KNOWN REFUND", "event " + e.describe(t0) + " names refund " + e.objectId()
                            + " of refund row " + refundRow + Evidence.logLines(refundRow.id(), e.objectId()));
                }
                continue;
            }
            ChargeAudit.Intent pi = byId.get(e.objectId());
            StateRow row = rowByPaymentIntent.get(e.objectId());
            if (row == null && pi != null && pi.identity() != null) {
                row = rowByIdentity.get(pi.identity());
            }
            if (row == null) {
                a.unknownOfNoRow++; // a PaymentIntent of no (client, key) the database has: counted as an orphan
                continue;
            }
            Payment owner = run.paymentsByKey.get(row.client() + "\n" + row.key());
            StateRow current = row;
            boolean whileLost = owner != null && List.copyOf(owner.lostRows).stream().anyMatch(l ->
                    l.deleteStarted() - 2_000 <= e.receivedAt() && e.receivedAt() <= current.createdAt() + 1_000);
            String what = "event " + e.describe(t0) + " names PaymentIntent " + e.objectId() + " of charge " + row.id()
                    + " (created at " + String.format(Locale.ROOT, "%.2fs", (row.createdAt() - t0) / 1000.0) + ")"
                    + (owner == null ? "" : "\n  payment " + owner.id + owner.story(t0));
            if (whileLost) {
                a.unknownWhileRowLost++;
                a.note("UNKNOWN EVENT WHILE THE ROW WAS LOST", what);
            } else {
                a.unknownOfKnownCharge++;
                a.note("UNKNOWN EVENT OF A KNOWN CHARGE", what + Evidence.logLines(row.id(), e.objectId()));
            }
        }

        // Every event Stripe made of a type the service follows is in the inbox: delivered, or found by the
        // catch-up, which lists those types (EventCatchUp), PaymentIntents' and refunds' alike. An event of
        // another type (payment_intent.created: no subscription names it, the catch-up does not list it) is
        // reported when the inbox lacks it, not counted.
        int missedWithLogs = 0;
        for (Map.Entry<String, String> e : run.stripe.events().entrySet()) {
            if (recorded.contains(e.getKey())) {
                continue;
            }
            String objectId = run.stripe.eventObjects.get(e.getKey());
            if (PAYMENT_INTENT_EVENTS.contains(e.getValue())) {
                a.eventsNeverRecorded++;
                StateRow row = objectId == null ? null : rowByPaymentIntent.get(objectId);
                a.note("EVENT NEVER RECORDED", e.getKey() + " " + e.getValue() + " of PaymentIntent " + objectId
                        + (row == null ? "" : " of charge " + row.id()) + " (Stripe made it; the service's inbox does not have it)"
                        + eventsOf(eventsByObject, objectId, t0)
                        + (missedWithLogs++ < 10 ? Evidence.logLines(e.getKey(), objectId, row == null ? null : row.id()) : ""));
            } else if (REFUND_EVENTS.contains(e.getValue())) {
                a.refundEventsNeverRecorded++;
                RefundAudit.StripeRefund sr = objectId == null ? null : a.stripeRefundById.get(objectId);
                RefundAudit.RefundRow refundRow = sr == null || sr.identity() == null ? null : a.refundRowByIdentity.get(sr.identity());
                a.note("REFUND EVENT NEVER RECORDED", e.getKey() + " " + e.getValue() + " of refund " + objectId
                        + (refundRow == null ? "" : " of refund row " + refundRow) + " (Stripe made it; the service's inbox does not have it)"
                        + eventsOf(eventsByObject, objectId, t0)
                        + (missedWithLogs++ < 10 ? Evidence.logLines(e.getKey(), objectId, refundRow == null ? null : refundRow.id()) : ""));
            } else {
                a.unfollowedEventsNeverRecorded++;
                a.note("UNFOLLOWED EVENT NEVER RECORDED", e.getKey() + " " + e.getValue()
                        + " (a type the endpoint does not subscribe to and the catch-up does not list; its deliveries all failed)");
            }
        }
    }

    static String eventsOf(Map<String, List<InboxEvent>> eventsByObject, String paymentIntentId, long t0) {
        StringBuilder out = new StringBuilder("\n  events the service recorded for it:");
        for (InboxEvent e : eventsByObject.getOrDefault(paymentIntentId, List.of())) {
            out.append("\n    ").append(e.describe(t0));
        }
        return out.toString();
    }
}

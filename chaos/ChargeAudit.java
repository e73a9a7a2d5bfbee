package chaos;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The charges' audit: every payment's PaymentIntents at Stripe (by the chaos_payment its client wrote) against its
 * row and every answer its clients got. A payment with more than one PaymentIntent is a duplicate; one told 201
 * whose PaymentIntent Stripe did not charge is a loss; and every answer of a key must be the first one (after a lost
 * row, the same beyond the new row's id and creation time), as the row stores it.
 */
final class ChargeAudit {

    private ChargeAudit() {
    }

    record Row(String id, String client, String key, String status, Integer responseStatus, String responseBody,
               String paymentIntentId, boolean needsReconciliation, String reconciliationReason) {
        /** The service's identity of (client, key) at Stripe: {@code chargeonce_key} (KeyIdentities, version 1). */
        String identity() {
            return Keys.identity(client, key);
        }

        boolean terminal() {
            return ("completed".equals(status) || "failed".equals(status) || "accepted".equals(status)) && !needsReconciliation;
        }
    }

    /** {@code paymentError}: it carries a last_payment_error (a decline, a failed 3-D Secure). */
    record Intent(String id, String status, String identity, String paymentId, boolean paymentError, long amount) {
        boolean charged() {
            return "succeeded".equals(status);
        }

        /** The charge state this PaymentIntent means: failed is requires_payment_method with an error. */
        String state() {
            return "requires_payment_method".equals(status) && paymentError ? "failed" : status;
        }
    }

    /** The charges of a run against Stripe's {@code ledger}; times in the evidence relative to {@code t0}. */
    static void audit(Audit a, Run run, List<Intent> ledger, long t0) throws Exception {
        // The database's side: client + Idempotency-Key -> charge id, status, stored answer.
        Map<String, Row> rowByPayment = new TreeMap<>();
        Map<String, Row> rowByIdentity = new TreeMap<>();
        String reason = run.variant == Variant.CHARGEONCE ? "reconciliation_reason" : "NULL";
        try (Connection c = Audit.connect(run.variant); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT id, client_id, " + Keys.keyColumn(run.variant) + ", status, response_status, response_body, payment_intent_id, "
                        + "needs_reconciliation, " + reason + " FROM stripe_intents")) {
            while (rs.next()) {
                int rsStatus = rs.getInt(5);
                Row row = new Row(rs.getString(1), rs.getString(2), Keys.keyOf(run.variant, rs.getString(3)), rs.getString(4),
                        rs.wasNull() ? null : rsStatus, rs.getString(6), rs.getString(7), rs.getBoolean(8), rs.getString(9));
                rowByPayment.put(row.client() + "\n" + row.key(), row);
                rowByIdentity.put(row.identity(), row);
            }
        }
        a.rows = rowByPayment.size();
        for (Row row : rowByPayment.values()) {
            Payment owner = run.paymentsByKey.get(row.client() + "\n" + row.key());
            if (row.terminal()) {
                if ("completed".equals(row.status())) {
                    a.rowsCompleted++;
                } else if ("accepted".equals(row.status())) {
                    a.rowsAccepted++;
                } else {
                    a.rowsFailed++;
                }
            } else if (!(row.needsReconciliation() && owner != null && owner.lost())) {
                // (a parked row of a payment that lost a row is counted with the lost payments below)
                a.rowsNotTerminal++;
                a.note("ROW NOT TERMINAL", row + (owner == null ? "" : owner.story(t0)));
            }
        }

        Map<String, List<Intent>> byPayment = new TreeMap<>();
        for (Intent pi : ledger) {
            byPayment.computeIfAbsent(String.valueOf(pi.paymentId()), k -> new ArrayList<>()).add(pi);
            if (pi.identity() == null || !rowByIdentity.containsKey(pi.identity())) {
                a.orphanIntents++;
                a.note("ORPHAN PAYMENTINTENT", pi + " is of no (client, key) the database has");
            }
        }

        for (Payment p : List.copyOf(run.payments)) {
            a.payments++;
            if (p.duplicatedConcurrently) {
                a.concurrentDuplicates++;
            }
            Row row = rowByPayment.get(p.client + "\n" + p.key);
            List<Intent> pis = byPayment.getOrDefault(p.id, List.of());
            List<Intent> charged = pis.stream().filter(Intent::charged).toList();
            Answer first = p.firstFinal.get();
            boolean lost = p.lost();
            String where = "payment " + p.id + " (client " + p.client + ", key " + p.key + ", identity "
                    + Keys.identity(p.client, p.key) + ", row " + (row == null ? "none" : row.id() + " " + row.status()
                    + (row.needsReconciliation() ? " parked: " + row.reconciliationReason() : ""))
                    + (lost ? ", rows deleted: " + p.lostChargeIds() : "") + ")";
            a.parkedAnswers += p.parked.size();
            if (first != null || !p.parked.isEmpty()) {
                a.settled++;
            }

            if (pis.size() > 1) {
                a.duplicatePayments++;
                a.extraIntents += pis.size() - 1;
                a.note("DUPLICATE", where + " has " + pis.size() + " PaymentIntents at Stripe: " + pis + p.story(t0));
            }
            if (charged.size() > 1) {
                a.doubleCharged++;
            }
            if (lost) {
                a.lostPayments++;
                if (row != null && row.needsReconciliation()) {
                    a.lostParked++;
                    a.note("PARKED AFTER LOST COMMIT", where + ", " + p.parked.size() + " answers 503 charge_under_reconciliation, "
                            + pis.size() + " PaymentIntent(s): " + pis + p.story(t0));
                } else if (row != null && row.terminal()) {
                    a.lostRecovered++;
                    a.note("RECOVERED AFTER LOST COMMIT", where + ", Stripe: " + pis + p.story(t0));
                }
            }
            if (first == null) {
                if (!(lost && row != null && row.needsReconciliation())) {
                    a.neverFinal++;
                    a.note("NO FINAL ANSWER", where + p.story(t0));
                }
                continue;
            }
            if (row == null) {
                a.rowsMissing++;
                a.note("ROW MISSING", where + " got a final answer but has no row" + p.story(t0));
            }
            if (first.status() == 201) {
                a.succeededForClient++;
                String pi = Json.field(first.body(), "payment_intent");
                if (charged.stream().noneMatch(i -> i.id().equals(pi))) {
                    a.toldSucceededStripeHasNot++;
                    a.note("LOSS", where + " was told succeeded with " + pi + " but Stripe has no such charge: " + pis + p.story(t0));
                }
            } else if (first.status() == 202) {
                // 3-D Secure to complete: the customer may complete it, so the 202's own PaymentIntent may be
                // charged (the charge's state must then say succeeded: the state audit), never another one.
                a.acceptedForClient++;
                String pi = Json.field(first.body(), "payment_intent");
                if (charged.stream().anyMatch(i -> !i.id().equals(pi))) {
                    a.chargedButNotToldSucceeded++;
                    a.note("CHARGED BUT TOLD OTHERWISE", where + " got " + first.describe() + " but Stripe charged " + charged + p.story(t0));
                }
            } else {
                // 402: declined.
                if (first.status() == 402) {
                    a.declinedForClient++;
                } else {
                    a.unexpectedFinal++;
                    a.note("UNEXPECTED FINAL ANSWER", where + ": " + first.describe());
                }
                if (!charged.isEmpty()) {
                    a.chargedButNotToldSucceeded++;
                    a.note("CHARGED BUT TOLD OTHERWISE", where + " got " + first.describe() + " but Stripe charged " + charged + p.story(t0));
                }
            }
            checkAnswers(a, p, row, first, where, t0);
            if (row != null && "completed".equals(row.status())) {
                if (charged.size() != 1 || !charged.get(0).id().equals(row.paymentIntentId())) {
                    a.rowDisagreesWithStripe++;
                    a.note("ROW/STRIPE DISAGREE", where + " row says " + row.paymentIntentId() + ", Stripe has " + pis);
                }
            }
            for (Answer read : List.copyOf(p.readsAfterSuccess)) {
                a.readsAfterSuccess++;
                if (read.status() == 404) {
                    String readId = first.chargeId();
                    boolean deletedBefore = List.copyOf(p.lostRows).stream()
                            .anyMatch(l -> l.chargeId().equals(readId) && l.deleteStarted() <= read.receivedAt());
                    if (deletedBefore) {
                        // The row was deleted (lost commit) before the GET came back: a 404 is the truth then.
                        a.readsOfLostRow++;
                        a.note("READ OF A DELETED ROW", where + ": GET after " + first.describe() + " answered " + read.describe());
                    } else {
                        a.readsNotFound++;
                        a.note("READ AFTER SUCCESS NOT FOUND", where + ": GET after " + first.describe() + " answered " + read.describe());
                    }
                } else if (!java.util.Objects.equals(Json.field(read.body(), "payment_intent"), Json.field(first.body(), "payment_intent"))
                        || !"succeeded".equals(Json.field(read.body(), "status"))) {
                    a.readsDiffering++;
                    a.note("READ AFTER SUCCESS DIFFERS", where + ": POST " + first.describe() + " / GET " + read.describe());
                }
            }
            if (!p.conflictAnswers.isEmpty()) {
                a.conflictsSent++;
                for (Answer c : p.conflictAnswers) {
                    if (c.status() == 422) {
                        a.conflictsRefused++;
                    } else {
                        a.conflictsCharged++;
                        a.note("KEY REUSE ACCEPTED", where + " other body answered " + c.describe());
                    }
                }
            }
        }
    }

    /** The stand-in's ledger: every PaymentIntent with its identity (chargeonce_key) and payment (chaos_payment). */
    static List<Intent> parseLedger(String ledgerJson) {
        List<Intent> ledger = new ArrayList<>();
        for (Object o : (List<?>) ((Map<?, ?>) Json.parse(ledgerJson)).get("data")) {
            Map<?, ?> pi = (Map<?, ?>) o;
            Map<?, ?> md = (Map<?, ?>) pi.get("metadata");
            ledger.add(new Intent((String) pi.get("id"), (String) pi.get("status"),
                    md == null ? null : (String) md.get("chargeonce_key"), md == null ? null : (String) md.get("chaos_payment"),
                    pi.get("last_payment_error") != null, Json.number(pi.get("amount"))));
        }
        return ledger;
    }

    /**
     * Every final answer against the first one and the row. A row that was never lost answers byte for byte the
     * same, always. After a lost row, a new row answers for the key under the same charge id (a charge's id is its
     * key identity's); its answers may carry the new row's creation time, nothing else may differ (same status
     * code, PaymentIntent, amount, currency, status, decline); answers of one row are still byte for byte the same.
     */
    static void checkAnswers(Audit a, Payment p, Row row, Answer first, String where, long t0) {
        List<Answer> finals = List.copyOf(p.finals);
        if (!p.lost()) {
            for (Answer later : finals) {
                if (later.status() != first.status() || !later.body().equals(first.body())) {
                    a.replayMismatches++;
                    a.note("REPLAY DIFFERS", where + "\n    first: " + first.describe() + "\n    later: " + later.describe());
                    break;
                }
            }
            if (row != null && row.responseStatus() != null
                    && (row.responseStatus() != first.status() || !first.body().equals(row.responseBody()))) {
                a.rowAnswerMismatches++;
                a.note("ROW HOLDS ANOTHER ANSWER", where + "\n    client: " + first.describe() + "\n    row: "
                        + row.responseStatus() + " " + row.responseBody());
            }
            return;
        }
        Set<String> rowsOfKey = p.lostChargeIds();
        if (row != null) {
            rowsOfKey.add(row.id());
        }
        Object expected = first.sameAfterLostRow();
        Map<String, Answer> firstOfRow = new java.util.HashMap<>();
        if (row != null && row.responseStatus() != null) {
            Answer stored = new Answer(row.responseStatus(), row.responseBody(), false, null);
            firstOfRow.put(stored.rowOf(), stored);
            if (!stored.sameAfterLostRow().equals(expected)) {
                a.rowAnswerMismatches++;
                a.note("ROW HOLDS ANOTHER ANSWER", where + "\n    client first: " + first.describe() + "\n    new row: "
                        + stored.describe() + p.story(t0));
            }
        }
        boolean differs = false;
        boolean unknown = false;
        for (Answer later : finals) {
            String chargeId = later.chargeId();
            if (!unknown && (chargeId == null || !rowsOfKey.contains(chargeId)
                    || (first.chargeId() != null && !chargeId.equals(first.chargeId())))) {
                unknown = true;
                a.answersOfUnknownRows++;
                a.note("ANSWER OF AN UNKNOWN ROW", where + ": " + later.describe() + p.story(t0));
            }
            Answer sameRow = chargeId == null ? null : firstOfRow.putIfAbsent(later.rowOf(), later);
            if (differs) {
                continue;
            }
            if (sameRow != null && (sameRow.status() != later.status() || !sameRow.body().equals(later.body()))) {
                differs = true;
                a.replayMismatches++;
                a.note("REPLAY DIFFERS", where + " (one row, two answers)\n    earlier: " + sameRow.describe()
                        + "\n    later: " + later.describe() + p.story(t0));
            } else if (!later.sameAfterLostRow().equals(expected)) {
                differs = true;
                a.replayMismatches++;
                a.note("ANSWER AFTER LOST ROW DIFFERS", where + "\n    first: " + first.describe() + "\n    later: "
                        + later.describe() + p.story(t0));
            }
        }
    }
}

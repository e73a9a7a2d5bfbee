package chaos;

import static chaos.Chaos.results;

import java.nio.file.Files;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The refunds' audit (chargeonce only): every logical refund against Stripe's refunds, its row, the answers its
 * client got, and its charge: at most one Stripe refund per refund key, never more refunded than the charge, and every
 * answer the first one. {@link #audit} lists every check.
 */
final class RefundAudit {

    private RefundAudit() {
    }

    /** A refund at Stripe, as the stand-in's control plane lists it; {@code stripeKey}: the Idempotency-Key it was made with. */
    record StripeRefund(String id, String paymentIntent, long amount, String status, String identity, String chaosRefund,
                        String stripeKey) {
        /** Pending and succeeded refunds are what a PaymentIntent can no longer refund. */
        boolean counts() {
            return "pending".equals(status) || "succeeded".equals(status) || "requires_action".equals(status);
        }
    }

    /** A refund row (stripe_refunds). {@code parked}: needs_reconciliation. */
    record RefundRow(String id, String chargeId, String client, String key, String status, long amount,
                     Integer responseStatus, String responseBody, String stripeRefundId, String refundStatus,
                     String identity, boolean parked, String reconciliationReason, int stripeAttempt) {
        /** Its amount still held on the charge: not failed, and not failed or canceled at Stripe. */
        boolean reserves() {
            return !"failed".equals(status) && !"failed".equals(refundStatus) && !"canceled".equals(refundStatus);
        }
    }

    static List<StripeRefund> parseRefunds(String json) {
        List<StripeRefund> out = new ArrayList<>();
        for (Object o : (List<?>) ((Map<?, ?>) Json.parse(json)).get("data")) {
            Map<?, ?> r = (Map<?, ?>) o;
            Map<?, ?> md = r.get("metadata") instanceof Map<?, ?> m ? m : Map.of();
            out.add(new StripeRefund((String) r.get("id"), (String) r.get("payment_intent"), Json.number(r.get("amount")),
                    (String) r.get("status"), (String) md.get("chargeonce_key"), (String) md.get("chaos_refund"),
                    (String) r.get("sandbox_idempotency_key")));
        }
        return out;
    }

    static Long longField(String json, String name) {
        Object o = Json.parseQuietly(json);
        return o instanceof Map<?, ?> m && m.get(name) instanceof Number n ? n.longValue() : null;
    }

    /** The charge row of {@code chargeId} of this payment was deleted (lost commit) before {@code at}. */
    static boolean chargeLostBefore(Payment p, String chargeId, long at) {
        return List.copyOf(p.lostRows).stream().anyMatch(l -> l.chargeId().equals(chargeId) && l.deleteStarted() <= at);
    }

    /**
     * Refunds (chargeonce only): Stripe's refunds (the stand-in's /_sandbox/refunds, each with the identity the
     * service wrote, chargeonce_key = StripeKeys.refundIdentity, and the chaos_refund its client wrote), the refund
     * rows and the charges' reservations, and every answer each refund's client got. Violations: a logical refund
     * with more than one Stripe refund; a PaymentIntent whose pending + succeeded refunds exceed its amount, or a
     * charge whose clients were told 201 for more than it was paid; a 201 naming no Stripe refund of that key,
     * amount and PaymentIntent; a refund Stripe made whose client was told something else; a refund refused before
     * Stripe (amount_too_large, or 404 of a charge row a lost commit deleted) that has a row or a Stripe refund;
     * amount_too_large although the charge still has that much unreserved (no reservation was ever given back); a
     * Stripe refund of no refund row; a row still processing (not parked) after the settle phase; a refund without
     * a final answer (not parked); a made refund without a row; a replay that differs from the first final answer
     * (byte for byte; amount_too_large: its code); a row whose stored answer is not the first one; a row that
     * disagrees with its Stripe refund (identity, amount, state); a charge whose amount_reserved is not the sum of
     * its refunds that hold an amount; another body on a refund key not refused with 422; any other final answer.
     */
    static void audit(Audit a, Run run, List<ChargeAudit.Intent> ledger, long t0) throws Exception {
        a.refundsAudited = true;
        a.refundTally = run.refundTally;
        run.refundRetryCodes.forEach((code, n) -> a.refundRetryCodes.put(code, n.get()));
        String json = run.stripe.get("/_sandbox/refunds");
        Files.writeString(results.resolve(run.variant.database + "-refunds.json"), json);
        List<StripeRefund> atStripe = parseRefunds(json);
        a.stripeRefundCreates = Json.number(((Map<?, ?>) Json.parse(run.stripe.get("/_sandbox/refunds/requests"))).get("create_requests"));
        Map<String, StripeRefund> byId = new java.util.HashMap<>();
        Map<String, List<StripeRefund>> byIdentity = new java.util.HashMap<>();
        Map<String, List<StripeRefund>> byChaosRefund = new java.util.HashMap<>();
        Map<String, List<StripeRefund>> byPaymentIntent = new TreeMap<>();
        for (StripeRefund sr : atStripe) {
            a.stripeRefunds++;
            if (sr.counts()) {
                a.amountRefunded += sr.amount();
            }
            if (sr.stripeKey() != null && !sr.stripeKey().endsWith("-a1")) {
                a.stripeRefundsLaterAttempt++;
            }
            byId.put(sr.id(), sr);
            byIdentity.computeIfAbsent(String.valueOf(sr.identity()), k -> new ArrayList<>()).add(sr);
            byChaosRefund.computeIfAbsent(String.valueOf(sr.chaosRefund()), k -> new ArrayList<>()).add(sr);
            byPaymentIntent.computeIfAbsent(String.valueOf(sr.paymentIntent()), k -> new ArrayList<>()).add(sr);
        }
        a.stripeRefundById = byId;
        Map<String, ChargeAudit.Intent> intentById = new java.util.HashMap<>();
        ledger.forEach(pi -> intentById.put(pi.id(), pi));

        // The database's side: the refund rows, and the reservations of the charges they name.
        Map<String, RefundRow> rowByKey = new java.util.HashMap<>();
        Map<String, RefundRow> rowByIdentity = new java.util.HashMap<>();
        Map<String, List<RefundRow>> rowsByCharge = new java.util.HashMap<>();
        Map<String, long[]> charges = new TreeMap<>();
        try (Connection c = Audit.connect(run.variant); Statement st = c.createStatement()) {
            try (ResultSet rs = st.executeQuery("SELECT id, charge_id, client_id, stripe_identity, status, amount, response_status,"
                    + " response_body, stripe_refund_id, refund_status, stripe_identity, needs_reconciliation,"
                    + " reconciliation_reason, stripe_attempt FROM stripe_refunds")) {
                while (rs.next()) {
                    int responseStatus = rs.getInt(7);
                    RefundRow row = new RefundRow(rs.getString(1), rs.getString(2), rs.getString(3), Keys.KEYS_BY_IDENTITY.get(rs.getString(4)),
                            rs.getString(5), rs.getLong(6), rs.wasNull() ? null : responseStatus, rs.getString(8),
                            rs.getString(9), rs.getString(10), rs.getString(11), rs.getBoolean(12), rs.getString(13),
                            rs.getInt(14));
                    rowByKey.put(row.client() + "\n" + row.key(), row);
                    rowByIdentity.put(String.valueOf(row.identity()), row);
                    rowsByCharge.computeIfAbsent(row.chargeId(), k -> new ArrayList<>()).add(row);
                }
            }
            try (ResultSet rs = st.executeQuery("SELECT id, amount, amount_reserved FROM stripe_intents"
                    + " WHERE amount_reserved <> 0 OR id IN (SELECT charge_id FROM stripe_refunds)")) {
                while (rs.next()) {
                    charges.put(rs.getString(1), new long[] {rs.getLong(2), rs.getLong(3)});
                }
            }
        }
        a.refundRows = rowByKey.size();
        a.refundRowByIdentity = rowByIdentity;
        Map<String, Refund> refundByKey = new java.util.HashMap<>();
        for (Refund f : List.copyOf(run.refunds)) {
            refundByKey.put(f.payment.client + "\n" + f.key, f);
        }

        // Every Stripe refund is of a refund key the database has; no PaymentIntent refunded beyond its amount.
        for (StripeRefund sr : atStripe) {
            if (sr.identity() == null || !rowByIdentity.containsKey(sr.identity())) {
                a.orphanRefunds++;
                a.note("ORPHAN REFUND", sr + " is of no refund key the database has");
            }
        }
        for (Map.Entry<String, List<StripeRefund>> e : byPaymentIntent.entrySet()) {
            long refunded = e.getValue().stream().filter(StripeRefund::counts).mapToLong(StripeRefund::amount).sum();
            ChargeAudit.Intent pi = intentById.get(e.getKey());
            long paid = pi == null || !pi.charged() ? 0 : pi.amount();
            if (refunded > paid) {
                a.overRefunds++;
                a.note("OVER-REFUND", "PaymentIntent " + e.getKey() + " (" + (pi == null ? "absent" : pi.status() + ", amount "
                        + pi.amount()) + ") has pending + succeeded refunds of " + refunded + " at Stripe: " + e.getValue());
            }
        }

        // Every logical refund against Stripe, its row and the answers its client got.
        Map<String, Long> toldByCharge = new TreeMap<>();
        Map<String, List<Refund>> refundsByCharge = new TreeMap<>();
        List<Refund> refusedTooLarge = new ArrayList<>();
        for (Refund f : List.copyOf(run.refunds)) {
            a.refundsRequested++;
            refundsByCharge.computeIfAbsent(f.chargeId, k -> new ArrayList<>()).add(f);
            a.refundPatterns.merge(f.pattern, 1L, Long::sum);
            if (f.concurrentWithOthers) {
                a.refundsAtOnce++;
            }
            if (f.duplicatedConcurrently) {
                a.refundsDuplicatedConcurrently++;
            }
            RefundRow row = rowByKey.get(f.payment.client + "\n" + f.key);
            java.util.LinkedHashMap<String, StripeRefund> madeById = new java.util.LinkedHashMap<>();
            byIdentity.getOrDefault(f.identity(), List.of()).forEach(sr -> madeById.put(sr.id(), sr));
            byChaosRefund.getOrDefault(f.id, List.of()).forEach(sr -> madeById.put(sr.id(), sr));
            List<StripeRefund> made = List.copyOf(madeById.values());
            // A refund whose charge's row was lost and never came back keeps its 404 (refused before Stripe).
            Answer first = f.firstFinal.get() != null ? f.firstFinal.get() : f.chargeMissing.get();
            String where = f.describe() + ", row " + (row == null ? "none" : row.id() + " " + row.status()
                    + (row.parked() ? " parked: " + row.reconciliationReason() : "")) + ", Stripe: " + made;
            String evidence = where + f.story(t0) + "\n  payment " + f.payment.id + f.payment.story(t0);
            if (first != null || !f.parked.isEmpty()) {
                a.refundsSettled++;
            }
            if (made.size() > 1) {
                a.refundDuplicates++;
                List<String> needles = new ArrayList<>(made.stream().map(StripeRefund::id).toList());
                needles.add(row == null ? null : row.id());
                a.note("REFUND DUPLICATE", evidence + Evidence.logLines(needles.toArray(String[]::new)));
            }
            if (row != null && row.parked()) {
                a.refundsParked++;
                a.note("REFUND PARKED", evidence + Evidence.logLines(row.id()));
            }
            if (first == null) {
                if (row == null || !row.parked()) {
                    a.refundNeverFinal++;
                    a.note("REFUND WITHOUT A FINAL ANSWER", evidence);
                }
                continue;
            }
            boolean madeAtStripe = made.stream().anyMatch(StripeRefund::counts);
            if (first.status() == 201) {
                a.refundsMade++;
                String stripeId = Json.field(first.body(), "stripe_refund");
                Long amount = longField(first.body(), "amount");
                StripeRefund sr = stripeId == null ? null : byId.get(stripeId);
                boolean same = sr != null && f.identity().equals(sr.identity()) && amount != null && sr.amount() == amount
                        && f.paymentIntent.equals(sr.paymentIntent()) && sr.counts()
                        && (f.amount == null || f.amount.equals(amount)) && f.chargeId.equals(Json.field(first.body(), "charge"));
                if (!same) {
                    a.toldRefundedStripeHasNot++;
                    a.note("TOLD REFUNDED, STRIPE HAS NO SUCH REFUND", where + "\n    told: " + first.describe()
                            + "\n    Stripe's " + stripeId + ": " + sr + f.story(t0));
                }
                if (amount != null) {
                    toldByCharge.merge(f.chargeId, amount, Long::sum);
                }
                if (row == null) {
                    a.refundRowMissing++;
                    a.note("REFUND ROW MISSING", evidence);
                }
            } else {
                if (madeAtStripe) {
                    a.refundedButToldOtherwise++;
                    a.note("REFUNDED AT STRIPE, CLIENT TOLD OTHERWISE", where + " got " + first.describe() + f.story(t0));
                }
                boolean lostCharge = first.status() == 404 && chargeLostBefore(f.payment, f.chargeId, first.receivedAt());
                if (Refund.tooLargeBeforeStripe(first) || lostCharge) {
                    if (lostCharge) {
                        a.refundsOfLostCharge++;
                        a.note("REFUND OF A LOST CHARGE ROW", evidence);
                    } else {
                        a.refundsTooLarge++;
                        refusedTooLarge.add(f);
                    }
                    // Refused before Stripe: nothing stored, nothing sent.
                    if (row != null || !made.isEmpty()) {
                        a.refusedButSent++;
                        a.note("REFUSED BEFORE STRIPE, YET SENT", evidence);
                    }
                } else {
                    a.refundUnexpectedFinal++;
                    a.note("UNEXPECTED REFUND ANSWER", where + ": " + first.describe() + f.story(t0));
                }
            }
            for (Answer later : List.copyOf(f.finals)) {
                boolean same = Refund.tooLargeBeforeStripe(first) ? Refund.tooLargeBeforeStripe(later)
                        : later.status() == first.status() && later.body().equals(first.body());
                if (!same) {
                    a.refundReplayMismatch++;
                    a.note("REFUND REPLAY DIFFERS", where + "\n    first: " + first.describe() + "\n    later: "
                            + later.describe() + f.story(t0));
                    break;
                }
            }
            if (row != null && row.responseStatus() != null
                    && (row.responseStatus() != first.status() || !first.body().equals(row.responseBody()))) {
                a.refundRowAnswerMismatch++;
                a.note("REFUND ROW HOLDS ANOTHER ANSWER", where + "\n    client: " + first.describe() + "\n    row: "
                        + row.responseStatus() + " " + row.responseBody());
            }
            if (!f.conflictAnswers.isEmpty()) {
                a.refundConflictsSent++;
                for (Answer c : List.copyOf(f.conflictAnswers)) {
                    if (c.status() == 422) {
                        a.refundConflictsRefused++;
                    } else {
                        a.refundConflictsAccepted++;
                        a.note("REFUND KEY REUSE ACCEPTED", where + " other body answered " + c.describe());
                    }
                }
            }
        }
        a.refundCharges = refundsByCharge.size();

        // What clients were told was refunded never exceeds what was paid.
        for (Map.Entry<String, Long> e : toldByCharge.entrySet()) {
            Refund any = refundsByCharge.get(e.getKey()).get(0);
            if (e.getValue() > any.payment.amount) {
                a.overRefunds++;
                StringBuilder group = new StringBuilder();
                refundsByCharge.get(e.getKey()).forEach(f -> group.append("\n  ").append(f.describe()).append(f.story(t0)));
                a.note("OVER-REFUND", "charge " + e.getKey() + " (amount " + any.payment.amount + "): clients were told 201"
                        + " for refunds of " + e.getValue() + " in all" + group);
            }
        }

        // Every row: terminal after the settle phase (parked ones reported), as its Stripe refund says.
        for (List<RefundRow> ofCharge : rowsByCharge.values()) {
            for (RefundRow row : ofCharge) {
                Refund owner = refundByKey.get(row.client() + "\n" + row.key());
                String story = owner == null ? " (of no refund of this run)" : "\n  " + owner.describe() + owner.story(t0);
                if (owner == null) {
                    a.orphanRefunds++;
                    a.note("ORPHAN REFUND", "row " + row + " is of no refund of this run");
                }
                if (!Keys.refundIdentity(row.client(), row.key()).equals(row.identity())) {
                    a.refundRowStripeDisagree++;
                    a.note("REFUND ROW/STRIPE DISAGREE", "row " + row + ": its stripe_identity is not StripeKeys.refundIdentity"
                            + " of its client and key (" + Keys.refundIdentity(row.client(), row.key()) + ")");
                }
                if ("processing".equals(row.status())) {
                    a.refundRowStates.merge(row.parked() ? "parked" : "processing", 1L, Long::sum);
                    if (!row.parked()) {
                        a.refundRowsNotTerminal++;
                        a.note("REFUND ROW NOT TERMINAL", "row " + row + story + Evidence.logLines(row.id()));
                    }
                    continue;
                }
                a.refundRowStates.merge(row.status() + (row.refundStatus() == null ? "" : " " + row.refundStatus()), 1L, Long::sum);
                List<StripeRefund> ofKey = byIdentity.getOrDefault(String.valueOf(row.identity()), List.of());
                if (row.stripeRefundId() != null) {
                    StripeRefund sr = byId.get(row.stripeRefundId());
                    if (sr == null || !java.util.Objects.equals(row.identity(), sr.identity()) || sr.amount() != row.amount()
                            || !java.util.Objects.equals(row.refundStatus(), sr.status())) {
                        a.refundRowStripeDisagree++;
                        a.note("REFUND ROW/STRIPE DISAGREE", "row " + row + ", Stripe's " + row.stripeRefundId() + ": " + sr + story);
                    }
                } else if (!"failed".equals(row.status()) || !ofKey.isEmpty()) {
                    // A made refund names its Stripe refund; a refused one (no Stripe refund named) has none at Stripe.
                    a.refundRowStripeDisagree++;
                    a.note("REFUND ROW/STRIPE DISAGREE", "row " + row + " names no Stripe refund; Stripe has " + ofKey + story);
                }
            }
        }

        // The reservation: a charge's amount_reserved is the sum of its refunds that hold an amount, always.
        for (Map.Entry<String, long[]> e : charges.entrySet()) {
            List<RefundRow> ofCharge = rowsByCharge.getOrDefault(e.getKey(), List.of());
            long expected = ofCharge.stream().filter(RefundRow::reserves).mapToLong(RefundRow::amount).sum();
            if (e.getValue()[1] != expected) {
                a.reservationMismatch++;
                a.note("RESERVATION DIFFERS FROM REFUNDS", "charge " + e.getKey() + " (amount " + e.getValue()[0]
                        + ") has amount_reserved " + e.getValue()[1] + ", its refunds hold " + expected + ": " + ofCharge);
            }
        }

        // amount_too_large only when the charge had less left. Reservations only grow on a charge none of whose
        // refunds ever gave one back (failed or canceled): then what is left at the audit is at most what was left
        // when the refusal came, and a refund that fits in it now would have fitted then.
        for (Refund f : refusedTooLarge) {
            long[] charge = charges.get(f.chargeId);
            if (charge == null) {
                charge = new long[] {f.payment.amount, 0};
            }
            boolean gaveBack = rowsByCharge.getOrDefault(f.chargeId, List.of()).stream().anyMatch(row -> !row.reserves());
            long left = charge[0] - charge[1];
            if (!gaveBack && (f.amount == null ? left > 0 : f.amount <= left)) {
                a.wronglyRefused++;
                a.note("REFUSED AMOUNT_TOO_LARGE WITH ENOUGH LEFT", f.describe() + ": the charge has " + left + " of "
                        + charge[0] + " left at the audit" + f.story(t0));
            }
        }

        try (var out = Files.newBufferedWriter(results.resolve(run.variant.database + "-refunds.txt"))) {
            out.write("# every refund: its identity, charge, pattern, and each request's send and answer times (s from the chaos' start)\n");
            for (Refund f : List.copyOf(run.refunds)) {
                out.write(f.describe() + f.story(t0) + "\n");
            }
        }
    }
}

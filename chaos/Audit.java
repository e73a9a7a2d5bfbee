package chaos;

import static chaos.Chaos.opt;
import static chaos.Chaos.results;
import static chaos.Harness.log;

import java.nio.file.Files;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The figures of one run's audit, and what they mean: the violations (a duplicate, a loss, an answer unlike another,
 * a state unlike Stripe's, a refund made twice...), and the harness' own failures (a fault switch that failed, too
 * little chaos to prove anything). Report prints them side by side; Evidence writes the examples behind them.
 */
final class Audit {
    final String label;
    long chaosSeconds;
    long plannedSeconds;
    long recoveryMillis;
    long unfinishedAfterRecovery;
    int instances;
    Tally tally;
    FaultLog faults;
    List<String> switchFailures = List.of();
    long payments, settled, concurrentDuplicates, succeededForClient, declinedForClient, neverFinal;
    long stripeCreates, intents, chargedIntents;
    long rows, rowsCompleted, rowsFailed, rowsNotTerminal, rowsMissing;
    long duplicatePayments, doubleCharged, extraIntents;
    long toldSucceededStripeHasNot, chargedButNotToldSucceeded, rowDisagreesWithStripe, orphanIntents;
    long replayMismatches, rowAnswerMismatches, conflictsSent, conflictsRefused, conflictsCharged, unexpectedFinal;
    long answersOfUnknownRows;
    long readsAfterSuccess, readsNotFound, readsDiffering, readsOfLostRow;
    long lostPayments, lostRecovered, lostParked, parkedAnswers;
    // Webhooks, 3-D Secure and the charges' states: chargeonce only (the naive control has no webhook endpoint).
    boolean webhooks;
    long acceptedForClient, rowsAccepted;
    long customersCompleted, customersFailed, customersAbandoned, customersTooLate;
    long eventsMade, standInDelivered, standInFailedTries;
    long deliveries, deliveriesAcknowledged, duplicatesAcknowledged, deliveriesFailed, deliveriesUnreachable, deliveriesRefused;
    long inboxRecorded, inboxFromWebhook, inboxFromCatchUp, inboxApplied, inboxIgnored, inboxUnknown;
    long eventsNeverRecorded, refundEventsNeverRecorded, unfollowedEventsNeverRecorded, unknownOfKnownCharge, unknownWhileRowLost, unknownOfNoRow;
    /** The event catch-up: passes stopped on their page budget; its place's lag, the most and the last seen (s). */
    long catchUpBudgetStops = -1;
    /** With --stripe-rate-limit: creates and refunds Stripe admitted and refused (429), and the most in one second. */
    long limitedAdmitted = -1, limitedRefused = -1, limitedMostInASecond = -1;
    double catchUpMaxLag = -1, catchUpLastLag = -1;
    long statesCompared, stateMismatches, statesBackwards, stateReads, stateReadsOk, stateReadsNotFound;
    final Map<String, Long> finalStates = new TreeMap<>();
    // Refunds: chargeonce only (the naive control has none).
    boolean refundsAudited;
    Tally refundTally = new Tally();
    final Map<String, Long> refundRetryCodes = new TreeMap<>();
    final Map<String, Long> refundPatterns = new TreeMap<>();
    final Map<String, Long> refundRowStates = new TreeMap<>();
    long refundsRequested, refundCharges, refundsSettled, refundsMade, refundsTooLarge, refundsOfLostCharge, refundsParked;
    long refundsAtOnce, refundsDuplicatedConcurrently, stripeRefundCreates, stripeRefunds, stripeRefundsLaterAttempt;
    long amountRefunded, refundRows;
    long refundDuplicates, overRefunds, toldRefundedStripeHasNot, refundedButToldOtherwise, refusedButSent, wronglyRefused;
    long orphanRefunds, refundRowsNotTerminal, refundNeverFinal, refundRowMissing, refundReplayMismatch, refundRowAnswerMismatch;
    long refundRowStripeDisagree, reservationMismatch, refundConflictsSent, refundConflictsRefused, refundConflictsAccepted;
    long refundUnexpectedFinal, unknownOfKnownRefund;
    /** Stripe's refunds by id and the refund rows by identity, for the events' audit. */
    Map<String, RefundAudit.StripeRefund> stripeRefundById = Map.of();
    Map<String, RefundAudit.RefundRow> refundRowByIdentity = Map.of();
    long stateWaitMillis;
    String statesLeft = "";
    /** Evidence by kind, most serious kinds first, at most 50 examples of each. */
    final Map<String, List<String>> evidence = new LinkedHashMap<>();

    Audit(String label) {
        this.label = label;
    }

    /**
     * Parked keys after a lost commit are not counted: the service cannot prove the payment's outcome from a
     * history the database lost, and says so (503 charge_under_reconciliation) instead of charging again. They are
     * reported apart. A parked key whose row was never lost counts (a row not terminal).
     */
    long violations() {
        return duplicatePayments + doubleCharged + toldSucceededStripeHasNot + chargedButNotToldSucceeded
                + rowDisagreesWithStripe + orphanIntents + rowsNotTerminal + rowsMissing + replayMismatches
                + rowAnswerMismatches + answersOfUnknownRows + conflictsCharged + neverFinal + unexpectedFinal
                + readsNotFound + readsDiffering
                + stateMismatches + statesBackwards + unknownOfKnownCharge + eventsNeverRecorded + refundEventsNeverRecorded
                + deliveriesRefused
                + refundViolations();
    }

    /**
     * A parked refund row (503 refund_under_reconciliation) is not counted: it is reported apart, as a parked
     * charge after a lost commit is. Everything else below is.
     */
    long refundViolations() {
        return refundDuplicates + overRefunds + toldRefundedStripeHasNot + refundedButToldOtherwise + refusedButSent
                + wronglyRefused + orphanRefunds + refundRowsNotTerminal + refundNeverFinal + refundRowMissing
                + refundReplayMismatch + refundRowAnswerMismatch + refundRowStripeDisagree + reservationMismatch
                + refundConflictsAccepted + refundUnexpectedFinal + unknownOfKnownRefund;
    }

    /** The refunds' summary line. */
    String refundSummary() {
        return String.format(Locale.ROOT, "Refunds (%s): %d requested on %d charges, %d made (201), %d refused amount_too_large"
                        + " before Stripe, %d of a lost charge row (404), parked=%d, duplicates=%d, over-refunds=%d, %d refund"
                        + " violations.", label, refundsRequested, refundCharges, refundsMade, refundsTooLarge,
                refundsOfLostCharge, refundsParked, refundDuplicates, overRefunds, refundViolations());
    }

    /** Why this run proves nothing: failed fault switches, too few faults or payments, a kind of fault missing. */
    List<String> harnessFailures(int minFaults, int minPayments) {
        List<String> out = new ArrayList<>();
        for (String f : switchFailures) {
            out.add(label + ": a fault switch failed: " + f);
        }
        if (faults.total() < minFaults) {
            out.add(label + ": only " + faults.total() + " faults injected (minimum " + minFaults + ", --min-faults)");
        }
        if (settled < minPayments) {
            out.add(label + ": only " + settled + " payments settled (minimum " + minPayments + ", --min-payments)");
        }
        // One deck of faults holds every kind and takes about 40 s to deal: from 60 s on, each kind must occur.
        if (plannedSeconds >= 60 && !faults.kindsMissing().isEmpty()) {
            out.add(label + ": fault kinds never injected in " + plannedSeconds + " s: " + faults.kindsMissing());
        }
        // The webhook and 3-D Secure paths must have been exercised, or their audit proved nothing.
        if (webhooks && plannedSeconds >= 60 && acceptedForClient == 0) {
            out.add(label + ": no payment was answered 202 (3-D Secure) in " + plannedSeconds + " s");
        }
        if (webhooks && deliveriesAcknowledged == 0) {
            out.add(label + ": no webhook delivery was acknowledged");
        }
        // With --require-catch-up-overflow: the window held more events than one catch-up pass reads, at least once.
        if (webhooks && Boolean.parseBoolean(opt("require-catch-up-overflow", "false")) && catchUpBudgetStops < 1) {
            out.add(label + ": no catch-up pass stopped on its page budget (--require-catch-up-overflow): the window never held"
                    + " more events than a pass reads; lower --catch-up-page-size / --catch-up-max-pages");
        }
        // The refund paths too: made, refused over the charge, and refunds of one charge at once.
        if (refundsAudited && plannedSeconds >= 60) {
            if (refundsMade == 0) {
                out.add(label + ": no refund was made (201) in " + plannedSeconds + " s");
            }
            if (refundsTooLarge == 0) {
                out.add(label + ": no refund was refused amount_too_large in " + plannedSeconds + " s");
            }
            if (refundsAtOnce == 0) {
                out.add(label + ": no refunds of one charge were asked at once in " + plannedSeconds + " s");
            }
        }
        return out;
    }

    static Connection connect(Variant variant) throws SQLException {
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + opt("pg-port", "5432") + "/" + variant.database,
                "postgres", "x");
    }

    void note(String kind, String what) {
        List<String> examples = evidence.computeIfAbsent(kind, k -> new ArrayList<>());
        if (examples.size() < 50) {
            examples.add(what);
        }
    }

    /**
     * Audits a run once its charges' states have settled: Stripe's side (the stand-in's ledger) against the database's
     * and the clients', charges first (ChargeAudit), then refunds (RefundAudit, chargeonce only) and the charges'
     * states and events (EventAudit, chargeonce only); writes the evidence and every payment's story to the results.
     */
    static Audit of(Run run, long chaosMillis, long recoveryMillis, long unfinished) throws Exception {
        Audit a = new Audit(run.variant.label);
        a.chaosSeconds = chaosMillis / 1000;
        a.plannedSeconds = run.durationSeconds;
        a.recoveryMillis = recoveryMillis;
        a.unfinishedAfterRecovery = unfinished;
        a.instances = run.instances.size();
        a.tally = run.tally;
        a.faults = run.faults;
        a.switchFailures = List.copyOf(run.switchFailures);
        if (run.catchUp != null) {
            a.catchUpBudgetStops = run.catchUp.budgetStops(run.variant);
            a.catchUpMaxLag = run.catchUp.maxLagSeconds();
            a.catchUpLastLag = run.catchUp.lastLagSeconds();
        }
        long t0 = run.faults.t0;
        if (StripeStandIn.rateLimit() > 0) {
            Map<?, ?> endpoints = (Map<?, ?>) ((Map<?, ?>) Json.parse(run.stripe.get("/_sandbox/limits"))).get("endpoints");
            a.limitedAdmitted = 0;
            a.limitedRefused = 0;
            a.limitedMostInASecond = 0;
            for (String endpoint : List.of("payment_intents.create", "refunds.create")) {
                Map<?, ?> e = endpoints == null ? null : (Map<?, ?>) endpoints.get(endpoint);
                if (e == null) {
                    continue;
                }
                a.limitedAdmitted += ((Number) e.get("admitted")).longValue();
                if (e.get("refused") instanceof Map<?, ?> refused) {
                    for (Object count : refused.values()) {
                        a.limitedRefused += ((Number) count).longValue();
                    }
                }
                a.limitedMostInASecond = Math.max(a.limitedMostInASecond, ((Number) e.get("max_in_any_second")).longValue());
            }
        }

        // Stripe's side: every PaymentIntent, with the identity of (client, key) the service wrote
        // (chargeonce_key) and the payment the client wrote (chaos_payment).
        String ledgerJson = run.stripe.get("/_sandbox/ledger");
        Files.writeString(results.resolve(run.variant.database + "-ledger.json"), ledgerJson);
        List<ChargeAudit.Intent> ledger = ChargeAudit.parseLedger(ledgerJson);
        Map<?, ?> stats = (Map<?, ?>) Json.parse(run.stripe.get("/_sandbox/stats"));
        a.stripeCreates = ((Number) stats.get("create_requests")).longValue();
        a.intents = ledger.size();
        a.chargedIntents = ledger.stream().filter(ChargeAudit.Intent::charged).count();

        ChargeAudit.audit(a, run, ledger, t0);
        if (run.variant == Variant.CHARGEONCE) {
            RefundAudit.audit(a, run, ledger, t0);
        }
        if (run.relay != null) {
            EventAudit.audit(a, run, ledger, t0);
        }
        Files.writeString(results.resolve(run.variant.database + "-audit.txt"), Evidence.text(a));
        // Every payment's story (times from the start of the chaos, the instance's port), for reading a run closely.
        try (var out = Files.newBufferedWriter(results.resolve(run.variant.database + "-payments.txt"))) {
            for (Payment p : List.copyOf(run.payments)) {
                out.write(p.id + " " + p.client + " " + p.key + " " + Keys.identity(p.client, p.key) + p.story(t0) + "\n");
            }
        }
        log(a.label + ": " + a.violations() + " violations; evidence in " + results.resolve(run.variant.database + "-audit.txt"));
        return a;
    }
}

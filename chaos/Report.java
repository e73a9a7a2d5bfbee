package chaos;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The report's table: every figure of the audits, one column per target (chargeonce, then the naive control), the
 * violations in bold. Chaos prints it with the verdict and writes both to {@code report.md}.
 */
final class Report {

    private Report() {
    }

    static String sideBySide(List<Audit> audits) {
        Map<String, java.util.function.Function<Audit, Object>> metrics = new LinkedHashMap<>();
        metrics.put("chaos duration (s) / instances", x -> x.chaosSeconds + " / " + x.instances);
        metrics.put("logical payments (with concurrent duplicates) / settled", x -> x.payments + " (" + x.concurrentDuplicates
                + ") / " + x.settled);
        metrics.put("requests sent", x -> x.tally.requests.get());
        metrics.put("answers 201 / 402 / 409 / 422 / 503", x -> x.tally.of(201) + " / " + x.tally.of(402) + " / "
                + x.tally.of(409) + " / " + x.tally.of(422) + " / " + x.tally.of(503));
        metrics.put("answers lost (timeout, connection) / other (GETs: 200, 404)", x -> x.tally.of(-1) + " / " + x.tally.other());
        metrics.put("faults injected / fault switches failed", x -> x.faults.total() + " / " + x.switchFailures.size());
        metrics.put("faults: kill -9 / SIGTERM / DB cuts", x -> x.faults.of("kill_9") + " / " + x.faults.of("sigterm")
                + " / " + x.faults.of("db_cut"));
        metrics.put("faults: lost commits (rows deleted; of them past Stripe attempt 1)", x -> x.faults.of("lost_commit") + " ("
                + x.faults.of("lost_rows") + "; " + x.faults.of("lost_rows_attempt_moved_on") + ")");
        metrics.put("faults: Stripe latency spikes / keeps running / slow then edge / edge bursts",
                x -> x.faults.of("stripe_latency_spike") + " / " + x.faults.of("stripe_keeps_running") + " / "
                        + x.faults.of("stripe_edge_after_slow") + " / " + x.faults.of("stripe_edge"));
        metrics.put("faults: Stripe 500 before / 500 after / drops / 429",
                x -> x.faults.of("stripe_500_before_charging") + " / " + x.faults.of("stripe_500_after_charging") + " / "
                        + x.faults.of("stripe_drop_after_charging") + " / " + x.faults.of("stripe_429"));
        metrics.put("faults: webhook duplicate bursts / reordering / outages", x -> !x.webhooks ? "– (no webhook endpoint)"
                : x.faults.of("webhook_duplicates") + " / " + x.faults.of("webhook_reorder") + " / " + x.faults.of("webhook_outage"));
        metrics.put("SIGTERMs that needed kill -9 after 15 s", x -> x.faults.of("sigterm_needed_kill_9"));
        metrics.put("recovery after the chaos (ms) / rows left", x -> x.recoveryMillis + " / " + x.unfinishedAfterRecovery);
        metrics.put("Stripe: create requests / PaymentIntents / charged", x -> x.stripeCreates + " / " + x.intents + " / " + x.chargedIntents);
        metrics.put("clients told succeeded (201) / declined (402) / 3-D Secure to complete (202)", x -> x.succeededForClient
                + " / " + x.declinedForClient + " / " + x.acceptedForClient);
        metrics.put("rows completed / failed / accepted (202)", x -> x.rowsCompleted + " / " + x.rowsFailed + " / " + x.rowsAccepted);
        metrics.put("payments that lost a row: recovered / parked (503 charge_under_reconciliation answers)",
                x -> x.lostPayments + ": " + x.lostRecovered + " / " + x.lostParked + " (" + x.parkedAnswers + ")");
        metrics.put("**payments with more than one PaymentIntent**", x -> x.duplicatePayments);
        metrics.put("**payments charged more than once**", x -> x.doubleCharged);
        metrics.put("**told succeeded, Stripe has no such charge**", x -> x.toldSucceededStripeHasNot);
        metrics.put("**charged at Stripe, client told otherwise**", x -> x.chargedButNotToldSucceeded);
        metrics.put("PaymentIntents of no (client, key) the database has", x -> x.orphanIntents);
        metrics.put("completed rows disagreeing with Stripe", x -> x.rowDisagreesWithStripe);
        metrics.put("rows not terminal at the audit (parked after a lost row excluded)", x -> x.rowsNotTerminal);
        metrics.put("payments with a final answer and no row", x -> x.rowsMissing);
        metrics.put("payments without a final answer (parked after a lost row excluded)", x -> x.neverFinal);
        metrics.put("payments whose answers differ (replay ≠ first; after a lost row: beyond id, created)", x -> x.replayMismatches);
        metrics.put("answers naming a row the key never had, or another charge id than the first", x -> x.answersOfUnknownRows);
        metrics.put("first answer ≠ the row's stored answer", x -> x.rowAnswerMismatches);
        metrics.put("key reused with another body: sent / 422 / accepted", x -> x.conflictsSent + " / " + x.conflictsRefused
                + " / " + x.conflictsCharged);
        metrics.put("unexpected final answers", x -> x.unexpectedFinal);
        metrics.put("GET right after 201: asked / 404 / other payment / 404 of a deleted row", x -> x.readsAfterSuccess == 0
                ? "– (not asked)" : x.readsAfterSuccess + " / " + x.readsNotFound + " / " + x.readsDiffering + " / " + x.readsOfLostRow);
        metrics.put("refunds: logical (on charges) / settled / requests sent", x -> !x.refundsAudited ? "– (no refunds)"
                : x.refundsRequested + " (" + x.refundCharges + ") / " + x.refundsSettled + " / " + x.refundTally.requests.get());
        metrics.put("refunds by pattern: " + "full / partial / partials / at once (both instances) / over the charge", x -> !x.refundsAudited
                ? "–" : x.refundPatterns.getOrDefault("full", 0L) + " / " + x.refundPatterns.getOrDefault("partial", 0L) + " / "
                + x.refundPatterns.getOrDefault("partials", 0L) + " / " + x.refundPatterns.getOrDefault("at once", 0L) + " / "
                + x.refundPatterns.getOrDefault("over the charge", 0L) + " (asked at once: " + x.refundsAtOnce
                + "; sent concurrently with the same key: " + x.refundsDuplicatedConcurrently + ")");
        metrics.put("refund answers 201 / 400 / 404 / 409 / 422 / 503 / lost", x -> !x.refundsAudited ? "–"
                : x.refundTally.of(201) + " / " + x.refundTally.of(400) + " / " + x.refundTally.of(404) + " / "
                + x.refundTally.of(409) + " / " + x.refundTally.of(422) + " / " + x.refundTally.of(503) + " / " + x.refundTally.of(-1));
        metrics.put("refund answers to retry, by code", x -> !x.refundsAudited ? "–" : x.refundRetryCodes.toString());
        metrics.put("refunds: made (201) / refused amount_too_large / 404 of a lost charge row / parked (503 refund_under_reconciliation)",
                x -> !x.refundsAudited ? "–" : x.refundsMade + " / " + x.refundsTooLarge + " / " + x.refundsOfLostCharge + " / " + x.refundsParked);
        metrics.put("Stripe: refund creates / refunds (of them by Stripe attempt 2+) / amount refunded", x -> !x.refundsAudited ? "–"
                : x.stripeRefundCreates + " / " + x.stripeRefunds + " (" + x.stripeRefundsLaterAttempt + ") / " + x.amountRefunded);
        metrics.put("refund rows by status", x -> !x.refundsAudited ? "–" : x.refundRows + ": " + x.refundRowStates);
        metrics.put("**logical refunds with more than one Stripe refund**", x -> !x.refundsAudited ? "–" : x.refundDuplicates);
        metrics.put("**charges over-refunded (Stripe's pending + succeeded, or told 201, over the amount)**",
                x -> !x.refundsAudited ? "–" : x.overRefunds);
        metrics.put("**told refunded (201), Stripe has no such refund (key, amount)**", x -> !x.refundsAudited ? "–" : x.toldRefundedStripeHasNot);
        metrics.put("**refunded at Stripe, client told otherwise**", x -> !x.refundsAudited ? "–" : x.refundedButToldOtherwise);
        metrics.put("**refused before Stripe (amount_too_large, 404), yet a row or a Stripe refund**", x -> !x.refundsAudited ? "–" : x.refusedButSent);
        metrics.put("refused amount_too_large with enough left / Stripe refunds of no refund key", x -> !x.refundsAudited ? "–"
                : x.wronglyRefused + " / " + x.orphanRefunds);
        metrics.put("refund rows not terminal after the settle phase (parked excluded) / without a final answer / made without a row",
                x -> !x.refundsAudited ? "–" : x.refundRowsNotTerminal + " / " + x.refundNeverFinal + " / " + x.refundRowMissing);
        metrics.put("refunds whose answers differ / first answer ≠ the row's / rows ≠ Stripe's refund / reservations ≠ refunds",
                x -> !x.refundsAudited ? "–" : x.refundReplayMismatch + " / " + x.refundRowAnswerMismatch + " / "
                        + x.refundRowStripeDisagree + " / " + x.reservationMismatch);
        metrics.put("refund key reused with another body: sent / 422 / accepted; unexpected final answers; unknown events of a refund",
                x -> !x.refundsAudited ? "–" : x.refundConflictsSent + " / " + x.refundConflictsRefused + " / "
                        + x.refundConflictsAccepted + "; " + x.refundUnexpectedFinal + "; " + x.unknownOfKnownRefund);
        metrics.put("3-D Secure customers: complete / fail / never (refused: too late)", x -> !x.webhooks ? "–"
                : x.customersCompleted + " / " + x.customersFailed + " / " + x.customersAbandoned + " (" + x.customersTooLate + ")");
        metrics.put("webhooks: events Stripe made / deliveries: acknowledged (of them duplicates) / 5xx / instance down", x -> !x.webhooks
                ? "– (no webhook endpoint)" : x.eventsMade + " / " + x.deliveries + ": " + x.deliveriesAcknowledged + " ("
                + x.duplicatesAcknowledged + ") / " + x.deliveriesFailed + " / " + x.deliveriesUnreachable);
        metrics.put("events the service recorded: by webhook / by catch-up; applied / ignored / unknown", x -> !x.webhooks ? "–"
                : x.inboxFromWebhook + " / " + x.inboxFromCatchUp + "; " + x.inboxApplied + " / " + x.inboxIgnored + " / " + x.inboxUnknown);
        metrics.put("event catch-up: passes stopped on their page budget / its place's lag behind now, most / last seen (s)",
                x -> !x.webhooks ? "–" : x.catchUpBudgetStops + " / " + String.format(java.util.Locale.ROOT, "%.0f / %.0f",
                        x.catchUpMaxLag, x.catchUpLastLag));
        metrics.put("Stripe's rate limit (--stripe-rate-limit): creates and refunds admitted / refused 429 / most in one second",
                x -> x.limitedAdmitted < 0 ? "– (not limited)" : x.limitedAdmitted + " / " + x.limitedRefused + " / "
                        + x.limitedMostInASecond);
        metrics.put("unknown events: of no row / while the row was deleted (lost commit)", x -> !x.webhooks ? "–"
                : x.unknownOfNoRow + " / " + x.unknownWhileRowLost);
        metrics.put("charge states after the final round: settled after (ms) / watchers' GETs: 200 / 404 / lost (instance down)",
                x -> !x.webhooks ? "–" : x.stateWaitMillis + (x.statesLeft.isEmpty() ? "" : " (left: " + x.statesLeft + ")") + " / "
                        + x.stateReadsOk + " / " + x.stateReadsNotFound + " / " + (x.stateReads - x.stateReadsOk - x.stateReadsNotFound));
        metrics.put("charges compared with Stripe: " + "succeeded / failed / canceled / requires_action / processing", x -> !x.webhooks
                ? "–" : x.statesCompared + ": " + x.finalStates.getOrDefault("succeeded", 0L) + " / " + x.finalStates.getOrDefault("failed", 0L)
                + " / " + x.finalStates.getOrDefault("canceled", 0L) + " / " + x.finalStates.getOrDefault("requires_action", 0L)
                + " / " + x.finalStates.getOrDefault("processing", 0L));
        metrics.put("**charges whose final state differs from Stripe's**", x -> !x.webhooks ? "–" : x.stateMismatches);
        metrics.put("**charge states that moved backwards**", x -> !x.webhooks ? "–" : x.statesBackwards);
        metrics.put("**unknown events of a charge the database has**", x -> !x.webhooks ? "–" : x.unknownOfKnownCharge);
        metrics.put("**Stripe events the service never recorded**: PaymentIntents' / refunds'", x -> !x.webhooks ? "–"
                : x.eventsNeverRecorded + " / " + x.refundEventsNeverRecorded);
        metrics.put("events of types the service does not follow never recorded (payment_intent.created; not violations)",
                x -> !x.webhooks ? "–" : x.unfollowedEventsNeverRecorded);
        metrics.put("**webhook deliveries refused (4xx)**", x -> !x.webhooks ? "–" : x.deliveriesRefused);
        metrics.put("**verdict**", x -> x.violations() == 0 ? "no duplicate, no loss" : x.violations() + " violations");
        StringBuilder out = new StringBuilder("| | ");
        for (Audit a : audits) {
            out.append(a.label).append(" | ");
        }
        out.append("\n|---|");
        out.append("---:|".repeat(audits.size())).append('\n');
        metrics.forEach((name, f) -> {
            out.append("| ").append(name).append(" | ");
            for (Audit a : audits) {
                out.append(f.apply(a)).append(" | ");
            }
            out.append('\n');
        });
        return out.toString();
    }
}

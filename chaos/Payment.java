package chaos;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/** One logical payment: one client, one Idempotency-Key, one body; everything every request of it was told. */
final class Payment {
    final String id;
    final String client;
    final String apiKey;
    final String key;
    final String body;
    final String conflictingBody;
    final long amount;
    final AtomicReference<Answer> firstFinal = new AtomicReference<>();
    final List<Answer> finals = Collections.synchronizedList(new ArrayList<>());
    final List<Answer> conflictAnswers = Collections.synchronizedList(new ArrayList<>());
    /** The refunds its client asked for on the charge its first 201 named (chargeonce only). */
    final List<Refund> refunds = Collections.synchronizedList(new ArrayList<>());
    /** GET /v1/charges/{id} asked right after the 201 (read-your-writes, through the replica when configured). */
    final List<Answer> readsAfterSuccess = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger requests = new AtomicInteger();
    /** 503 charge_under_reconciliation answers: the key was parked (expected only after a lost commit). */
    final List<Answer> parked = Collections.synchronizedList(new ArrayList<>());
    /** Rows of this payment the harness deleted (lost commits): their charge ids, and when. */
    final List<LostRow> lostRows = Collections.synchronizedList(new ArrayList<>());
    volatile boolean duplicatedConcurrently;
    /** 3-D Secure after a 202: what the customer does (succeeded, failed, never), when, and what Stripe said. */
    final AtomicBoolean customerStarted = new AtomicBoolean();
    volatile String customerChoice;
    volatile String customerOutcome;
    volatile long customerActedAt;
    /** The charge's state as GET /v1/charges/{id} showed it after the 202, in the order the answers came. */
    final List<StateSeen> statesSeen = Collections.synchronizedList(new ArrayList<>());

    Payment(String id, String client, String apiKey, String key, long amount, String paymentMethod) {
        this.id = id;
        this.client = client;
        this.apiKey = apiKey;
        this.key = key;
        this.amount = amount;
        this.body = body(amount, paymentMethod);
        this.conflictingBody = body(amount + 1, paymentMethod);
    }

    String body(long amount, String paymentMethod) {
        return "{\"amount\":" + amount + ",\"currency\":\"usd\",\"payment_method\":\"" + paymentMethod
                + "\",\"metadata\":{\"chaos_payment\":\"" + id + "\"}}";
    }

    /** Every answer any request of this payment got, in arrival order: the evidence of a violation. */
    final List<Answer> history = Collections.synchronizedList(new ArrayList<>());

    void record(Answer a) {
        history.add(a);
        if (a.isFinal()) {
            firstFinal.compareAndSet(null, a);
            finals.add(a);
        } else if (a.isParked()) {
            parked.add(a);
        }
    }

    /** This payment's story for the evidence: its rows deleted, then every answer with its arrival time. */
    String story(long t0) {
        StringBuilder out = new StringBuilder();
        for (LostRow l : List.copyOf(lostRows)) {
            out.append(String.format(Locale.ROOT, "\n    %8.2fs row %s (%s, Stripe attempt %d) deleted (lost commit)",
                    (l.deleteStarted() - t0) / 1000.0, l.chargeId(), l.status(), l.stripeAttempt()));
        }
        for (Answer a : List.copyOf(history)) {
            out.append(String.format(Locale.ROOT, "\n    %8.2fs-%8.2fs :%d %s", (a.sentAt() - t0) / 1000.0,
                    (a.receivedAt() - t0) / 1000.0, a.port(), a.describe()));
        }
        if (customerChoice != null) {
            out.append(String.format(Locale.ROOT, "\n    3-D Secure: the customer %s%s", switch (customerChoice) {
                case "never" -> "never authenticates";
                default -> "authenticates (" + customerChoice + ")";
            }, customerActedAt == 0 ? "" : String.format(Locale.ROOT, " at %.2fs: %s", (customerActedAt - t0) / 1000.0,
                    customerOutcome)));
        }
        for (StateSeen seen : List.copyOf(statesSeen)) {
            out.append(String.format(Locale.ROOT, "\n    %8.2fs :%d charge %s (%s)", (seen.at() - t0) / 1000.0, seen.port(),
                    seen.status(), seen.via()));
        }
        return out.toString();
    }

    boolean lost() {
        return !lostRows.isEmpty();
    }

    /** The charge ids of rows of this payment that were deleted. */
    Set<String> lostChargeIds() {
        Set<String> ids = new java.util.HashSet<>();
        for (LostRow l : List.copyOf(lostRows)) {
            ids.add(l.chargeId());
        }
        return ids;
    }
}

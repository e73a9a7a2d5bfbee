package chaos;

import static chaos.Keys.refundIdentity;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One logical refund: one client, one refund Idempotency-Key, on the charge its payment's first 201 named, one
 * body; everything every request of it was told. {@code amount} null: a full refund (what is left).
 * {@code pattern}: how its client asked (full, partial, partials one after another, partials at once from both
 * instances, partials whose sum is over the charge).
 */
final class Refund {
    final String id;
    final Payment payment;
    final String chargeId;
    final String paymentIntent;
    final String key;
    final Long amount;
    final String pattern;
    final String body;
    final String conflictingBody;
    final AtomicReference<Answer> firstFinal = new AtomicReference<>();
    /**
     * The first 404 of the charge while a lost commit had deleted its row: not final, the charge comes back under
     * its id when its client asks again (a charge id is its key identity's); the answer if it never did.
     */
    final AtomicReference<Answer> chargeMissing = new AtomicReference<>();
    final List<Answer> finals = Collections.synchronizedList(new ArrayList<>());
    final List<Answer> conflictAnswers = Collections.synchronizedList(new ArrayList<>());
    final List<Answer> history = Collections.synchronizedList(new ArrayList<>());
    /** 503 refund_under_reconciliation answers: the key was parked for an operator. */
    final List<Answer> parked = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger requests = new AtomicInteger();
    /** The same request sent 2-3 times at once (a double click). */
    volatile boolean duplicatedConcurrently;
    /** Sent at the same time as the other refunds of its charge, the first requests to both instances. */
    volatile boolean concurrentWithOthers;

    Refund(String id, Payment payment, String chargeId, String paymentIntent, String key, Long amount, String pattern,
           String reason) {
        this.id = id;
        this.payment = payment;
        this.chargeId = chargeId;
        this.paymentIntent = paymentIntent;
        refundIdentity(payment.client, key); // the audit finds its row by it
        this.key = key;
        this.amount = amount;
        this.pattern = pattern;
        this.body = body(amount, reason);
        // Same key, another body: amount + 1 (a full refund names an amount instead).
        this.conflictingBody = body(amount == null ? 1L : amount + 1, reason);
    }

    String body(Long amount, String reason) {
        return "{" + (amount == null ? "" : "\"amount\":" + amount + ",")
                + (reason == null ? "" : "\"reason\":\"" + reason + "\",")
                + "\"metadata\":{\"chaos_refund\":\"" + id + "\"}}";
    }

    /** The refund's identity at Stripe (its chargeonce_key metadata, StripeKeys.refundIdentity). */
    String identity() {
        return refundIdentity(payment.client, key);
    }

    /**
     * A final answer of a refund key: 201 (made), 402 (Stripe made it and it failed), 400 (refused: before Stripe,
     * amount_too_large or charge_not_refundable, or by Stripe), 422 (key reused with another body), 404 (no such
     * charge). 409, 503, connection errors and timeouts are asked again with the same key.
     */
    static boolean isFinal(Answer a) {
        return a.status() == 201 || a.status() == 402 || a.status() == 400 || a.status() == 422 || a.status() == 404;
    }

    /** 503 refund_under_reconciliation: parked for an operator; its client stops asking. */
    static boolean isParked(Answer a) {
        return a.status() == 503 && a.body() != null && a.body().contains("\"refund_under_reconciliation\"");
    }

    /** A final answer of this refund: {@link #isFinal}, but not a 404 of its charge while the charge's row was lost. */
    boolean isFinalHere(Answer a) {
        return isFinal(a) && !chargeMissingForNow(a);
    }

    private boolean chargeMissingForNow(Answer a) {
        return a.status() == 404 && RefundAudit.chargeLostBefore(payment, chargeId, a.receivedAt());
    }

    void record(Answer a) {
        history.add(a);
        if (chargeMissingForNow(a)) {
            chargeMissing.compareAndSet(null, a);
        } else if (isFinal(a)) {
            firstFinal.compareAndSet(null, a);
            finals.add(a);
        } else if (isParked(a)) {
            parked.add(a);
        }
    }

    String story(long t0) {
        StringBuilder out = new StringBuilder();
        for (Answer a : List.copyOf(history)) {
            out.append(String.format(Locale.ROOT, "\n    %8.2fs-%8.2fs :%d %s", (a.sentAt() - t0) / 1000.0,
                    (a.receivedAt() - t0) / 1000.0, a.port(), a.describe()));
        }
        for (Answer a : List.copyOf(conflictAnswers)) {
            out.append(String.format(Locale.ROOT, "\n    %8.2fs-%8.2fs :%d (another body) %s", (a.sentAt() - t0) / 1000.0,
                    (a.receivedAt() - t0) / 1000.0, a.port(), a.describe()));
        }
        return out.toString();
    }

    String describe() {
        return "refund " + id + " (client " + payment.client + ", key " + key + ", identity " + identity() + ", charge "
                + chargeId + " " + paymentIntent + " of payment " + payment.id + " amount " + payment.amount + "; "
                + pattern + ", " + (amount == null ? "full" : "amount " + amount)
                + (concurrentWithOthers ? ", at once with the charge's other refunds" : "")
                + (duplicatedConcurrently ? ", sent concurrently" : "") + ")";
    }

    /**
     * The service's own refusal of a refund over what is left (RefundService: checked against the reservation in the
     * claim's transaction; nothing is stored, nothing sent to Stripe), told apart from Stripe's refusal of the same
     * code (a stored 400 replayed: "greater than unrefunded amount on charge") by its message.
     */
    static boolean tooLargeBeforeStripe(Answer a) {
        if (a.status() != 400 || !"amount_too_large".equals(Answer.errorCode(a))) {
            return false;
        }
        return a.body().contains("what is left to refund") || a.body().contains("nothing left to refund");
    }
}

package chaos;

import static chaos.Harness.sleep;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The refunds (chargeonce only: the naive control has none): the client of a charge answered 201 refunds it in one
 * of several patterns, each refund with a key of its own, asked like a payment (random timeouts, retried with the same
 * key, sometimes sent twice at once, asked again, once with another body).
 */
final class RefundClients {

    private final Run run;

    RefundClients(Run run) {
        this.run = run;
    }

    /** The share (%) of the charges answered 201 whose client then refunds them, in one of the patterns below. */
    static final int REFUND_SHARE = 30;

    /**
     * The client of a charge answered 201 refunds it: in full (no amount: what is left); one partial refund;
     * 2-3 partials one after another, sometimes followed by a full refund of the rest and another full one (which
     * finds nothing left); 2-4 partials at once, their first requests to both instances; or 2-3 partials of more
     * than half the charge each (at once or one after another), so that their sum is over the charge and
     * {@code amount_too_large} must come. Each refund has its own key and is asked like a payment: random
     * timeouts, retried with the same key until a final answer, sometimes sent twice at once, asked again.
     */
    void refundsOf(Payment p, Answer charged, SplittableRandom r) {
        String chargeId = Json.field(charged.body(), "id");
        String paymentIntent = Json.field(charged.body(), "payment_intent");
        if (chargeId == null || paymentIntent == null) {
            return;
        }
        long amount = p.amount;
        int roll = r.nextInt(100);
        List<Long> amounts = new ArrayList<>();
        String pattern;
        boolean atOnce = false;
        if (roll < 25) {
            pattern = "full";
            amounts.add(null);
        } else if (roll < 45) {
            pattern = "partial";
            amounts.add(1 + r.nextLong(amount - 1));
        } else if (roll < 65) {
            pattern = "partials";
            int n = 2 + r.nextInt(2);
            for (int i = 0; i < n; i++) {
                amounts.add(1 + r.nextLong(amount / n));
            }
            if (r.nextBoolean()) {
                amounts.add(null); // the rest
                if (r.nextBoolean()) {
                    amounts.add(null); // nothing left: amount_too_large
                }
            }
        } else if (roll < 83) {
            pattern = "at once";
            atOnce = true;
            int n = 2 + r.nextInt(3);
            for (int i = 0; i < n; i++) {
                amounts.add(1 + r.nextLong(amount / n));
            }
        } else {
            pattern = "over the charge";
            atOnce = r.nextBoolean();
            int n = 2 + r.nextInt(2);
            for (int i = 0; i < n; i++) {
                amounts.add(amount / 2 + 1 + r.nextLong(amount - amount / 2)); // each more than half
            }
        }
        List<Refund> group = new ArrayList<>();
        for (Long a : amounts) {
            String reason = switch (r.nextInt(4)) {
                case 0 -> "duplicate";
                case 1 -> "requested_by_customer";
                default -> null;
            };
            Refund f = new Refund("rq_" + UUID.randomUUID().toString().replace("-", "").substring(0, 20), p, chargeId,
                    paymentIntent, "chaos-refund-" + UUID.randomUUID(), a, pattern, reason);
            f.concurrentWithOthers = atOnce;
            group.add(f);
            p.refunds.add(f);
            run.refunds.add(f);
        }
        if (atOnce) {
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < group.size(); i++) {
                Refund f = group.get(i);
                SplittableRandom fr = r.split();
                int firstInstance = i % run.instances.size();
                threads.add(Thread.ofVirtual().start(() -> askForRefund(f, fr, firstInstance)));
            }
            for (Thread t : threads) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        } else {
            for (Refund f : group) {
                askForRefund(f, r.split(), -1);
            }
        }
    }

    /** One refund, as a payment is asked: until a final answer; then perhaps again, or with another body. */
    void askForRefund(Refund f, SplittableRandom r, int firstInstance) {
        List<Thread> duplicates = new ArrayList<>();
        if (r.nextInt(100) < 15) {
            f.duplicatedConcurrently = true;
            for (int i = 0, extra = 1 + r.nextInt(2); i < extra; i++) {
                SplittableRandom dr = r.split();
                duplicates.add(Thread.ofVirtual().start(() -> driveRefund(f, dr, run.endAt, -1)));
            }
        }
        driveRefund(f, r, run.endAt, firstInstance);
        for (Thread d : duplicates) {
            try {
                d.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        Answer first = f.firstFinal.get();
        if (first == null) {
            return; // the final round asks again
        }
        if (r.nextInt(100) < 20) {
            f.record(sendRefund(f, f.body, run.anyInstance(r), Duration.ofSeconds(5)));
        }
        if (first.status() == 201 && r.nextInt(100) < 3) {
            // Same key, another body: must be refused (422), never refunded. Only on a key that was stored: a key
            // refused before Stripe (amount_too_large) holds nothing, and another body is a new request there.
            for (int i = 0; i < 5; i++) {
                Answer a = sendRefund(f, f.conflictingBody, run.anyInstance(r), Duration.ofSeconds(5));
                if (Refund.isFinal(a)) {
                    f.conflictAnswers.add(a);
                    break;
                }
                sleep(200);
            }
        }
    }

    /** Retries a refund until a final (or parked) answer or the deadline; the first request to {@code firstInstance}. */
    void driveRefund(Refund f, SplittableRandom r, long deadline, int firstInstance) {
        int next = firstInstance;
        while (f.firstFinal.get() == null && System.currentTimeMillis() < deadline) {
            Instance target = next >= 0 ? run.instances.get(next) : run.anyInstance(r);
            next = -1;
            Answer a = sendRefund(f, f.body, target, Duration.ofMillis(300 + r.nextInt(3_700)));
            f.record(a);
            if (f.isFinalHere(a) || Refund.isParked(a)) {
                return;
            }
            sleep(a.status() == -1 ? 50 + r.nextInt(400) : 100 + r.nextInt(700));
        }
    }

    Answer sendRefund(Refund f, String body, Instance target, Duration timeout) {
        f.requests.incrementAndGet();
        Answer a = Http.post(target.refunds(f.chargeId), f.payment.apiKey, f.key, body, timeout);
        run.refundTally.count(a);
        if (a.status() == 409 || a.status() == 503) {
            run.refundRetryCodes.computeIfAbsent(a.status() + " " + Answer.errorCode(a), k -> new AtomicLong()).incrementAndGet();
        }
        return a;
    }
}

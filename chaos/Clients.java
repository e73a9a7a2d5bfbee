package chaos;

import static chaos.Harness.sleep;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;

/**
 * The clients of a run: each one pays again and again for the run's length, as impatient clients do (random
 * timeouts, retries with the same key, now and then the same request sent 2-4 times at once, a key reused with
 * another body), reads its charge back after a 201, refunds some of its charges (RefundClients), and, after a 202,
 * acts as the customer who completes, fails or abandons 3-D Secure while a watcher reads the charge's state.
 */
final class Clients {

    private final Run run;

    Clients(Run run) {
        this.run = run;
    }

    Payment newPayment(SplittableRandom r) {
        boolean acme = r.nextBoolean();
        int roll = r.nextInt(100);
        String pm = roll < 86 ? "pm_card_visa" : roll < 93 ? "pm_card_chargeDeclined"
                : roll < 97 ? "pm_card_authenticationRequired" : "pm_card_threeDSecure2Required";
        String id = "pay_" + UUID.randomUUID().toString().replace("-", "").substring(0, 20);
        Payment p = new Payment(id, acme ? Keys.ACME : Keys.GLOBEX, acme ? Keys.ACME_KEY : Keys.GLOBEX_KEY,
                "chaos-" + UUID.randomUUID(), 100 + r.nextInt(99_900), pm);
        run.payments.add(p);
        run.paymentsByKey.put(p.client + "\n" + p.key, p);
        Keys.identity(p.client, p.key);
        return p;
    }

    /**
     * Records an answer of a payment; its first 202 (3-D Secure to complete) sends its customer to Stripe.js and
     * a watcher to the charge's state.
     */
    void record(Payment p, Answer a) {
        p.record(a);
        if (a.status() == 202 && p.customerStarted.compareAndSet(false, true)) {
            SplittableRandom r = new SplittableRandom(p.key.hashCode());
            int roll = r.nextInt(100);
            // Most complete it, some fail it, some never come back (the service cancels those after the expiry).
            p.customerChoice = roll < 70 ? "succeeded" : roll < 85 ? "failed" : "never";
            if (!p.customerChoice.equals("never")) {
                run.customersToAct.incrementAndGet();
            }
            run.customers.submit(() -> customer(p, a, r));
        }
    }

    /**
     * The customer of a 202: authenticates 0.3-6 s later (or never), while the charge's state is read with GET on
     * random instances every 0.8-2.5 s, until it is final, or failed for a customer who failed it, or the audit.
     */
    void customer(Payment p, Answer accepted, SplittableRandom r) {
        String paymentIntent = Json.field(accepted.body(), "payment_intent");
        String chargeId = Json.field(accepted.body(), "id");
        p.statesSeen.add(new StateSeen(accepted.receivedAt(), accepted.port(), Json.field(accepted.body(), "status"), "POST 202"));
        boolean acted = p.customerChoice.equals("never");
        long actAt = System.currentTimeMillis() + 300 + r.nextInt(5_701);
        try {
            while (run.watchingStates) {
                if (!acted && System.currentTimeMillis() >= actAt) {
                    acted = true;
                    try {
                        run.stripe.authenticate(paymentIntent, p.customerChoice);
                        p.customerOutcome = "done";
                    } catch (IOException | RuntimeException e) {
                        // Too late: the service canceled it meanwhile (an answer, not a harness failure).
                        p.customerOutcome = "refused: " + e.getMessage();
                    }
                    p.customerActedAt = System.currentTimeMillis();
                    run.customersToAct.decrementAndGet();
                }
                Instance instance = run.anyInstance(r);
                Answer read = Http.get(URI.create("http://127.0.0.1:" + instance.port + "/v1/charges/" + chargeId), p.apiKey,
                        Duration.ofSeconds(5));
                run.stateReads.count(read);
                if (read.status() == 404) {
                    // An accepted row is never deleted (lost commits take finished rows only): reported, with its story.
                    p.statesSeen.add(new StateSeen(read.receivedAt(), read.port(), "404 " + read.body(), "GET"));
                }
                if (read.status() == 200) {
                    String state = Json.field(read.body(), "status");
                    p.statesSeen.add(new StateSeen(read.receivedAt(), read.port(), state, "GET"));
                    if (acted && (StateSeen.finalState(state) || ("failed".equals(state) && p.customerChoice.equals("failed")))) {
                        return;
                    }
                }
                sleep(800 + r.nextInt(1_701));
            }
        } finally {
            if (!acted) {
                run.customersToAct.decrementAndGet();
            }
        }
    }

    Answer send(Payment p, String body, SplittableRandom r, Duration timeout) {
        p.requests.incrementAndGet();
        Answer a = Http.post(run.anyInstance(r).charges(), p.apiKey, p.key, body, timeout);
        run.tally.count(a);
        return a;
    }

    /** Retries until a final answer (or the deadline): timeouts are random, as impatient clients' are. */
    void driveUntilFinal(Payment p, SplittableRandom r, long deadline) {
        while (p.firstFinal.get() == null && System.currentTimeMillis() < deadline) {
            Duration timeout = Duration.ofMillis(300 + r.nextInt(3_700));
            Answer a = send(p, p.body, r, timeout);
            record(p, a);
            if (a.isFinal() || a.isParked()) {
                return;
            }
            long backoff = a.status() == -1 ? 50 + r.nextInt(400) : 100 + r.nextInt(700);
            sleep(backoff);
        }
    }

    void clientLoop(SplittableRandom r) {
        while (System.currentTimeMillis() < run.endAt) {
            Payment p = newPayment(r);
            List<Thread> duplicates = new ArrayList<>();
            if (r.nextInt(100) < 15) {
                // The same request sent concurrently: a double click, a proxy retry, two pods of the caller.
                p.duplicatedConcurrently = true;
                int extra = 1 + r.nextInt(3);
                for (int i = 0; i < extra; i++) {
                    SplittableRandom dr = r.split();
                    duplicates.add(Thread.ofVirtual().start(() -> driveUntilFinal(p, dr, run.endAt)));
                }
            }
            driveUntilFinal(p, r, run.endAt);
            for (Thread d : duplicates) {
                try {
                    d.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            if (p.firstFinal.get() == null) {
                continue; // the final round asks again
            }
            Answer first = p.firstFinal.get();
            if (run.variant == Variant.CHARGEONCE && first.status() == 201 && r.nextInt(100) < 20) {
                readAfterSuccess(p, first, r);
            }
            if (r.nextInt(100) < 20) {
                Answer replay = send(p, p.body, r, Duration.ofSeconds(5));
                record(p, replay);
            }
            if (r.nextInt(100) < 3) {
                // Same key, another body: must be refused (422), never charged.
                for (int i = 0; i < 5; i++) {
                    Answer a = send(p, p.conflictingBody, r, Duration.ofSeconds(5));
                    if (a.isFinal()) {
                        p.conflictAnswers.add(a);
                        break;
                    }
                    sleep(200);
                }
            }
            if (run.variant == Variant.CHARGEONCE && first.status() == 201 && r.nextInt(100) < RefundClients.REFUND_SHARE
                    && System.currentTimeMillis() < run.endAt - 1_000) {
                run.refundClients.refundsOf(p, first, r.split());
            }
        }
    }

    /** A GET of the charge right after its 201, on any instance: must never be 404 (read-your-writes). */
    void readAfterSuccess(Payment p, Answer created, SplittableRandom r) {
        String chargeId = Json.field(created.body(), "id");
        for (int i = 0; i < 5; i++) {
            Instance instance = run.anyInstance(r);
            Answer a = Http.get(URI.create("http://127.0.0.1:" + instance.port + "/v1/charges/" + chargeId), p.apiKey,
                    Duration.ofSeconds(5));
            run.tally.count(a);
            if (a.status() == 200 || a.status() == 404) {
                p.readsAfterSuccess.add(a);
                return;
            }
            sleep(200);
        }
    }

/** A client asks for a payment again (whatever it was told before) until it gets a final or a parked answer. */
    void askAgain(Payment p, SplittableRandom r, long deadline) {
        while (System.currentTimeMillis() < deadline) {
            Answer a = send(p, p.body, r, Duration.ofMillis(300 + r.nextInt(3_700)));
            record(p, a);
            if (a.isFinal() || a.isParked()) {
                return;
            }
            sleep(a.status() == -1 ? 50 + r.nextInt(400) : 100 + r.nextInt(700));
        }
    }
}

package chaos;

import static chaos.Chaos.opt;
import static chaos.Chaos.results;
import static chaos.Harness.log;
import static chaos.Harness.seconds;
import static chaos.Harness.sleep;

import dev.chargeonce.testing.TcpProxy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One run against one target: its processes (the stand-in, the instances behind their proxies, the webhook relay),
 * then its phases: the chaos (clients and the fault schedule, for the run's duration), recovery (every instance back,
 * every row finished), a final round (every client asks once more), the charges' states settling, and the audit.
 */
final class Run {
    final Variant variant;
    final long durationSeconds;
    final SplittableRandom random;
    /** Fault switches that failed (control plane errors, kills, restarts, deletions): each one fails the run. */
    final List<String> switchFailures = Collections.synchronizedList(new ArrayList<>());
    final StripeStandIn stripe = new StripeStandIn(this::switchFailed);
    final List<Instance> instances = new ArrayList<>();
    final List<Payment> payments = Collections.synchronizedList(new ArrayList<>());
    /** client + "\n" + Idempotency-Key -> payment: which payment a deleted row belonged to. */
    final Map<String, Payment> paymentsByKey = new ConcurrentHashMap<>();
    final Tally tally = new Tally();
    /** chargeonce only: the refunds clients asked for, and the answers to their requests (apart from the charges'). */
    final List<Refund> refunds = Collections.synchronizedList(new ArrayList<>());
    final Tally refundTally = new Tally();
    /** 409 and 503 answers to refunds by error code (stripe_outcome_unknown: a Stripe fault hit the refund's create). */
    final Map<String, AtomicLong> refundRetryCodes = new ConcurrentHashMap<>();
    final Clients clients = new Clients(this);
    final RefundClients refundClients = new RefundClients(this);
    final FaultSchedule schedule;
    final FaultLog faults;
    /** chargeonce only: the webhook endpoint the stand-in delivers to (the control has none). */
    final WebhookRelay relay;
    /** chargeonce only: the event catch-up's lag and the passes that stopped on their page budget. */
    final CatchUpWatch catchUp;
    /** The 3-D Secure customers and the watchers of their charges' states (until the audit). */
    final ExecutorService customers = Executors.newVirtualThreadPerTaskExecutor();
    volatile boolean watchingStates = true;
    /** Customers who will still complete or fail their 3-D Secure (the states cannot have settled before). */
    final AtomicInteger customersToAct = new AtomicInteger();
    /** GET /v1/charges/{id} of the watchers (apart from the clients' tally). */
    final Tally stateReads = new Tally();
    long stateWaitMillis;
    String statesLeft = "";
    /** Faults' restores and restarts, and lost payments asked again: all done before the recovery is awaited. */
    final ExecutorService background = Executors.newVirtualThreadPerTaskExecutor();
    long endAt;

    Run(Variant variant, long durationSeconds, long seed) {
        this.variant = variant;
        this.durationSeconds = durationSeconds;
        this.random = new SplittableRandom(seed);
        this.schedule = new FaultSchedule(this);
        this.faults = new FaultLog(schedule.deck());
        this.relay = variant == Variant.CHARGEONCE ? new WebhookRelay(instances) : null;
        this.catchUp = variant == Variant.CHARGEONCE ? new CatchUpWatch(instances) : null;
    }

    synchronized SplittableRandom rnd() {
        return random.split();
    }

    void switchFailed(String what) {
        log("FAULT SWITCH FAILED (" + variant.database + "): " + what);
        switchFailures.add(what);
    }

    Audit execute() throws Exception {
        log("=== " + variant.label + ": " + durationSeconds + " s of chaos ===");
        prepareDatabase();
        stripe.start();
        if (relay != null) {
            relay.start();
            stripe.webhooks("url=" + java.net.URLEncoder.encode(relay.url(), StandardCharsets.UTF_8) + "&secret=" + Keys.WEBHOOK_SECRET);
            log("webhooks: the stand-in delivers every event, signed, to " + relay.url() + ", one instance at random per delivery");
        } else {
            log("the naive control has no webhook endpoint: its stand-in delivers no events (no webhook faults, "
                    + "no 3-D Secure customer, no charge-state audit for it)");
        }
        int n = Integer.parseInt(opt("instances", "2"));
        int pgPort = Integer.parseInt(opt("pg-port", "5432"));
        int replicaPort = Integer.parseInt(opt("replica-port", "0"));
        boolean replicaForThis = replicaPort > 0 && (variant == Variant.NAIVE
                || Boolean.parseBoolean(opt("service-replica", "false")));
        for (int i = 0; i < n; i++) {
            instances.add(new Instance(variant, i, new TcpProxy(pgPort), replicaForThis ? new TcpProxy(replicaPort) : null,
                    stripe.base()));
        }
        for (Instance instance : instances) {
            // Ready, not merely alive: an instance that refuses its configuration (lease too short, ...) keeps
            // exiting, and one that never gets ready would turn the run into a test of nothing.
            if (!instance.start(Duration.ofSeconds(90))) {
                throw new IllegalStateException(instance.name() + " did not start (not ready within 90 s); see its log in "
                        + results.resolve("logs"));
            }
        }
        log(n + " instances up" + (!replicaForThis ? "" : variant == Variant.NAIVE ? ", key lookups on the lagging replica"
                : ", replica datasource configured (GETs; the idempotency path stays on the primary)"));

        long start = System.currentTimeMillis();
        faults.t0 = start;
        for (Instance instance : instances) {
            faults.event(instance.name() + " listens on :" + instance.port);
        }
        endAt = start + durationSeconds * 1000;
        Thread scheduler = Thread.ofVirtual().start(schedule::run);
        if (catchUp != null) {
            catchUp.start();
        }
        int clientCount = Integer.parseInt(opt("clients", "24"));
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < clientCount; i++) {
            SplittableRandom r = rnd();
            workers.add(Thread.ofVirtual().start(() -> clients.clientLoop(r)));
        }
        Thread progress = Thread.ofVirtual().start(() -> {
            while (System.currentTimeMillis() < endAt) {
                sleep(15_000);
                log(String.format(Locale.ROOT, "  %s: %d payments, %d requests, %d refunds (%d requests), faults %s",
                        variant.database, payments.size(), tally.requests.get(), refunds.size(), refundTally.requests.get(),
                        faults.counts));
            }
        });
        for (Thread w : workers) {
            w.join();
        }
        scheduler.join();
        progress.interrupt();
        long chaosMillis = System.currentTimeMillis() - start;

        // ---- the faults stop; every instance comes back; recovery finishes
        background.shutdown();
        background.awaitTermination(120, TimeUnit.SECONDS);
        for (Instance instance : instances) {
            instance.primaryProxy.restore();
            if (instance.replicaProxy != null) {
                instance.replicaProxy.restore();
            }
        }
        stripe.faults("latency_ms=0&fail_before=0&fail_after=0&drop_after=0&rate_limit=0&plan=");
        if (relay != null) {
            stripe.webhooks("duplicates=1&reorder=false&delay_ms=0&lose=false");
        }
        for (Instance instance : instances) {
            if (!instance.alive() && !instance.start(Duration.ofSeconds(90))) {
                switchFailed(instance.name() + " did not come back after the chaos");
            }
        }
        log("chaos over after " + chaosMillis / 1000 + " s; waiting for recovery to finish every row");
        long recoveryStart = System.currentTimeMillis();
        // Rows wait for their lease (10 s) after a crash, and for request-max-duration (15 s) after the key's last
        // send when Stripe answered 5xx, before a driver may look the key up: a few of those in a row still fit.
        long recoveryDeadline = recoveryStart + seconds(opt("recovery-timeout", "180s")) * 1000;
        long unfinished;
        while ((unfinished = unfinishedRows()) > 0 && System.currentTimeMillis() < recoveryDeadline) {
            sleep(500);
        }
        long recoveryMillis = System.currentTimeMillis() - recoveryStart;
        log("rows not terminal after " + recoveryMillis + " ms: " + unfinished);

        // ---- every client asks once more: the final answer must be the one it got first
        finalRound();

        // ---- the charges' states settle: customers act, events arrive (or the catch-up finds them), the sync
        // worker cancels abandoned 3-D Secure; then the watchers stop
        if (variant == Variant.CHARGEONCE) {
            awaitStates();
        }
        watchingStates = false;
        if (catchUp != null) {
            catchUp.stop(variant);
        }
        customers.shutdown();
        customers.awaitTermination(30, TimeUnit.SECONDS);

        Audit audit = Audit.of(this, chaosMillis, recoveryMillis, unfinished);
        Files.writeString(results.resolve(variant.database + "-faults.log"), String.join("\n", faults.events) + "\n");
        for (Instance instance : instances) {
            instance.kill9();
            instance.primaryProxy.close();
            if (instance.replicaProxy != null) {
                instance.replicaProxy.close();
            }
        }
        stripe.stop();
        if (relay != null) {
            relay.stop();
        }
        return audit;
    }

    /**
     * Waits (up to --state-timeout, 150 s) until the charges' states have settled: every customer acted, every
     * event Stripe made of a type the service follows (PaymentIntents' and refunds') is recorded by the service
     * (delivered, or found by its catch-up), no accepted charge is
     * still requires_action or processing (abandoned 3-D Secure is canceled by the sync worker after the
     * requires-action expiry), and every charge's state equals its PaymentIntent's at Stripe. What is still
     * left at the deadline is audited as it is.
     */
    void awaitStates() {
        long start = System.currentTimeMillis();
        long deadline = start + seconds(opt("state-timeout", "150s")) * 1000;
        String left;
        while ((left = statesLeft()) != null && System.currentTimeMillis() < deadline) {
            sleep(2_000);
        }
        stateWaitMillis = System.currentTimeMillis() - start;
        statesLeft = left == null ? "" : left;
        log(left == null ? "charge states settled after " + stateWaitMillis + " ms"
                : "charge states NOT settled after " + stateWaitMillis + " ms: " + left);
    }

    /** What the charges' states still wait for; null when nothing. */
    String statesLeft() {
        List<String> left = new ArrayList<>();
        int toAct = customersToAct.get();
        if (toAct > 0) {
            left.add(toAct + " customers still to authenticate");
        }
        try {
            // The events of the types the service follows (PaymentIntents' and refunds'): delivered, or found by
            // the catch-up, which runs every catch-up-interval on each instance (30 s after its start first).
            Map<String, String> made = stripe.events();
            Map<String, ChargeAudit.Intent> ledger = new java.util.HashMap<>();
            for (ChargeAudit.Intent pi : ChargeAudit.parseLedger(stripe.get("/_sandbox/ledger"))) {
                ledger.put(pi.id(), pi);
            }
            try (Connection c = Audit.connect(variant); Statement st = c.createStatement()) {
                Set<String> recorded = new java.util.HashSet<>();
                try (ResultSet rs = st.executeQuery("SELECT id FROM stripe_events")) {
                    while (rs.next()) {
                        recorded.add(rs.getString(1));
                    }
                }
                long paymentIntentEvents = 0;
                long paymentIntentMissing = 0;
                long refundEvents = 0;
                long refundMissing = 0;
                for (Map.Entry<String, String> e : made.entrySet()) {
                    boolean missing = !recorded.contains(e.getKey());
                    if (EventAudit.PAYMENT_INTENT_EVENTS.contains(e.getValue())) {
                        paymentIntentEvents++;
                        paymentIntentMissing += missing ? 1 : 0;
                    } else if (EventAudit.REFUND_EVENTS.contains(e.getValue())) {
                        refundEvents++;
                        refundMissing += missing ? 1 : 0;
                    }
                }
                if (paymentIntentMissing > 0) {
                    left.add(paymentIntentMissing + " of Stripe's " + paymentIntentEvents + " PaymentIntent events not recorded");
                }
                if (refundMissing > 0) {
                    left.add(refundMissing + " of Stripe's " + refundEvents + " refund events not recorded");
                }
                int pending = 0;
                int differ = 0;
                try (ResultSet rs = st.executeQuery("SELECT status, charge_status, payment_intent_id FROM stripe_intents"
                        + " WHERE payment_intent_id IS NOT NULL AND NOT needs_reconciliation")) {
                    while (rs.next()) {
                        String state = EventAudit.chargeState(rs.getString(1), rs.getString(2));
                        if (StateSeen.rank(state) < 3) {
                            pending++;
                        }
                        ChargeAudit.Intent pi = ledger.get(rs.getString(3));
                        if (pi == null || !state.equals(pi.state())) {
                            differ++;
                        }
                    }
                }
                if (pending > 0) {
                    left.add(pending + " charges still requires_action or processing");
                }
                if (differ > 0) {
                    left.add(differ + " charges whose state differs from their PaymentIntent's");
                }
                // Refunds: every row terminal (a parked one waits for an operator), every refund's state Stripe's.
                Map<String, String> refundStatus = new java.util.HashMap<>();
                for (RefundAudit.StripeRefund sr : RefundAudit.parseRefunds(stripe.get("/_sandbox/refunds"))) {
                    refundStatus.put(sr.id(), sr.status());
                }
                int refundsProcessing = 0;
                int refundsDiffer = 0;
                try (ResultSet rs = st.executeQuery("SELECT status, refund_status, stripe_refund_id FROM stripe_refunds"
                        + " WHERE NOT needs_reconciliation")) {
                    while (rs.next()) {
                        if ("processing".equals(rs.getString(1))) {
                            refundsProcessing++;
                        } else if (rs.getString(3) != null && !java.util.Objects.equals(rs.getString(2), refundStatus.get(rs.getString(3)))) {
                            refundsDiffer++;
                        }
                    }
                }
                if (refundsProcessing > 0) {
                    left.add(refundsProcessing + " refunds still processing");
                }
                if (refundsDiffer > 0) {
                    left.add(refundsDiffer + " refunds whose state differs from Stripe's");
                }
            }
        } catch (IOException | SQLException | RuntimeException e) {
            left.add("cannot tell: " + e);
        }
        return left.isEmpty() ? null : String.join(", ", left);
    }

    void prepareDatabase() throws SQLException {
        if (variant == Variant.NAIVE) {
            try (Connection c = Audit.connect(variant); Statement s = c.createStatement()) {
                // The naive table: enough columns for the same audit query; a unique key, as a careful-looking
                // naive design would have. It does not help: the Stripe call happens before the INSERT.
                s.execute("""
                        CREATE TABLE IF NOT EXISTS stripe_intents (
                            id text PRIMARY KEY, client_id text NOT NULL, idempotency_key text NOT NULL,
                            fingerprint text NOT NULL, status text NOT NULL, response_status integer,
                            response_body text, payment_intent_id text,
                            needs_reconciliation boolean NOT NULL DEFAULT false,
                            created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                            UNIQUE (client_id, idempotency_key))""");
            }
            // Let the lagging replica catch up with the new table before the naive service looks at it.
            sleep(Long.parseLong(opt("replica-delay-ms", "0")) + 1000);
        }
    }

    /** Rows recovery may still finish, refunds' included (a parked row waits for an operator: the audit judges it). */
    long unfinishedRows() {
        String unfinished = "SELECT count(*) FROM stripe_intents WHERE status NOT IN ('completed', 'failed', 'accepted') AND NOT needs_reconciliation";
        if (variant == Variant.CHARGEONCE) {
            unfinished = "SELECT (" + unfinished + ") + (SELECT count(*) FROM stripe_refunds WHERE status = 'processing'"
                    + " AND NOT needs_reconciliation)";
        }
        try (Connection c = Audit.connect(variant); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(unfinished)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            return Long.MAX_VALUE;
        }
    }

    Instance anyInstance(SplittableRandom r) {
        return instances.get(r.nextInt(instances.size()));
    }

    void finalRound() throws InterruptedException {
        // Every payment, the ones whose row was deleted included: a lost row is claimed again here at the latest.
        log("final round: every client asks once more for its " + payments.size() + " payments ("
                + payments.stream().filter(Payment::lost).count() + " of them lost a row)");
        Semaphore parallel = new Semaphore(32);
        long deadline = System.currentTimeMillis() + seconds(opt("final-round-timeout", "120s")) * 1000;
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (Payment p : List.copyOf(payments)) {
                pool.submit(() -> {
                    parallel.acquireUninterruptibly();
                    try {
                        SplittableRandom r = new SplittableRandom(p.key.hashCode());
                        while (System.currentTimeMillis() < deadline) {
                            Answer a = clients.send(p, p.body, r, Duration.ofSeconds(15));
                            clients.record(p, a);
                            if (a.isFinal() || a.isParked()) {
                                return;
                            }
                            sleep(300);
                        }
                    } finally {
                        parallel.release();
                    }
                });
            }
        }
        if (refunds.isEmpty()) {
            return;
        }
        // Then every refund, once more with its key: a refund that never got a final answer gets one here.
        log("final round: every client asks once more for its " + refunds.size() + " refunds");
        long refundDeadline = System.currentTimeMillis() + seconds(opt("final-round-timeout", "120s")) * 1000;
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            for (Refund f : List.copyOf(refunds)) {
                pool.submit(() -> {
                    parallel.acquireUninterruptibly();
                    try {
                        SplittableRandom r = new SplittableRandom(f.key.hashCode());
                        while (System.currentTimeMillis() < refundDeadline) {
                            Answer a = refundClients.sendRefund(f, f.body, anyInstance(r), Duration.ofSeconds(15));
                            f.record(a);
                            if (Refund.isFinal(a) || Refund.isParked(a)) {
                                return;
                            }
                            sleep(300);
                        }
                    } finally {
                        parallel.release();
                    }
                });
            }
        }
    }
}

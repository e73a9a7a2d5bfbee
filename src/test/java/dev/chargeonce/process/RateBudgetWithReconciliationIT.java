package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ReconciliationRuns;
import dev.chargeonce.testing.ReconciliationRuns.Run;
import dev.chargeonce.testing.SandboxControl;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import dev.chargeonce.testing.TestKeys;
import dev.chargeonce.testing.TestOperators;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Reconciliation running through a burst of charges, against a Stripe sandbox account's limits: 25 requests a second
 * over every endpoint together and 25 PaymentIntent creates a second. The budget gives the creates 16 a second and
 * the reads 4 (with the refunds' 1, under the global 25 with headroom). 300 distinct charges at concurrency 64 over
 * two instances are sent alone, then again while a reconciliation of 6,000 PaymentIntents made outside the service
 * reads (60 pages: 15 s at 4 reads a second, most of the burst). Reconciliation reads in the reads' budget and takes no
 * permit a charge needed: the charges go at the rate they had alone, each made exactly once, Stripe refuses next to
 * none of the requests it receives (so never more than 25 in any second in all), and reconciliation still finishes,
 * with every finding once.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RateBudgetWithReconciliationIT {

    private static final int CHARGES = 300;
    private static final int CONCURRENCY = 64;
    /** Stripe's limits in a sandbox account: per endpoint, and over every endpoint together. */
    private static final int STRIPE_ENDPOINT_LIMIT = 25;
    private static final int STRIPE_GLOBAL_LIMIT = 25;
    private static final double CREATES_RATE = 16;
    private static final double READS_RATE = 4;
    /** Not used here; its schedule idles, but the rates together must stay under the global limit. */
    private static final double REFUNDS_RATE = 1;
    private static final int OUTSIDE = 6_000;
    private static final int GHOSTS = 10;

    ProcessEnvironment env;
    ReconciliationRuns runs;
    SandboxControl stripe;
    ServiceProcess instanceA;
    ServiceProcess instanceB;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);
    final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void start() {
        env = new ProcessEnvironment("budgetrecon");
        runs = new ReconciliationRuns(env);
        stripe = new SandboxControl(env.stripe.baseUrl());
        Map<String, String> config = env.serviceConfig();
        config.put("chargeonce.stripe.budget.rates.\"payment_intents.create\"", Double.toString(CREATES_RATE));
        config.put("chargeonce.stripe.budget.rates.reads", Double.toString(READS_RATE));
        config.put("chargeonce.stripe.budget.rates.\"refunds.create\"", Double.toString(REFUNDS_RATE));
        // The account's limit over all endpoints: the three rates fit under it, as the budget demands at start-up.
        config.put("chargeonce.stripe.budget.global-rate", Double.toString(CREATES_RATE + READS_RATE + REFUNDS_RATE));
        // The operator's run is the only one: the schedule's first pass comes after the test, and the run goes on in
        // one pass of the instance it was asked of (its own pacing and back-off as in production).
        config.put("chargeonce.reconciliation.enabled", "true");
        config.put("chargeonce.reconciliation.initial-delay", "10m");
        config.put("chargeonce.reconciliation.interval", "10m");
        config.put("chargeonce.auth.operators", TestOperators.config());
        instanceA = ServiceProcess.start("budget-reconcile-a", config);
        instanceB = ServiceProcess.start("budget-reconcile-b", config);
    }

    @AfterAll
    void stop() throws IOException {
        for (ServiceProcess instance : new ServiceProcess[] {instanceA, instanceB}) {
            if (instance != null) {
                instance.close();
            }
        }
        if (stripe != null) {
            stripe.unlimit();
        }
        if (env != null) {
            env.close();
        }
    }

    @Test
    void reconciliationDuringABurstTakesNoPermitAChargeNeededAndStillFinishes() throws Exception {
        long now = Instant.now().getEpochSecond();
        env.stripe.seed(OUTSIDE, now - 7200, now - 3600, "succeeded", Map.of("order", "not-ours"));
        env.stripe.seed(GHOSTS, now - 5400, now - 5300, "succeeded",
                Map.of("chargeonce_key", "ghost-identity", "chargeonce_client_id", "acme"));
        // Warm instances, as in RateBudgetIT: a cold JVM's first calls leave late and arrive together.
        for (ServiceProcess instance : new ServiceProcess[] {instanceA, instanceB}) {
            for (int i = 0; i < 10; i++) {
                assertEquals(201, client.post(instance.uri("/v1/charges"), "warm-" + UUID.randomUUID(), ChargeClient.VISA,
                        Duration.ofSeconds(30)).status());
            }
        }
        Thread.sleep(1000);
        stripe.limit("default=" + STRIPE_ENDPOINT_LIMIT + "&global=" + STRIPE_GLOBAL_LIMIT
                + "&payment_intents.create=" + STRIPE_ENDPOINT_LIMIT);

        // The same burst without reconciliation first: the rate this machine, loaded as it is now, gives the charges.
        Burst alone = burst("alone");
        System.out.println("burst alone: " + alone);
        alone.assertWithinStripesLimits();

        stripe.clearLimitRecords();
        long runId = queueRun(instanceA, Instant.ofEpochSecond(now - 3 * 3600), Instant.ofEpochSecond(now - 1800));
        long runStarted = System.nanoTime();
        runs.await(runId, run -> run.pages() >= 5, Duration.ofSeconds(60), "reconciliation to be reading");
        Run atBurst = runs.run(runId);
        long readsBefore = stripe.limits().at("/all/admitted").asLong();
        Burst during = burst("during");
        Run afterBurst = runs.run(runId);
        long readsDuringBurst = during.limits().at("/all/admitted").asLong() - during.createsAdmitted() - readsBefore;
        int pagesDuringBurst = afterBurst.pages() - atBurst.pages();
        System.out.printf("burst with reconciliation: %s; Stripe admitted %d reads meanwhile (%.1f a second, the reads' budget"
                + " %.0f), reconciliation checkpointed %d pages%n", during, readsDuringBurst, readsDuringBurst / during.seconds(), READS_RATE, pagesDuringBurst);

        // Reconciliation's floor alone (8% of the reads' 4 a second) would take over three minutes: it borrows the
        // reads the charges leave idle.
        Run done = runs.awaitOrAsItStands(runId, Run::over, Duration.ofSeconds(120));
        double runSeconds = (System.nanoTime() - runStarted) / 1e9;
        JsonNode end = stripe.limits();
        long admittedAll = end.at("/all/admitted").asLong();
        long refusedAll = sum(end.at("/all/refused"));
        System.out.printf("reconciliation: %s after %d pages in %.1f s (%.2f pages a second, the reads' budget %.0f); all requests"
                        + " Stripe received since it started: %d admitted, %d refused %s, at most %d in any second (limit %d);"
                        + " permits taken %s%n",
                done.status(), done.pages(), runSeconds, done.pages() / runSeconds, READS_RATE, admittedAll, refusedAll,
                end.at("/all/refused"), end.at("/all/max_in_any_second").asInt(), STRIPE_GLOBAL_LIMIT, permits());

        during.assertWithinStripesLimits();
        assertTrue(end.at("/all/max_in_any_second").asInt() <= STRIPE_GLOBAL_LIMIT, "requests in any second: " + end.get("all"));
        assertTrue(refusedAll * 20 <= admittedAll + refusedAll, "next to none of the requests Stripe receives, reads and creates,"
                + " are refused: " + refusedAll + " of " + (admittedAll + refusedAll) + " " + end.get("all"));
        // Reconciliation took none of the charges' throughput: they went at the rate the same burst had alone (the
        // budget's 16, less what the machine's load takes: a stalled process sends late whatever the budget), not at
        // what reconciliation left of a shared one.
        double expected = Math.min(CREATES_RATE, alone.createsPerSecond());
        assertTrue(during.createsPerSecond() >= 0.9 * expected, String.format("the charges kept their rate while reconciliation"
                + " read: %.1f a second, %.1f alone", during.createsPerSecond(), alone.createsPerSecond()));
        // ...and reconciliation went on meanwhile, and finished, with what is there, each once (as in ReconciliationIT).
        assertTrue(pagesDuringBurst >= 10, "reconciliation read on during the burst: " + atBurst + " then " + afterBurst);
        assertEquals("completed", done.status(), "reconciliation finishes within two minutes of the burst: " + done);
        // Out of the burst it has the reads the other classes leave idle, not only its floor (0.32 a second): at least
        // half of the reads' rate over the whole run, the burst included.
        assertTrue(done.pages() / runSeconds >= 0.5 * READS_RATE, String.format("reconciliation borrows the idle reads:"
                + " %.2f pages a second of %.0f", done.pages() / runSeconds, READS_RATE));
        assertEquals(GHOSTS, runs.findings("unknown_payment_intent"), "the payments of a key this service never saw, each once");
        assertEquals(OUTSIDE, runs.findings("made_outside"), "the account's payments made outside the service, each once");
    }

    /**
     * What one burst came to, as Stripe saw it: its creates are the only ones since the limits' records were last
     * cleared, so their rate is measured where Stripe counts them, from the first to the last.
     */
    record Burst(double seconds, int serviceUnavailable, JsonNode limits) {

        JsonNode creates() {
            return limits.at("/endpoints/payment_intents.create");
        }

        long createsAdmitted() {
            return creates().get("admitted").asLong();
        }

        long createsRefused() {
            return sum(creates().get("refused"));
        }

        double createsPerSecond() {
            return (createsAdmitted() - 1) / (creates().get("first_to_last_ms").asLong() / 1000.0);
        }

        /**
         * Within Stripe's limits by construction (the sandbox refuses beyond them): what the budget must show is that
         * next to nothing was refused, as in RateBudgetIT.
         */
        void assertWithinStripesLimits() {
            assertTrue(creates().get("max_in_any_second").asInt() <= STRIPE_ENDPOINT_LIMIT, "creates in any second: " + creates());
            assertTrue(createsRefused() * 20 <= createsAdmitted() + createsRefused(), "next to none of the creates Stripe receives"
                    + " are refused: " + createsRefused() + " of " + (createsAdmitted() + createsRefused()));
        }

        @Override
        public String toString() {
            return String.format("%d charges in %.1f s; Stripe admitted the creates at %.1f a second (budget %.0f), %d admitted and"
                    + " %d refused, at most %d in any second; %d answers 503", CHARGES, seconds, createsPerSecond(), CREATES_RATE,
                    createsAdmitted(), createsRefused(), creates().get("max_in_any_second").asInt(), serviceUnavailable);
        }
    }

    /** {@link #CHARGES} distinct charges at {@link #CONCURRENCY} over both instances, each made exactly once. */
    private Burst burst(String name) throws Exception {
        AtomicInteger serviceUnavailable = new AtomicInteger();
        List<String> keys = new ArrayList<>();
        List<Future<String>> outcomes = new ArrayList<>();
        long started = System.nanoTime();
        try (ExecutorService clients = Executors.newFixedThreadPool(CONCURRENCY)) {
            for (int i = 0; i < CHARGES; i++) {
                String key = name + "-" + UUID.randomUUID();
                keys.add(key);
                ServiceProcess instance = i % 2 == 0 ? instanceA : instanceB;
                outcomes.add(clients.submit(() -> RateBudgetIT.chargeHonouringRetryAfter(client, instance, key, serviceUnavailable)));
            }
            for (Future<String> outcome : outcomes) {
                assertEquals("201", outcome.get(), "every charge goes through, its 503s honoured");
            }
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        JsonNode limits = stripe.limits();
        for (String key : keys) {
            assertEquals(1, env.stripe.intentsForKey(TestKeys.identity(TestClients.ACME, key)).size(), "one PaymentIntent for " + key);
        }
        return new Burst(seconds, serviceUnavailable.get(), limits);
    }

    static long sum(JsonNode counts) {
        long total = 0;
        for (JsonNode count : counts) {
            total += count.asLong();
        }
        return total;
    }

    /** The budget's permits by endpoint and class, over both instances (its metric). */
    private Map<String, Long> permits() throws Exception {
        Map<String, Long> permits = new TreeMap<>();
        for (ServiceProcess instance : new ServiceProcess[] {instanceA, instanceB}) {
            String metrics = http.send(HttpRequest.newBuilder(instance.managementUri("/q/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            for (String line : metrics.split("\n")) {
                if (line.startsWith("chargeonce_stripe_budget_permits_total{")) {
                    String labels = line.substring(line.indexOf('{') + 1, line.indexOf('}'));
                    String endpoint = labels.replaceAll(".*endpoint=\"([^\"]*)\".*", "$1");
                    String trafficClass = labels.replaceAll(".*class=\"([^\"]*)\".*", "$1");
                    long count = (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                    if (count > 0) {
                        permits.merge(endpoint + "/" + trafficClass, count, Long::sum);
                    }
                }
            }
        }
        return permits;
    }

    private long queueRun(ServiceProcess instance, Instant from, Instant to) throws Exception {
        HttpResponse<String> queued = http.send(HttpRequest.newBuilder(instance.uri("/admin/v1/reconciliation/runs"))
                .header("Authorization", TestOperators.basic()).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"from\": \"" + from + "\", \"to\": \"" + to + "\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(202, queued.statusCode(), queued.body());
        return Long.parseLong(queued.body().replaceAll(".*\"id\":(\\d+).*", "$1"));
    }

}

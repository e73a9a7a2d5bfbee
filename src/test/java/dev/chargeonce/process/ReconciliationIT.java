package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ReconciliationRuns;
import dev.chargeonce.testing.ReconciliationRuns.Run;
import dev.chargeonce.testing.SandboxControl;
import dev.chargeonce.testing.ServiceProcess;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Reconciliation's bounded cost, with real processes: 50,000 PaymentIntents in the window, Stripe answering 429
 * now and then, and the instance running the job killed with {@code kill -9} half-way. The run goes on from its
 * checkpoint on the next instance (it is not restarted), respects the 429s, and finds exactly what is there.
 */
class ReconciliationIT {

    static final int PAYMENT_INTENTS = 50_000;
    static final int GHOSTS = 10;
    /** 50,010 PaymentIntents are 501 pages; each later phase adds one; a page in flight at the kill is read twice. */
    static final int PAGES_NEEDED = (PAYMENT_INTENTS + GHOSTS + 99) / 100 + 4;
    static final String OPERATOR_PASSWORD = "ops-test-password";

    ProcessEnvironment env;
    ReconciliationRuns runs;
    ServiceProcess first;
    ServiceProcess second;
    final HttpClient http = HttpClient.newHttpClient();

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("reconcile");
        runs = new ReconciliationRuns(env);
    }

    @AfterEach
    void tearDown() throws Exception {
        for (ServiceProcess service : new ServiceProcess[] {first, second}) {
            if (service != null) {
                service.close();
            }
        }
        env.close();
    }

    Map<String, String> config() {
        Map<String, String> config = env.serviceConfig();
        config.put("chargeonce.reconciliation.enabled", "true");
        config.put("chargeonce.reconciliation.interval", "1s");
        config.put("chargeonce.reconciliation.initial-delay", "1s");
        config.put("chargeonce.reconciliation.lease", "4s");
        config.put("chargeonce.reconciliation.pages-per-pass", "40");
        config.put("chargeonce.reconciliation.requests-per-second", "60");
        config.put("chargeonce.reconciliation.rate-limit-backoff", "200ms");
        // The scheduled window stays small: this test's run is the one asked for.
        config.put("chargeonce.reconciliation.first-window", "2m");
        config.put("chargeonce.auth.operators", dev.chargeonce.testing.TestOperators.config());
        return config;
    }

    @Test
    void fiftyThousandPaymentIntentsAreReconciledWithinThePageBudgetThroughAKillAndRateLimits() throws Exception {
        long now = Instant.now().getEpochSecond();
        env.stripe.seed(PAYMENT_INTENTS, now - 7200, now - 3600, "succeeded", Map.of("order", "not-ours"));
        env.stripe.seed(GHOSTS, now - 5400, now - 5300, "succeeded",
                Map.of("chargeonce_key", "ghost-identity", "chargeonce_client_id", "acme"));
        SandboxControl stripe = new SandboxControl(env.stripe.baseUrl());
        stripe.faults("list_rate_limit=3");

        first = ServiceProcess.start("reconcile-a", config());
        HttpResponse<String> queued = http.send(HttpRequest.newBuilder(first.uri("/admin/v1/reconciliation/runs"))
                .header("Authorization", basic()).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"from\": \"" + Instant.ofEpochSecond(now - 3 * 3600) + "\", \"to\": \""
                        + Instant.ofEpochSecond(now - 1800) + "\"}")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(202, queued.statusCode(), queued.body());
        // The packaged service's operator surfaces, as a browser meets them: never cached, the console never framed.
        assertEquals("no-store", queued.headers().firstValue("Cache-Control").orElse(null));
        HttpResponse<String> console = http.send(HttpRequest.newBuilder(first.uri("/console")).header("Authorization", basic()).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, console.statusCode(), console.body());
        assertTrue(console.headers().firstValue("Content-Security-Policy").orElse("").contains("frame-ancestors 'none'"),
                console.headers().toString());
        assertTrue(console.headers().firstValue("Set-Cookie").orElse("").startsWith("__Host-chargeonce-console="),
                console.headers().toString());
        long runId = Long.parseLong(queued.body().replaceAll(".*\"id\":(\\d+).*", "$1"));

        // Half-way through the PaymentIntents, the instance running it dies.
        runs.await(runId, run -> run.pages() >= 150, Duration.ofSeconds(120), "the run to read 150 pages");
        first.kill9();
        Run atKill = runs.run(runId);
        assertEquals("running", atKill.status(), "killed mid-run: " + atKill);
        assertTrue(atKill.pages() < PAGES_NEEDED - 100, "killed well before the end: " + atKill);

        second = ServiceProcess.start("reconcile-b", config());
        Run done = runs.await(runId, run -> run.status().equals("completed") || run.status().equals("failed"), Duration.ofSeconds(240),
                "the run to finish on the second instance");
        assertEquals("completed", done.status(), "run: " + done);
        assertTrue(done.pages() >= PAGES_NEEDED - 4 && done.pages() <= PAGES_NEEDED + 3,
                "went on from its checkpoint, not from the start: " + done.pages() + " pages for " + PAGES_NEEDED + " needed");
        assertTrue(done.rateLimited() >= 3, "Stripe's 429s were waited out: " + done);
        assertEquals(GHOSTS, runs.findings("unknown_payment_intent"), "the ten payments of a key this service never saw, each once");
        assertEquals(PAYMENT_INTENTS, runs.findings("made_outside"), "the account's other payments, made outside the service, each once");
        System.out.printf("reconciliation of %d PaymentIntents: killed at page %d, completed on the second instance after %d pages"
                + " (%d needed), %d rate-limited reads waited out%n", PAYMENT_INTENTS + GHOSTS, atKill.pages(), done.pages(),
                PAGES_NEEDED, done.rateLimited());
    }

    static String basic() {
        return "Basic " + Base64.getEncoder().encodeToString(("ops:" + OPERATOR_PASSWORD).getBytes(StandardCharsets.UTF_8));
    }
}

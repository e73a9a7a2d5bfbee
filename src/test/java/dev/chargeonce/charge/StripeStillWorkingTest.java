package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import dev.chargeonce.recovery.RecoveryWorker;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Stripe keeps working on a request after the service gave up on it (read timeout), and a later try of the same
 * key meets Stripe's edge failing, or a 429. Absence may be concluded only once Stripe is provably done with the
 * key; a 503 may say "nothing was charged" only when no try of the request can have reached Stripe.
 */
@QuarkusTest
@TestProfile(StripeStillWorkingTest.ShortReadTimeout.class)
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class StripeStillWorkingTest {

    /** The service waits 1 s for Stripe; the sandbox's slow requests take 3 s and then charge anyway. */
    public static class ShortReadTimeout implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("chargeonce.stripe.read-timeout", "1s",
                    "chargeonce.stripe.request-max-duration", "4s",
                    "chargeonce.idempotency.lease", "10s");
        }
    }

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Inject
    RecoveryWorker worker;

    @Inject
    io.micrometer.core.instrument.MeterRegistry meters;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
    }

    @AfterEach
    void tearDown() {
        stripe.awaitIdle(Duration.ofSeconds(10));
        stripe.clearFaults();
        stripe.forgetSeeded();
    }

    @Test
    void anEdge5xxWhileTheFirstTryStillRunsAtStripeNeverLeadsToASecondAttempt() throws Exception {
        String key = UUID.randomUUID().toString();
        // Try 1 runs 3 s at Stripe (the service stops waiting after 1 s); try 2 meets Stripe's edge failing.
        stripe.plan("slow:3000", "edge");
        Response first = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertEquals(503, first.statusCode(), first.asString());

        Response last = first;
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (last.statusCode() != 201 && System.nanoTime() < deadline) {
            assertTrue(last.statusCode() == 503 || last.statusCode() == 409, "not final yet: " + last.asString());
            Thread.sleep(200);
            last = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        }
        assertEquals(201, last.statusCode(), last.asString());
        stripe.awaitIdle(Duration.ofSeconds(10));
        List<JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size(), "the first try's PaymentIntent is the only one: " + intents);
        assertEquals(intents.get(0).get("id").asText(), last.jsonPath().getString("payment_intent"));
        assertEquals("1", intents.get(0).get("metadata").get("chargeonce_attempt").asText(), "no second Stripe attempt");
    }

    @Test
    void a429AfterATryThatTimedOutDoesNotSayNothingWasCharged() throws Exception {
        String key = UUID.randomUUID().toString();
        // Try 1 reaches Stripe and charges after the service stopped waiting; try 2 is rate limited.
        stripe.plan("slow:3000", "rate_limit");
        Response first = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertEquals(503, first.statusCode(), first.asString());
        String message = first.jsonPath().getString("error.message");
        assertFalse(message.contains("nothing was charged"), "an earlier try may have charged: " + message);
        assertEquals("stripe_outcome_unknown", first.jsonPath().getString("error.code"));

        stripe.awaitIdle(Duration.ofSeconds(10));
        assertEquals(1, stripe.intentsFor(ACME, key).size(), "the timed-out try did charge");
        Response last = first;
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (last.statusCode() != 201 && System.nanoTime() < deadline) {
            Thread.sleep(200);
            last = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        }
        assertEquals(201, last.statusCode(), last.asString());
        assertEquals(1, stripe.intentsFor(ACME, key).size());
    }

    @Test
    void aRateLimitOnEveryTryOfANewKeySaysNothingWasCharged() {
        String key = UUID.randomUUID().toString();
        // Stripe answers 429 to every try within the request's wait (the service sends the key again after each).
        stripe.faults("rate_limit=100000");
        Response first;
        try {
            first = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        } finally {
            stripe.clearFaults();
        }
        assertEquals(503, first.statusCode(), first.asString());
        assertEquals("stripe_rate_limited", first.jsonPath().getString("error.code"));
        assertTrue(first.jsonPath().getString("error.message").contains("nothing was charged"));
        assertEquals(0, stripe.intentsFor(ACME, key).size());
    }

    @Test
    void afterAStripe500TheWorkerMovesOnOnlyOnceNoRequestOfTheKeyCanStillRun() throws Exception {
        String key = UUID.randomUUID().toString();
        // Stripe answers 500 first-hand (nothing charged); the client goes away. No replay will come, since nobody
        // re-sends: only time (request-max-duration, 4 s here) can prove that no request of the key still runs.
        stripe.plan("fail_before");
        long start = System.nanoTime();
        Response first = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertEquals(503, first.statusCode(), first.asString());
        double recoveryPermits = recoveryCreatePermits();

        worker.recoverOnce();
        assertEquals(0, stripe.intentsFor(ACME, key).size(), "too early: the worker leaves the row alone");
        long deadline = start + Duration.ofSeconds(30).toNanos();
        while (stripe.intentsFor(ACME, key).isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(200);
            worker.recoverOnce();
        }
        long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
        // The worker's sends took the recovery class's permits of the account's rate budget, not the foreground's.
        assertTrue(recoveryCreatePermits() > recoveryPermits, "the worker's create took a recovery permit");
        List<JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size(), "the worker finished the charge");
        assertEquals("2", intents.get(0).get("metadata").get("chargeonce_attempt").asText(), "with the next Stripe key");
        assertTrue(elapsedMillis >= 4_000, "not before request-max-duration after the last send: " + elapsedMillis + " ms");

        Response replay = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertEquals(201, replay.statusCode(), replay.asString());
        assertEquals(intents.get(0).get("id").asText(), replay.jsonPath().getString("payment_intent"));
    }

    /**
     * A Stripe 500 after charging on a busy account: listing the key's window (2,500 other PaymentIntents, 26 pages
     * at 0.5 s) takes longer than the 10 s lease, while the recovery worker runs on two instances. The lookup keeps
     * its lease; it is not fenced out by a takeover and started over, again and again, with a wider window each time.
     */
    @Test
    void aLookupLongerThanTheLeaseKeepsItsLeaseAndResolvesTheCharge() throws Exception {
        long now = java.time.Instant.now().getEpochSecond();
        stripe.seed("count=2500&created_from=" + (now - 60) + "&created_to=" + now + "&metadata[order]=other");
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_after");
        Response first = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertEquals(503, first.statusCode(), first.asString());
        stripe.faults("list_latency_ms=500");

        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        List<Thread> instances = new java.util.ArrayList<>();
        for (int i = 0; i < 2; i++) {
            instances.add(Thread.ofPlatform().name("recovery-instance-" + i).start(() -> {
                while (!stop.get()) {
                    try {
                        worker.recoverOnce();
                        Thread.sleep(1000);
                    } catch (InterruptedException e) {
                        return;
                    } catch (RuntimeException e) {
                        // as the scheduled pass does: logged, and the next pass goes on
                    }
                }
            }));
        }
        Response retried;
        try {
            // The client's retry probes, gets the replayed 500 and pages through the window (longer than its lease).
            retried = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        } finally {
            stop.set(true);
            for (Thread t : instances) {
                t.join(60_000);
            }
        }
        assertEquals(201, retried.statusCode(), "the lookup that outlived the lease finished the charge: " + retried.asString());
        List<JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size(), "never charged twice");
        assertEquals(intents.get(0).get("id").asText(), retried.jsonPath().getString("payment_intent"));
    }

    private double recoveryCreatePermits() {
        var counter = meters.find("chargeonce.stripe.budget.permits").tag("endpoint", "payment_intents.create")
                .tag("class", "recovery").counter();
        return counter == null ? 0 : counter.count();
    }
}

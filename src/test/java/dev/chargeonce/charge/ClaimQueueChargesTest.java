package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * One place before the claim, and a slow Stripe: the place is freed when a charge's claim commits, so the next charges
 * claim and reach Stripe while the first still waits for its answer. A place held across the Stripe call would put
 * them one after the other.
 */
@QuarkusTest
@TestProfile(ClaimQueueChargesTest.OnePlace.class)
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ClaimQueueChargesTest {

    public static class OnePlace implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            // No recovery worker: Stripe's create count must be these charges' alone, not rows left by other tests.
            return Map.of("chargeonce.admission.claims-at-once", "1", "chargeonce.recovery.enabled", "false");
        }
    }

    private static final int CHARGES = 3;
    private static final long STRIPE_MILLIS = 5_000; // under the read timeout (8 s)

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Test
    void chargesWaitingForAStripeAnswerHoldNoPlaceBeforeTheClaim() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        long createsBefore = stripe.createRequests();
        stripe.faults("latency_ms=" + STRIPE_MILLIS);
        // A thread per client: the common pool has one thread on a two-core machine, and would send them in turn.
        ExecutorService clients = Executors.newFixedThreadPool(CHARGES);
        try {
            long sent = System.nanoTime();
            List<CompletableFuture<Response>> charges = new ArrayList<>();
            for (int i = 0; i < CHARGES; i++) {
                String key = UUID.randomUUID().toString();
                charges.add(CompletableFuture.supplyAsync(() -> ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA), clients));
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            long firstAtStripe = 0;
            long atStripe;
            while ((atStripe = stripe.createRequests() - createsBefore) < CHARGES) {
                assertTrue(System.nanoTime() < deadline, "only " + atStripe + " of " + CHARGES + " charges reached Stripe");
                if (atStripe > 0 && firstAtStripe == 0) {
                    firstAtStripe = System.nanoTime();
                }
                Thread.sleep(20);
            }
            long allAtStripe = System.nanoTime();
            firstAtStripe = firstAtStripe == 0 ? allAtStripe : firstAtStripe;
            for (CompletableFuture<Response> charge : charges) {
                Response answer = charge.get(60, TimeUnit.SECONDS);
                assertEquals(201, answer.statusCode(), answer.asString());
            }
            // The last charge was at Stripe before the first's Stripe answer could have come back: none waited for
            // another's answer (had each held its place across Stripe, the last would have come two Stripe calls after
            // the first). Measured from the first arrival, not from the sending, so that a machine slow to carry the
            // requests to their claims does not look like a queue.
            assertTrue(allAtStripe - firstAtStripe < TimeUnit.MILLISECONDS.toNanos(STRIPE_MILLIS),
                    "the charges reached Stripe one after another: the last " + TimeUnit.NANOSECONDS.toMillis(allAtStripe - firstAtStripe)
                            + " ms after the first (" + TimeUnit.NANOSECONDS.toMillis(allAtStripe - sent) + " ms after sending)");
        } finally {
            clients.shutdownNow();
            stripe.clearFaults();
        }
    }
}

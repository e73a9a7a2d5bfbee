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
            while (stripe.createRequests() - createsBefore < CHARGES) {
                assertTrue(System.nanoTime() < deadline, "only " + (stripe.createRequests() - createsBefore)
                        + " of " + CHARGES + " charges reached Stripe");
                Thread.sleep(20);
            }
            long allAtStripe = System.nanoTime();
            for (CompletableFuture<Response> charge : charges) {
                Response answer = charge.get(60, TimeUnit.SECONDS);
                assertEquals(201, answer.statusCode(), answer.asString());
            }
            // Every charge was at Stripe well before the second could have been, had each waited for the one before it
            // (two Stripe calls): none waited for another's answer.
            assertTrue(allAtStripe - sent < TimeUnit.MILLISECONDS.toNanos(2 * STRIPE_MILLIS - 2_000),
                    "the charges reached Stripe one after another: " + TimeUnit.NANOSECONDS.toMillis(allAtStripe - sent) + " ms");
        } finally {
            clients.shutdownNow();
            stripe.clearFaults();
        }
    }
}

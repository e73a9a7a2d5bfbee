package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * A 409's Retry-After says when the first request is likely done (the recent p95 of a Stripe call), not when its
 * lease runs out: with a 30 s lease and charges that take milliseconds, a duplicate waited 30 s for nothing.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class InFlightRetryAfterTest {

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @ConfigProperty(name = "chargeonce.idempotency.lease")
    Duration lease;

    @Test
    void aDuplicateIsToldToComeBackWhenChargesUsuallyFinishNotWhenTheLeaseEnds() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        // The recent calls are fast: 256 of them fill the window the p95 is taken over.
        for (int i = 0; i < 256; i++) {
            assertEquals(201, ChargeApiTest.post(ACME_KEY, UUID.randomUUID().toString(), ChargeApiTest.VISA).statusCode());
        }
        String key = UUID.randomUUID().toString();
        long creates = stripe.createRequests();
        stripe.faults("latency_ms=3000");
        try {
            CompletableFuture<Response> first = CompletableFuture.supplyAsync(() -> ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA));
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (stripe.createRequests() == creates) {
                assertTrue(System.nanoTime() < deadline, "the first request never reached Stripe");
                Thread.sleep(20);
            }
            Response duplicate = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
            assertEquals(409, duplicate.statusCode(), duplicate.asString());
            int retryAfter = Integer.parseInt(duplicate.header("Retry-After"));
            assertTrue(lease.toSeconds() >= 10, "the point needs a lease far longer than a charge: " + lease);
            assertEquals(1, retryAfter, "recent charges took milliseconds: come back in a second, not in " + lease.toSeconds() + " s");
            assertEquals(201, first.get(30, TimeUnit.SECONDS).statusCode());
        } finally {
            stripe.clearFaults();
        }
    }
}

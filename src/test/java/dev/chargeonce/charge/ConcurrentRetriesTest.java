package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/** Check-then-act cannot happen here: 32 requests with one key race, one charge comes out. */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ConcurrentRetriesTest {

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @TestHTTPResource("/v1/charges")
    URI charges;

    @Test
    void thirtyTwoThreadsPostingOneKeyMakeOnePaymentIntent() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        // Slow Stripe a little so that the racing requests really overlap the one that holds the claim.
        stripe.faults("latency_ms=300");
        long createsBefore = stripe.createRequests();
        String key = UUID.randomUUID().toString();
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        HttpRequest request = HttpRequest.newBuilder(charges)
                .header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(ChargeApiTest.VISA)).build();

        int threads = 32;
        CountDownLatch start = new CountDownLatch(1);
        List<Future<HttpResponse<String>>> answers = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            for (int i = 0; i < threads; i++) {
                answers.add(pool.submit(() -> {
                    start.await();
                    return http.send(request, HttpResponse.BodyHandlers.ofString());
                }));
            }
            start.countDown();
        }
        stripe.clearFaults();

        String created = null;
        int conflicts = 0;
        for (Future<HttpResponse<String>> f : answers) {
            HttpResponse<String> r = f.get();
            assertTrue(r.statusCode() == 201 || r.statusCode() == 409, "only 201 or 409, got " + r.statusCode() + " " + r.body());
            if (r.statusCode() == 201) {
                if (created == null) {
                    created = r.body();
                }
                assertEquals(created, r.body(), "every 201 carries the same charge");
            } else {
                conflicts++;
                assertTrue(r.headers().firstValue("Retry-After").isPresent(), "409 carries Retry-After");
            }
        }
        assertTrue(created != null, "one request charged");
        assertTrue(conflicts > 0, "the race really happened: some requests found the key in flight");

        String chargeId = new com.fasterxml.jackson.databind.ObjectMapper().readTree(created).get("id").asText();
        assertEquals(1, stripe.intentsFor(ACME, key).size(), "Stripe saw exactly one PaymentIntent");
        assertEquals(createsBefore + 1, stripe.createRequests(), "and exactly one create request: only the claim holder called");
        long creates = stripe.createRequests();
        for (int i = 0; i < 5; i++) {
            HttpResponse<String> replay = http.send(request, HttpResponse.BodyHandlers.ofString());
            assertEquals(201, replay.statusCode());
            assertEquals(created, replay.body());
            assertEquals("true", replay.headers().firstValue("Idempotent-Replayed").orElse(null));
        }
        assertEquals(creates, stripe.createRequests());
    }
}

package dev.chargeonce.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.testing.SandboxControl;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The sandbox's rate limits over HTTP, as the service meets them: refused requests answer Stripe's 429, are never
 * executed and never bind their idempotency key. A burst's exact split (25 admitted, 5 refused) is asserted when
 * the burst reached the sandbox within one second, which a loaded machine may not manage; what must hold whatever
 * the timing (a 429 executes nothing, no window holds more than the limit) is asserted always.
 */
class SandboxRateLimitsTest {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static StripeSandbox stripe;
    private static SandboxControl control;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @BeforeAll
    static void start() throws Exception {
        stripe = StripeSandbox.start(0);
        control = new SandboxControl(stripe.baseUrl());
    }

    @AfterAll
    static void stop() throws Exception {
        stripe.close();
    }

    @BeforeEach
    void fresh() {
        stripe.reset();
    }

    private HttpResponse<String> create(String key) {
        return send(HttpRequest.newBuilder(URI.create(stripe.baseUrl() + "/v1/payment_intents"))
                .header("Authorization", "Bearer sk_test_sandbox").header("Idempotency-Key", key)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString("amount=1000&currency=usd&payment_method=pm_card_visa")).build());
    }

    private HttpResponse<String> get(String path) {
        return send(HttpRequest.newBuilder(URI.create(stripe.baseUrl() + path)).header("Authorization", "Bearer sk_test_sandbox").build());
    }

    private HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Fires every request at once (threads ready first); its answers, in order, and how long the burst took. */
    private record Burst(List<HttpResponse<String>> answers, Duration took) {
    }

    private Burst burst(List<Supplier<HttpResponse<String>>> requests) {
        // Warm connections first, so that the burst is requests, not TCP handshakes.
        List<CompletableFuture<HttpResponse<String>>> warm = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            warm.add(http.sendAsync(HttpRequest.newBuilder(URI.create(stripe.baseUrl() + "/_sandbox/stats")).build(),
                    HttpResponse.BodyHandlers.ofString()));
        }
        warm.forEach(CompletableFuture::join);
        CountDownLatch go = new CountDownLatch(1);
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (Supplier<HttpResponse<String>> request : requests) {
            CompletableFuture<HttpResponse<String>> answer = new CompletableFuture<>();
            Thread.ofVirtual().start(() -> {
                try {
                    go.await();
                    answer.complete(request.get());
                } catch (Throwable e) {
                    answer.completeExceptionally(e);
                }
            });
            answers.add(answer);
        }
        long start = System.nanoTime();
        go.countDown();
        List<HttpResponse<String>> out = answers.stream().map(CompletableFuture::join).toList();
        return new Burst(out, Duration.ofNanos(System.nanoTime() - start));
    }

    private static void assertStripes429(HttpResponse<String> answer, String reason) throws Exception {
        assertEquals(429, answer.statusCode(), answer.body());
        assertEquals(reason, answer.headers().firstValue("Stripe-Rate-Limited-Reason").orElse(null));
        assertTrue(answer.headers().firstValue("Request-Id").orElse("").startsWith("req_"));
        JsonNode error = JSON.readTree(answer.body()).get("error");
        assertEquals("invalid_request_error", error.get("type").asText());
        assertEquals("rate_limit", error.get("code").asText());
    }

    private static long intentsWithKey(String key) {
        return stripe.ledger().stream().filter(pi -> key.equals(pi.idempotencyKey())).count();
    }

    @Test
    void thirtyCreatesAtOnceAgainstTwentyFivePerSecond() throws Exception {
        control.limit("payment_intents.create=25");
        control.clearFaults();
        assertTrue(control.limits().get("on").asBoolean(), "clearing the faults leaves the limits on");
        List<String> keys = new ArrayList<>();
        List<Supplier<HttpResponse<String>>> requests = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            String key = "burst-" + UUID.randomUUID();
            keys.add(key);
            requests.add(() -> create(key));
        }
        Burst burst = burst(requests);

        List<String> refusedKeys = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            HttpResponse<String> answer = burst.answers().get(i);
            if (answer.statusCode() == 429) {
                assertStripes429(answer, "endpoint-rate");
                assertEquals(0, intentsWithKey(keys.get(i)), "a refused create is not executed");
                refusedKeys.add(keys.get(i));
            } else {
                assertEquals(200, answer.statusCode(), answer.body());
                assertEquals(1, intentsWithKey(keys.get(i)));
            }
        }
        JsonNode create = control.limits().at("/endpoints/payment_intents.create");
        assertEquals(30 - refusedKeys.size(), create.get("admitted").asInt());
        assertEquals(refusedKeys.size(), control.createsRefused());
        assertTrue(control.maxCreatesInAnySecond() <= 25, create.toString());
        if (burst.took().compareTo(Duration.ofMillis(900)) < 0) {
            assertEquals(5, refusedKeys.size(), "the burst took " + burst.took());
            assertEquals(25, control.maxCreatesInAnySecond());
        }

        // Each refused key, sent again once the window has passed, creates its PaymentIntent once: a 429 bound nothing.
        Thread.sleep(1100);
        for (String key : refusedKeys) {
            HttpResponse<String> again = create(key);
            assertEquals(200, again.statusCode(), again.body());
            assertTrue(again.headers().firstValue("Idempotent-Replayed").isEmpty(), "executed now, not replayed");
            assertEquals("true", create(key).headers().firstValue("Idempotent-Replayed").orElse(null));
            assertEquals(1, intentsWithKey(key));
        }
        assertEquals(30, stripe.ledger().size());
    }

    @Test
    void aPacedSenderBelowTheLimitIsNeverRefused() throws Exception {
        control.limit("default=25");
        long end = System.nanoTime() + Duration.ofSeconds(3).toNanos();
        int sent = 0;
        while (System.nanoTime() < end) {
            HttpResponse<String> answer = create("paced-" + UUID.randomUUID());
            assertEquals(200, answer.statusCode(), answer.body());
            sent++;
            Thread.sleep(1000 / 15 + 1);   // at most 15 a second, whatever the answers' delay
        }
        JsonNode create = control.limits().at("/endpoints/payment_intents.create");
        assertEquals(sent, create.get("admitted").asInt());
        assertTrue(control.maxCreatesInAnySecond() >= 1 && control.maxCreatesInAnySecond() <= 15, create.toString());
        assertEquals(sent, control.limits().at("/all/admitted").asInt());
    }

    @Test
    void theGlobalLimitCountsEveryEndpoint() throws Exception {
        String id = JSON.readTree(create("before-limits").body()).get("id").asText();
        control.limit("global=10");
        List<String> keys = new ArrayList<>();
        List<Supplier<HttpResponse<String>>> requests = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            String key = "global-" + UUID.randomUUID();
            keys.add(key);
            requests.add(() -> create(key));
            requests.add(() -> get("/v1/payment_intents/" + id));
        }
        Burst burst = burst(requests);
        int refused = 0;
        for (int i = 0; i < requests.size(); i++) {
            HttpResponse<String> answer = burst.answers().get(i);
            if (answer.statusCode() == 429) {
                assertStripes429(answer, "global-rate");
                refused++;
                if (i % 2 == 0) {
                    assertEquals(0, intentsWithKey(keys.get(i / 2)));
                }
            } else {
                assertEquals(200, answer.statusCode(), answer.body());
            }
        }
        JsonNode limits = control.limits();
        assertEquals(12 - refused, limits.at("/all/admitted").asInt());
        assertEquals(12 - refused, limits.at("/endpoints/payment_intents.create/admitted").asInt()
                + limits.at("/endpoints/payment_intents.retrieve/admitted").asInt());
        assertTrue(limits.at("/all/max_in_any_second").asInt() <= 10, limits.toString());
        if (burst.took().compareTo(Duration.ofMillis(900)) < 0) {
            assertEquals(2, refused, "the burst took " + burst.took());
            assertEquals(2, limits.at("/all/refused/global-rate").asInt());
        }
    }

    @Test
    void requestsInProgressAtOnceAreLimited() throws Exception {
        control.limit("concurrency=2");
        control.plan("hold:20000", "hold:20000");
        CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> create("held-1"));
        CompletableFuture<HttpResponse<String>> second = CompletableFuture.supplyAsync(() -> create("held-2"));
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (stripe.executing() < 2) {
            assertTrue(System.nanoTime() < deadline, "the two held creates never reached Stripe");
            Thread.sleep(10);
        }
        assertStripes429(create("third"), "global-concurrency");
        assertStripes429(get("/v1/payment_intents"), "global-concurrency");
        assertEquals(0, stripe.planLeft(), "the refused create took no step of the plan: it never ran");
        assertEquals(0, intentsWithKey("third"));

        control.faults("release=1");
        assertEquals(200, first.join().statusCode());
        assertEquals(200, second.join().statusCode());
        assertEquals(200, create("third").statusCode());
        JsonNode limits = control.limits();
        assertEquals(2, limits.get("max_in_flight").asInt());
        assertEquals(0, limits.get("in_flight").asInt());
        assertEquals(1, limits.at("/endpoints/payment_intents.create/refused/global-concurrency").asInt());
        assertEquals(1, limits.at("/endpoints/payment_intents.list/refused/global-concurrency").asInt());
    }

    @Test
    void retrievesAreLimitedApartFromCreates() throws Exception {
        String id = JSON.readTree(create("before-limits").body()).get("id").asText();
        control.limit("payment_intents.retrieve=3");
        List<Supplier<HttpResponse<String>>> requests = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            requests.add(() -> get("/v1/payment_intents/" + id));
            requests.add(() -> create("separate-" + UUID.randomUUID()));
        }
        Burst burst = burst(requests);
        int retrievesRefused = 0;
        for (int i = 0; i < requests.size(); i++) {
            HttpResponse<String> answer = burst.answers().get(i);
            if (i % 2 == 1) {
                assertEquals(200, answer.statusCode(), "creates have no limit: " + answer.body());
            } else if (answer.statusCode() == 429) {
                assertStripes429(answer, "endpoint-rate");
                retrievesRefused++;
            }
        }
        assertEquals(0, control.createsRefused());
        assertEquals(retrievesRefused, control.limits().at("/endpoints/payment_intents.retrieve/refused/endpoint-rate").asInt());
        if (burst.took().compareTo(Duration.ofMillis(900)) < 0) {
            assertEquals(2, retrievesRefused, "the burst took " + burst.took());
        }
    }

    @Test
    void aSandboxProcessStartsWithTheLimitsItIsGiven() throws Exception {
        Process process = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dsandbox.limits=default=25,global=25,payment_intents.create=7", "-cp", "target/classes",
                StripeSandbox.class.getName(), "0").redirectErrorStream(true).start();
        try {
            String line = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)).readLine();
            Matcher base = Pattern.compile("listening on (http://\\S+)").matcher(String.valueOf(line));
            assertTrue(base.find(), line);
            // A reset returns to what the process started with.
            send(HttpRequest.newBuilder(URI.create(base.group(1) + "/_sandbox/reset")).POST(HttpRequest.BodyPublishers.noBody()).build());
            JsonNode limits = new SandboxControl(base.group(1)).limits();
            assertTrue(limits.get("on").asBoolean(), limits.toString());
            assertEquals(25, limits.get("default").asInt());
            assertEquals(25, limits.get("global").asInt());
            assertEquals(7, limits.at("/limits/payment_intents.create").asInt());
        } finally {
            process.destroyForcibly().waitFor();
        }
    }
}

package dev.chargeonce.waiting;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code Prefer: wait=N}: a duplicate that arrives while the first request is at Stripe is held until the first
 * finishes and answered the replay, woken by the row's NOTIFY (not by a poll), or answered 409 when N runs out.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class PreferWaitTest {

    static final String VISA = "{\"amount\": 1100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
    }

    static RequestSpecification request(String key, String prefer) {
        RequestSpecification spec = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON);
        return prefer == null ? spec : spec.header("Prefer", prefer);
    }

    /** Starts the key's first request, whose Stripe call takes {@code millis}, and waits until it holds the key. */
    CompletableFuture<Response> firstRequestAtStripe(String key, String path, String body, long millis) throws Exception {
        stripe.plan("slow:" + millis);
        CompletableFuture<Response> first = CompletableFuture.supplyAsync(() -> request(key, null).body(body).post(path));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        // The key's status (a read: it claims nothing) says when the first request holds it.
        while (!"processing".equals(given().header("Authorization", "Bearer " + ACME_KEY)
                .get("/v1/idempotency-keys/" + key + (path.endsWith("/refunds") ? "?operation=refund" : "")).then().extract().path("status"))) {
            assertTrue(System.nanoTime() < until, "the first request never held the key");
            Thread.sleep(20);
        }
        return first;
    }

    @Test
    void aDuplicateThatWaitsGetsTheReplayAsSoonAsTheFirstFinishes() throws Exception {
        String key = UUID.randomUUID().toString();
        CompletableFuture<Response> first = firstRequestAtStripe(key, "/v1/charges", VISA, 3_000);
        long sent = System.nanoTime();
        Response waited = request(key, "wait=20").body(VISA).post("/v1/charges");
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);
        Response original = first.get(30, TimeUnit.SECONDS);

        assertEquals(201, original.statusCode(), original.asString());
        assertEquals(201, waited.statusCode(), waited.asString());
        assertEquals("true", waited.header("Idempotent-Replayed"));
        assertEquals("wait=20", waited.header("Preference-Applied"));
        assertEquals(original.asString(), waited.asString(), "the waiter gets the first request's answer, byte for byte");
        assertTrue(waitedMillis < 15_000, "woken when the first finished, not at the end of its wait: " + waitedMillis + " ms");
        assertEquals(1, stripe.intentsFor(ACME, key).size());
    }

    @Test
    void whenTheWaitRunsOutTheAnswerIs409() throws Exception {
        String key = UUID.randomUUID().toString();
        CompletableFuture<Response> first = firstRequestAtStripe(key, "/v1/charges", VISA, 6_000);
        long sent = System.nanoTime();
        Response waited = request(key, "wait=1").body(VISA).post("/v1/charges");
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);
        assertEquals(409, waited.statusCode(), waited.asString());
        assertEquals("wait=1", waited.header("Preference-Applied"));
        assertTrue(waitedMillis >= 1_000, "held for the second it asked for: " + waitedMillis + " ms");
        // Without the preference, or with one that is not a number of seconds, the 409 comes at once.
        for (String prefer : new String[] {null, "wait=soon", "respond-async"}) {
            Response at = request(key, prefer).body(VISA).post("/v1/charges");
            assertEquals(409, at.statusCode());
            assertNull(at.header("Preference-Applied"), "preference " + prefer + " is not applied");
        }
        assertEquals(201, first.get(30, TimeUnit.SECONDS).statusCode());
        assertEquals(1, stripe.intentsFor(ACME, key).size());
    }

    @Test
    void aRefundWaitsTheSameWay() throws Exception {
        String chargeId = request(UUID.randomUUID().toString(), null).body(VISA).post("/v1/charges")
                .then().statusCode(201).extract().path("id");
        String key = UUID.randomUUID().toString();
        String path = "/v1/charges/" + chargeId + "/refunds";
        CompletableFuture<Response> first = firstRequestAtStripe(key, path, "{\"amount\": 100}", 3_000);
        Response waited = request(key, "respond-async, wait=25").body("{\"amount\": 100}").post(path);
        Response original = first.get(30, TimeUnit.SECONDS);
        assertEquals(201, waited.statusCode(), waited.asString());
        assertEquals("wait=25", waited.header("Preference-Applied"));
        assertEquals(original.asString(), waited.asString());
        assertEquals(1, stripe.refundsFor(ACME, key).size());
    }

    @Test
    void theHeaderIsReadAsRfc7240Says() {
        assertEquals(0, PreferWait.seconds(null));
        assertEquals(10, PreferWait.seconds(List.of("wait=10")));
        assertEquals(10, PreferWait.seconds(List.of("respond-async, WAIT = 10")));
        assertEquals(10, PreferWait.seconds(List.of("handling=lenient", "wait=\"10\"")));
        assertEquals(30, PreferWait.seconds(List.of("wait=3600")), "at most 30 s, and Preference-Applied says so");
        assertEquals(0, PreferWait.seconds(List.of("wait=-1")));
        assertEquals(0, PreferWait.seconds(List.of("wait=1.5")));
        assertEquals(0, PreferWait.seconds(List.of("wait")));
    }
}

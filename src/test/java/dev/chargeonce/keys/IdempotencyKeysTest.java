package dev.chargeonce.keys;

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
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/** Keys in both syntaxes, the replay headers, and a key's status. */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class IdempotencyKeysTest {

    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    static Response charge(String keyHeader) {
        return given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", keyHeader)
                .contentType(ContentType.JSON).body(VISA).post("/v1/charges");
    }

    static Response status(String key) {
        return given().header("Authorization", "Bearer " + ACME_KEY).urlEncodingEnabled(false)
                .get("/v1/idempotency-keys/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20"));
    }

    @Test
    void theQuotedSyntaxIsTheSameKeyOnceUnquoted() {
        String key = "sf-" + UUID.randomUUID();
        Response bare = charge(key);
        assertEquals(201, bare.statusCode(), bare.asString());
        Response quoted = charge("\"" + key + "\"");
        assertEquals(201, quoted.statusCode());
        assertEquals("true", quoted.header("Idempotent-Replayed"), "\"abc\" and abc are one key");
        assertEquals(bare.asString(), quoted.asString());
        assertEquals("\"" + key + "\"", quoted.header("Idempotency-Key"), "echoed as sent");

        String withEscapes = "sf-" + UUID.randomUUID() + "-a\"b\\c";
        Response escaped = charge("\"" + withEscapes.replace("\\", "\\\\").replace("\"", "\\\"") + "\"");
        assertEquals(201, escaped.statusCode(), escaped.asString());
        assertEquals("true", charge(withEscapes).header("Idempotent-Replayed"), "the escapes stand for the characters");

        for (String malformed : new String[] {"\"unterminated", "\"a\"b\"", "\"bad\\escape\"", "\"\"", "\"tab\there\""}) {
            Response refused = charge(malformed);
            assertEquals(400, refused.statusCode(), malformed + ": " + refused.asString());
            assertEquals("idempotency_key_invalid", refused.jsonPath().getString("error.code"), malformed);
        }
    }

    @Test
    void aReplayNamesTheOriginalRequestsDateAndTheKeysExpiry() {
        String key = "headers-" + UUID.randomUUID();
        Instant before = Instant.now().minusSeconds(2);
        Response first = charge(key);
        assertEquals(201, first.statusCode());
        assertEquals(key, first.header("Idempotency-Key"));
        assertNull(first.header("Idempotent-Original-Date"), "a first answer is no replay");
        Response replay = charge(key);
        Instant original = ZonedDateTime.parse(replay.header("Idempotent-Original-Date"), DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        Instant expires = ZonedDateTime.parse(replay.header("Idempotency-Key-Expires"), DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        assertTrue(!original.isBefore(before) && !original.isAfter(Instant.now().plusSeconds(2)), "the first request's time: " + original);
        Duration kept = Duration.between(original, expires);
        assertTrue(kept.compareTo(Duration.ofDays(179)) > 0 && kept.compareTo(Duration.ofDays(181)) < 0,
                "a charge is kept for the 180-day refund window: " + kept);
    }

    @Test
    void aKeysStatusFollowsItFromInFlightToAnswered() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String key = "status / " + UUID.randomUUID() + " ?&%";
        assertEquals(404, status(key).statusCode(), "never used");
        long creates = stripe.createRequests();
        stripe.faults("latency_ms=2500");
        try {
            CompletableFuture<Response> inFlight = CompletableFuture.supplyAsync(() -> charge(key));
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (stripe.createRequests() == creates) {
                assertTrue(System.nanoTime() < deadline);
                Thread.sleep(20);
            }
            Response processing = status(key);
            assertEquals(200, processing.statusCode(), processing.asString());
            assertEquals("processing", processing.jsonPath().getString("status"));
            assertTrue(processing.jsonPath().getLong("lease_expires") >= Instant.now().getEpochSecond());
            assertNull(processing.jsonPath().get("expires"), "a key still processing never expires");
            assertEquals(1, processing.jsonPath().getInt("stripe_attempt"));
            assertEquals(201, inFlight.get(30, TimeUnit.SECONDS).statusCode());
        } finally {
            stripe.clearFaults();
        }
        Response answered = status(key);
        assertEquals("completed", answered.jsonPath().getString("status"));
        assertTrue(answered.jsonPath().getString("charge").startsWith("chg_"));
        assertNull(answered.jsonPath().get("lease_expires"));
        assertTrue(answered.jsonPath().getLong("expires") > Instant.now().plus(Duration.ofDays(170)).getEpochSecond());
        assertEquals(404, given().header("Authorization", "Bearer " + dev.chargeonce.testing.TestClients.GLOBEX_KEY).urlEncodingEnabled(false)
                .get("/v1/idempotency-keys/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20")).statusCode(), "another client's");
        assertEquals(404, given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/idempotency-keys/" + "x" + "?operation=refund")
                .statusCode());
    }
}

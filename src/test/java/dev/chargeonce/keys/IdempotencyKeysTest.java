package dev.chargeonce.keys;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import java.net.URL;
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

    @TestHTTPResource("/")
    URL root;

    /**
     * The rule for spaces, checked on the wire (a client library may trim a header before sending it; a socket does
     * not): HTTP itself removes the spaces around a field value (RFC 9110, 5.5), so {@code "K  "} reaches the service
     * as {@code K}, and the service takes that as it is, never trimming or otherwise normalising a key. So a key
     * sent with trailing spaces and its retry without them are one key (the stored key stays reachable), a value of
     * spaces only is no key, and spaces inside quotes, which HTTP keeps, are refused at either end of the key.
     */
    @Test
    void spacesAroundAKeyAreRemovedByHttpAndTheKeyIsTakenAsItArrives() throws Exception {
        String key = "ows-" + UUID.randomUUID();
        RawAnswer first = rawCharge(key + "   ");
        assertEquals(201, first.status(), first.body());
        assertEquals(key, first.header("Idempotency-Key"), "what the service received");
        RawAnswer retry = rawCharge(key);
        assertEquals(201, retry.status(), retry.body());
        assertEquals("true", retry.header("Idempotent-Replayed"), "one key, with or without the spaces HTTP removes");
        assertEquals(first.body(), retry.body());
        assertEquals("true", rawCharge("  " + key + "\t").header("Idempotent-Replayed"), "tabs are removed too");

        RawAnswer blank = rawCharge("   ");
        assertEquals(400, blank.status(), blank.body());
        assertEquals("idempotency_key_missing", io.restassured.path.json.JsonPath.from(blank.body()).getString("error.code"),
                "a value of spaces only is an empty value: no key");
        for (String quoted : new String[] {"\" " + key + "\"", "\"" + key + " \"", "\" \""}) {
            RawAnswer refused = rawCharge(quoted);
            assertEquals(400, refused.status(), quoted + ": " + refused.body());
            assertEquals("idempotency_key_invalid", io.restassured.path.json.JsonPath.from(refused.body()).getString("error.code"), quoted);
        }
        RawAnswer inner = rawCharge("\"" + key + " inner\"");
        assertEquals(201, inner.status(), "a space inside a key is part of it: " + inner.body());
    }

    record RawAnswer(int status, java.util.Map<String, String> headers, String body) {
        String header(String name) {
            return headers.get(name.toLowerCase(java.util.Locale.ROOT));
        }
    }

    /** A charge over a plain socket, the Idempotency-Key's value written byte for byte as given. */
    RawAnswer rawCharge(String keyValue) throws java.io.IOException {
        byte[] body = VISA.getBytes(StandardCharsets.UTF_8);
        String head = "POST /v1/charges HTTP/1.1\r\nHost: " + root.getHost() + ":" + root.getPort() + "\r\n"
                + "Authorization: Bearer " + ACME_KEY + "\r\nContent-Type: application/json\r\n"
                + "Idempotency-Key:" + keyValue + "\r\nContent-Length: " + body.length + "\r\nConnection: close\r\n\r\n";
        byte[] received;
        try (java.net.Socket socket = new java.net.Socket(root.getHost(), root.getPort())) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(head.getBytes(StandardCharsets.ISO_8859_1));
            socket.getOutputStream().write(body);
            socket.getOutputStream().flush();
            received = socket.getInputStream().readAllBytes();
        }
        String text = new String(received, StandardCharsets.UTF_8);
        int endOfHead = text.indexOf("\r\n\r\n");
        String[] lines = text.substring(0, endOfHead).split("\r\n");
        java.util.Map<String, String> headers = new java.util.HashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, colon).trim().toLowerCase(java.util.Locale.ROOT), lines[i].substring(colon + 1).trim());
        }
        return new RawAnswer(Integer.parseInt(lines[0].split(" ")[1]), headers, text.substring(endOfHead + 4));
    }
}

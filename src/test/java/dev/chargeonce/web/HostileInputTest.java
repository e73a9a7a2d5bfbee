package dev.chargeonce.web;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.idempotency.DatabaseFailures;
import dev.chargeonce.idempotency.DatabaseRefusedException;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What a hostile or careless client sends, byte by byte where HTTP clients would tidy it up: every answer is a
 * documented 4xx in the error shape, never a 5xx, and nothing of it reaches Stripe. (What the HTTP server refuses while
 * it decodes a request: {@link MalformedRequestsTest}.)
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class HostileInputTest {

    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    @TestHTTPResource("/")
    URL root;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
    }

    /** An HTTP/1.1 exchange over a plain socket, bytes as given; the whole answer as ISO-8859-1 text. */
    String raw(byte[] request) throws Exception {
        try (Socket socket = new Socket(root.getHost(), root.getPort())) {
            socket.setSoTimeout(15_000);
            OutputStream out = socket.getOutputStream();
            out.write(request);
            out.flush();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            InputStream in = socket.getInputStream();
            byte[] buffer = new byte[8192];
            int n;
            try {
                while ((n = in.read(buffer)) > 0) {
                    answer.write(buffer, 0, n);
                }
            } catch (java.net.SocketException e) {
                // the server may close without reading the rest of a refused request
            }
            return answer.toString(StandardCharsets.ISO_8859_1);
        }
    }

    static byte[] request(String head, byte[] body) {
        byte[] h = head.getBytes(StandardCharsets.ISO_8859_1);
        byte[] all = new byte[h.length + body.length];
        System.arraycopy(h, 0, all, 0, h.length);
        System.arraycopy(body, 0, all, h.length, body.length);
        return all;
    }

    static Response charge(String key, String body) {
        return given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key).contentType(ContentType.JSON)
                .body(body).post("/v1/charges");
    }

    @Test
    void anIdThisServiceCouldNotHaveMadeIsNotFoundWithoutAskingTheDatabase() {
        for (String id : new String[] {"%00", "chg_%00", "chg_" + "A".repeat(23) + "%00", "chg_" + "a".repeat(500), "%F0%9F%92%B3"}) {
            Response answer = given().header("Authorization", "Bearer " + ACME_KEY).urlEncodingEnabled(false).get("/v1/charges/" + id);
            assertEquals(404, answer.statusCode(), id + ": " + answer.asString());
            assertEquals("resource_missing", answer.jsonPath().getString("error.code"));
            given().header("Authorization", "Bearer " + ACME_KEY).urlEncodingEnabled(false).get("/v1/refunds/" + id).then().statusCode(404);
            given().header("Authorization", "Bearer " + ACME_KEY).urlEncodingEnabled(false).get("/v1/charges/" + id + "/refunds").then().statusCode(404);
        }
    }

    @Test
    void aDataErrorIsNeverReportedAsAnOutage() {
        // SQLSTATE class 22 (data) and 23 (constraint) are the statement's fault: no 503, no "retry".
        assertTrue(DatabaseFailures.of(new SQLException("invalid byte sequence", "22021")) instanceof DatabaseRefusedException);
        assertTrue(DatabaseFailures.of(new SQLException("duplicate key", "23505")) instanceof DatabaseRefusedException);
        assertTrue(DatabaseFailures.of(new SQLException("syntax", "42601")) instanceof DatabaseRefusedException);
        // Connections, resources, shutdown, a failover's read-only primary, the pool's own timeout: outages.
        for (String state : new String[] {"08006", "53300", "57P01", "57014", "40001", "25006", null}) {
            assertTrue(DatabaseFailures.of(new SQLException("down", state)) instanceof DatabaseUnavailableException, String.valueOf(state));
        }
    }

    @Test
    void textThatIsNotValidUnicodeOrHoldsANulIsRefusedNamingTheField() {
        long stripeRequests = stripe.apiRequests();
        String[][] cases = {
                {"{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"description\": \"a\\ud800b\"}", "description"},
                {"{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"description\": \"a\\udc00\"}", "description"},
                {"{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"description\": \"nul\\u0000\"}", "description"},
                {"{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"metadata\": {\"k\": \"\\ud83d\"}}", "metadata[k]"},
                {"{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"metadata\": {\"\\ud83dk\": \"v\"}}", "metadata"},
        };
        for (String[] c : cases) {
            Response answer = charge(UUID.randomUUID().toString(), c[0]);
            assertEquals(400, answer.statusCode(), c[0] + ": " + answer.asString());
            assertEquals("parameter_invalid", answer.jsonPath().getString("error.code"), c[0] + ": " + answer.asString());
            assertEquals(c[1], answer.jsonPath().getString("error.param"), c[0]);
        }
        // A valid pair (an emoji) is text like any other.
        Response emoji = charge(UUID.randomUUID().toString(),
                "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"description\": \"card \\ud83d\\udcb3\"}");
        assertEquals(201, emoji.statusCode(), emoji.asString());
        assertEquals("card \uD83D\uDCB3", emoji.jsonPath().getString("description"));
        assertEquals(stripeRequests + 1, stripe.apiRequests(), "only the valid charge reached Stripe");
    }

    @Test
    void acceptWithJsonAtQualityZeroIs406BeforeAnythingIsClaimed() {
        long stripeRequests = stripe.apiRequests();
        for (String accept : new String[] {"application/json;q=0", "*/*;q=0", "*/*, application/json;q=0", "application/*;q=0.0", "text/html"}) {
            Response answer = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                    .header("Accept", accept).contentType(ContentType.JSON).body(VISA).post("/v1/charges");
            assertEquals(406, answer.statusCode(), accept + ": " + answer.asString());
            assertEquals("not_acceptable", answer.jsonPath().getString("error.code"));
        }
        assertEquals(stripeRequests, stripe.apiRequests(), "no 406 reached Stripe");
        for (String accept : new String[] {"application/json", "application/json;q=0.1", "*/*", "text/html, */*;q=0.5", "application/*"}) {
            given().header("Authorization", "Bearer " + ACME_KEY).header("Accept", accept).get("/v1/charges").then().statusCode(200);
        }
    }

    @Test
    void anEmptyOrRepeatedLimitIsRefused() {
        for (String query : new String[] {"limit=", "limit=1&limit=2", "limit=10&limit=10", "limit=%205"}) {
            Response answer = given().header("Authorization", "Bearer " + ACME_KEY).urlEncodingEnabled(false).get("/v1/charges?" + query);
            assertEquals(400, answer.statusCode(), query + ": " + answer.asString());
            assertEquals("limit", answer.jsonPath().getString("error.param"));
        }
    }

    @Test
    void spacesAroundAKeyAreNotPartOfIt() throws Exception {
        // HTTP strips them: "K " and "K" are one key, and the contract's pattern refuses the first.
        String key = "spaced-" + UUID.randomUUID();
        Response first = charge(key, VISA);
        assertEquals(201, first.statusCode(), first.asString());
        String answer = raw(request("POST /v1/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY + "\r\nIdempotency-Key:   "
                + key + "   \r\nContent-Type: application/json\r\nContent-Length: " + VISA.length() + "\r\nConnection: close\r\n\r\n",
                VISA.getBytes(StandardCharsets.UTF_8)));
        assertTrue(answer.startsWith("HTTP/1.1 201"), answer);
        assertTrue(answer.toLowerCase().contains("idempotent-replayed: true"), "the same key: a replay\n" + answer);
        assertTrue(answer.endsWith(first.asString()), answer);
    }

    @Test
    void methodsAPathDoesNotAnswerAre405NamingTheOnesItDoes() {
        Response delete = given().header("Authorization", "Bearer " + ACME_KEY).delete("/v1/charges/chg_" + "a".repeat(24));
        assertEquals(405, delete.statusCode());
        assertEquals("GET, HEAD, OPTIONS", delete.header("Allow"));
        assertEquals("method_not_allowed", delete.jsonPath().getString("error.code"));
        Response put = given().header("Authorization", "Bearer " + ACME_KEY).contentType(ContentType.JSON).body("{}")
                .put("/v1/charges/chg_" + "a".repeat(24) + "/refunds");
        assertEquals(405, put.statusCode(), put.asString());
        assertEquals("GET, HEAD, OPTIONS, POST", put.header("Allow"));
        Response options = given().header("Authorization", "Bearer " + ACME_KEY).options("/v1/charges/chg_" + "a".repeat(24));
        assertEquals(200, options.statusCode());
        assertEquals("GET, HEAD, OPTIONS", options.header("Allow"), "no POST: that path refuses it");
        assertEquals("GET, HEAD, OPTIONS, POST", given().header("Authorization", "Bearer " + ACME_KEY).options("/v1/charges").header("Allow"));
    }

    @Test
    void aDeclaredBodyOverTheServersLimitGetsTheErrorShape() throws Exception {
        int size = 1024 * 1024 + 1;
        String answer = raw(request("POST /v1/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY
                + "\r\nIdempotency-Key: big\r\nContent-Type: application/json\r\nContent-Length: " + size + "\r\nConnection: close\r\n\r\n",
                new byte[size]));
        assertTrue(answer.startsWith("HTTP/1.1 413"), answer);
        assertTrue(answer.toLowerCase().contains("content-type: application/json"), answer);
        assertTrue(answer.contains("\"code\":\"body_too_large\""), answer);
    }
}

package dev.chargeonce.web;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import dev.chargeonce.testing.TestOperators;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Requests the HTTP server (Netty's decoder, under Vert.x) refuses before any route runs, sent byte by byte over a
 * raw socket: a control character in a header, a header line without a colon, a request line or a header block over
 * the limits, a chunked body over the limit. Each is answered like every other refusal of the API: the error shape,
 * {@code Content-Type: application/json}, the documented status, as an HTTP/1.1 answer that closes the connection.
 * Beside them, the keys the service itself refuses (a tab, UTF-8, 10,000 bytes): the same shape from the other side
 * of the decoder. None of them creates a row or reaches Stripe.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class MalformedRequestsTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    @TestHTTPResource("/")
    URL root;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Inject
    AgroalDataSource primary;

    SandboxControl stripe;
    long createsBefore;
    long rowsBefore;

    @BeforeEach
    void countBefore() throws SQLException {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        createsBefore = stripe.createRequests();
        rowsBefore = rows();
    }

    @AfterEach
    void nothingWasClaimedOrSentToStripe() throws SQLException {
        assertEquals(createsBefore, stripe.createRequests(), "no refused request reached Stripe");
        assertEquals(rowsBefore, rows(), "no refused request created a row");
    }

    long rows() throws SQLException {
        try (Connection c = primary.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT (SELECT count(*) FROM stripe_intents) + (SELECT count(*) FROM stripe_refunds)")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** What came back: the status line, the headers (names in any case), the body. */
    record Answer(String statusLine, Map<String, String> headers, String body) {

        int status() {
            return Integer.parseInt(statusLine.split(" ")[1]);
        }

        JsonNode error() {
            try {
                return JSON.readTree(body).path("error");
            } catch (IOException e) {
                throw new AssertionError("not JSON: " + this, e);
            }
        }
    }

    /** Sends these bytes on a connection of their own, reads the answer to the end of the connection. */
    Answer exchange(byte[] request) throws IOException {
        byte[] received;
        try (Socket socket = new Socket(root.getHost(), root.getPort())) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            try {
                out.write(request);
                out.flush();
            } catch (IOException e) {
                // the server may answer and close before it read all of a refused request
            }
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            InputStream in = socket.getInputStream();
            byte[] buffer = new byte[8192];
            try {
                for (int n; (n = in.read(buffer)) > 0; ) {
                    answer.write(buffer, 0, n);
                }
            } catch (java.net.SocketException e) {
                // a reset after the answer, when the server closed with unread bytes
            }
            received = answer.toByteArray();
        }
        String text = new String(received, StandardCharsets.UTF_8);
        int endOfHead = text.indexOf("\r\n\r\n");
        assertTrue(endOfHead > 0, "no HTTP answer: " + text);
        String[] lines = text.substring(0, endOfHead).split("\r\n");
        Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, colon).trim(), lines[i].substring(colon + 1).trim());
        }
        return new Answer(lines[0], headers, text.substring(endOfHead + 4));
    }

    static byte[] bytes(Object... parts) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (Object part : parts) {
            all.writeBytes(part instanceof byte[] b ? b : part.toString().getBytes(StandardCharsets.ISO_8859_1));
        }
        return all.toByteArray();
    }

    /** A valid charge but for its Idempotency-Key, whose bytes are these. */
    static byte[] chargeWithKey(byte[] key) {
        return bytes("POST /v1/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY + "\r\nIdempotency-Key: ", key,
                "\r\nContent-Type: application/json\r\nContent-Length: " + VISA.length() + "\r\nConnection: close\r\n\r\n", VISA);
    }

    static byte[] key(String prefix, int character) {
        return bytes(prefix + UUID.randomUUID().toString().substring(0, 8), new byte[] {(byte) character}, "x");
    }

    /** The one error shape, as JSON, with the status and code given; nothing of the implementation in it. */
    static void assertShaped(Answer answer, int status, String code) {
        assertEquals(status, answer.status(), answer.toString());
        assertTrue(answer.headers().getOrDefault("Content-Type", "").startsWith("application/json"), "JSON: " + answer);
        JsonNode error = answer.error();
        assertEquals("invalid_request_error", error.path("type").asText(), answer.toString());
        assertEquals(code, error.path("code").asText(), answer.toString());
        assertFalse(error.path("message").asText().isBlank(), answer.toString());
        assertTrue(error.has("param"), "every error names its param, null when there is none: " + answer);
        for (String leak : new String[] {"Exception", "java.", "io.netty", "io.vertx"}) {
            assertFalse(answer.body().contains(leak), "no implementation detail: " + answer);
        }
    }

    /** What the HTTP server refused while decoding: shaped, HTTP/1.1, and the connection closed (it cannot be reused). */
    static void assertRefusedByTheServer(Answer answer, int status, String code) {
        assertShaped(answer, status, code);
        assertTrue(answer.statusLine().startsWith("HTTP/1.1 " + status + " "), "an HTTP/1.1 answer: " + answer);
        assertEquals("close", answer.headers().getOrDefault("Connection", "").toLowerCase(), "the connection closes: " + answer);
    }

    @Test
    void aControlCharacterInTheKeyIsRefusedInTheErrorShape() throws Exception {
        assertRefusedByTheServer(exchange(chargeWithKey(key("del-", 0x7f))), 400, "request_malformed");
        assertRefusedByTheServer(exchange(chargeWithKey(key("nul-", 0x00))), 400, "request_malformed");
        assertRefusedByTheServer(exchange(chargeWithKey(key("bel-", 0x07))), 400, "request_malformed");
    }

    @Test
    void keysTheServiceRefusesItselfHaveTheSameShape() throws Exception {
        for (byte[] key : new byte[][] {
                key("tab-", '\t'),
                bytes("utf8-" + UUID.randomUUID(), "ключ".getBytes(StandardCharsets.UTF_8)),
                "k".repeat(10_000).getBytes(StandardCharsets.US_ASCII)}) {
            Answer answer = exchange(chargeWithKey(key));
            assertShaped(answer, 400, "idempotency_key_invalid");
            assertEquals("Idempotency-Key", answer.error().path("param").asText(), answer.toString());
        }
    }

    @Test
    void aNulInThePathIsRefusedInTheErrorShape() throws Exception {
        Answer answer = exchange(bytes("POST /v1/charges\0x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY
                + "\r\nIdempotency-Key: nul-path-" + UUID.randomUUID() + "\r\nContent-Type: application/json\r\nContent-Length: "
                + VISA.length() + "\r\nConnection: close\r\n\r\n", VISA));
        assertShaped(answer, 400, "request_malformed");
        Answer get = exchange(bytes("GET /v1/charges/chg_\0" + "a".repeat(23) + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                + ACME_KEY + "\r\nConnection: close\r\n\r\n"));
        assertTrue(get.status() == 400 || get.status() == 404, get.toString());
        assertShaped(get, get.status(), get.status() == 400 ? "request_malformed" : "resource_missing");
    }

    @Test
    void aRequestLineOverTheLimitIs414InTheErrorShape() throws Exception {
        for (int length : new int[] {5_000, 9 * 1024}) {
            Answer answer = exchange(bytes("GET /v1/charges?pad=" + "p".repeat(length) + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                    + ACME_KEY + "\r\nConnection: close\r\n\r\n"));
            assertRefusedByTheServer(answer, 414, "uri_too_long");
        }
        Answer post = exchange(bytes("POST /v1/charges?pad=" + "p".repeat(9 * 1024) + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                + ACME_KEY + "\r\nIdempotency-Key: long-line-" + UUID.randomUUID() + "\r\nContent-Type: application/json\r\nContent-Length: "
                + VISA.length() + "\r\n\r\n", VISA));
        assertRefusedByTheServer(post, 414, "uri_too_long");
    }

    @Test
    void aHeaderLineWithoutAColonIsRefusedInTheErrorShape() throws Exception {
        Answer answer = exchange(bytes("POST /v1/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY
                + "\r\nIdempotency-Key: no-colon-" + UUID.randomUUID() + "\r\nNo colon here\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + VISA.length() + "\r\n\r\n", VISA));
        assertRefusedByTheServer(answer, 400, "request_malformed");
    }

    @Test
    void headersOverTheLimitAre431InTheErrorShape() throws Exception {
        Answer answer = exchange(bytes("POST /v1/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY
                + "\r\nIdempotency-Key: big-headers-" + UUID.randomUUID() + "\r\nX-Pad: " + "p".repeat(30_000)
                + "\r\nContent-Type: application/json\r\nContent-Length: " + VISA.length() + "\r\n\r\n", VISA));
        assertRefusedByTheServer(answer, 431, "headers_too_large");
        StringBuilder many = new StringBuilder();
        for (int i = 0; i < 400; i++) {
            many.append("X-Pad-").append(i).append(": ").append("p".repeat(60)).append("\r\n");
        }
        assertRefusedByTheServer(exchange(bytes("GET /v1/charges HTTP/1.1\r\nHost: x\r\n" + many + "\r\n")), 431, "headers_too_large");
    }

    @Test
    void theOperatorsRoutesOnTheApiPortGetTheSameShape() throws Exception {
        for (String path : new String[] {"/admin/v1/findings", "/console"}) {
            assertRefusedByTheServer(exchange(bytes("GET " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: " + TestOperators.basic()
                    + "\r\nX-Note: a", new byte[] {0x7f}, "b\r\n\r\n")), 400, "request_malformed");
            assertRefusedByTheServer(exchange(bytes("GET " + path + "?pad=" + "p".repeat(9 * 1024) + " HTTP/1.1\r\nHost: x\r\n\r\n")),
                    414, "uri_too_long");
        }
    }

    @Test
    void aTargetThatIsNotAUriIsRefusedInTheErrorShape() throws Exception {
        for (String target : new String[] {"/v1/charges/%zz", "/v1/charges?limit=|", "/v1/charges/chg_{a}", "/v1/charges/a\\b"}) {
            Answer answer = exchange(bytes("GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY
                    + "\r\nConnection: close\r\n\r\n"));
            assertRefusedByTheServer(answer, 400, "request_malformed");
        }
    }

    @Test
    void aTargetTheRouterCannotMatchIsRefusedInTheErrorShape() throws Exception {
        assertShaped(exchange(bytes("OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")), 404, "resource_missing");
        assertShaped(exchange(bytes("GET v1/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY
                + "\r\nConnection: close\r\n\r\n")), 404, "resource_missing");
    }

    /** The quick scan agrees with {@code java.net.URI}, which Quarkus parses every target with. */
    @Test
    void theTargetCheckAgreesWithTheUriParser() {
        java.util.Random random = new java.util.Random(42);
        String alphabet = "/aZ09-._~!$&'()*+,;=:@?%#[]|{}\\^`\" <>\u0000\u007f\u00e9";
        for (int i = 0; i < 20_000; i++) {
            StringBuilder target = new StringBuilder(random.nextInt(4) == 0 ? "" : "/");
            for (int n = random.nextInt(12); n > 0; n--) {
                target.append(alphabet.charAt(random.nextInt(alphabet.length())));
            }
            boolean parses;
            try {
                new java.net.URI(target.toString());
                parses = true;
            } catch (java.net.URISyntaxException e) {
                parses = false;
            }
            assertEquals(parses, MalformedRequests.readableTarget(target.toString()), target.toString());
        }
    }

    /** A chunked body within the limit is read as any other: the charge is made. */
    @Test
    void aChunkedBodyWithinTheLimitIsCharged() throws Exception {
        byte[] visa = VISA.getBytes(StandardCharsets.US_ASCII);
        Answer answer = exchange(bytes("POST /v1/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY
                + "\r\nIdempotency-Key: chunked-" + UUID.randomUUID() + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked"
                + "\r\nConnection: close\r\n\r\n" + Integer.toHexString(visa.length) + "\r\n", visa, "\r\n0\r\n\r\n"));
        assertEquals(201, answer.status(), answer.toString());
        createsBefore++; // the one create this test makes
        rowsBefore++;
    }

    /**
     * A chunked body past {@code quarkus.http.limits.max-body-size} (1 MiB): it has no length to refuse it by before
     * it is read, so it is refused as it outgrows the limit, in the same shape as a body of declared length (above),
     * and the connection is closed (the rest of the body is never read). Nothing is claimed.
     */
    @Test
    void aChunkedBodyThatOutgrowsTheServersLimitIsRefusedInTheErrorShapeBeforeAnythingIsClaimed() throws Exception {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        byte[] chunk = "x".repeat(64 * 1024).getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < 20; i++) {
            body.writeBytes(bytes(Integer.toHexString(chunk.length) + "\r\n", chunk, "\r\n"));
        }
        body.writeBytes(bytes("0\r\n\r\n"));
        Answer answer = exchange(bytes("POST /v1/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + ACME_KEY
                + "\r\nIdempotency-Key: chunked-" + UUID.randomUUID() + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked"
                + "\r\n\r\n", body.toByteArray()));
        assertRefusedByTheServer(answer, 413, "body_too_large");
    }
}

package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The packaged service answers what its HTTP server refuses before any route in the API's error shape, as
 * {@code MalformedRequestsTest} shows in a test application: the hook that shapes them is set up at start-up, so the
 * prod package is checked too. Raw bytes over a socket; no row, no call to Stripe.
 */
class MalformedRequestsIT {

    static final String VISA = ChargeClient.VISA;

    @Test
    void thePackagedServiceShapesWhatItsHttpServerRefuses() throws Exception {
        try (ProcessEnvironment env = new ProcessEnvironment("malformed");
             ServiceProcess service = ServiceProcess.start("malformed", env.serviceConfig())) {
            String auth = "Authorization: Bearer " + TestClients.ACME_KEY + "\r\n";
            String charge = "POST /v1/charges HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nContent-Length: "
                    + VISA.length() + "\r\n";
            long creates = env.stripe.createRequests();
            long rows = rows(env);

            assertRefused(exchange(service, charge + "Idempotency-Key: del-" + UUID.randomUUID() + "\u007f\r\n\r\n" + VISA), 400, "request_malformed");
            assertRefused(exchange(service, charge + "Idempotency-Key: nul-" + UUID.randomUUID() + "\u0000\r\n\r\n" + VISA), 400, "request_malformed");
            assertRefused(exchange(service, charge + "Idempotency-Key: no-colon-" + UUID.randomUUID() + "\r\nNo colon\r\n\r\n" + VISA),
                    400, "request_malformed");
            assertRefused(exchange(service, "POST /v1/charges\u0000 HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n"), 400, "request_malformed");
            assertRefused(exchange(service, "GET /v1/charges?pad=" + "p".repeat(9 * 1024) + " HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n"),
                    414, "uri_too_long");
            assertRefused(exchange(service, charge + "Idempotency-Key: big-" + UUID.randomUUID() + "\r\nX-Pad: " + "p".repeat(30_000)
                    + "\r\n\r\n" + VISA), 431, "headers_too_large");
            // The key the service refuses itself: the same shape, from the other side of the decoder.
            String tab = exchange(service, charge + "Idempotency-Key: tab-\t" + UUID.randomUUID() + "\r\nConnection: close\r\n\r\n" + VISA);
            assertTrue(tab.startsWith("HTTP/1.1 400 "), tab);
            assertEquals("idempotency_key_invalid", error(tab).path("code").asText(), tab);

            assertEquals(creates, env.stripe.createRequests(), "no refused request reached Stripe");
            assertEquals(rows, rows(env), "no refused request created a row");
        }
    }

    static void assertRefused(String answer, int status, String code) throws IOException {
        assertTrue(answer.startsWith("HTTP/1.1 " + status + " "), answer);
        String head = answer.substring(0, answer.indexOf("\r\n\r\n")).toLowerCase();
        assertTrue(head.contains("\r\ncontent-type: application/json"), answer);
        assertTrue(head.contains("\r\nconnection: close"), answer);
        JsonNode error = error(answer);
        assertEquals("invalid_request_error", error.path("type").asText(), answer);
        assertEquals(code, error.path("code").asText(), answer);
    }

    static JsonNode error(String answer) throws IOException {
        return new ObjectMapper().readTree(answer.substring(answer.indexOf("\r\n\r\n") + 4)).path("error");
    }

    /** These bytes (ISO-8859-1) on a connection of their own; the answer, read until the server closes it. */
    static String exchange(ServiceProcess service, String request) throws IOException {
        try (Socket socket = new Socket(service.uri("/").getHost(), service.port())) {
            socket.setSoTimeout((int) Duration.ofSeconds(30).toMillis());
            try {
                socket.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            } catch (IOException e) {
                // answered and closed before all of a refused request was read
            }
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            InputStream in = socket.getInputStream();
            byte[] buffer = new byte[8192];
            try {
                for (int n; (n = in.read(buffer)) > 0; ) {
                    answer.write(buffer, 0, n);
                }
            } catch (java.net.SocketException e) {
                // a reset after the answer
            }
            return answer.toString(StandardCharsets.UTF_8);
        }
    }

    static long rows(ProcessEnvironment env) throws SQLException {
        try (Connection c = env.connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT (SELECT count(*) FROM stripe_intents) + (SELECT count(*) FROM stripe_refunds)")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}

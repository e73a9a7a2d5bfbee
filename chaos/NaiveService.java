package chaos;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.chargeonce.testing.TestClients;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * THE DELIBERATELY WRONG CONTROL of the chaos run (chaos/run.sh), never a pattern to copy.
 *
 * <p>The check-then-act idempotency that the incident behind this service was made of: look the key up (on the
 * lagging read replica when one is given), and when it is not there, charge Stripe with a fresh random Stripe
 * idempotency key, then INSERT the answer. Two concurrent requests both find nothing; a retry inside the replica
 * lag finds nothing; a crash between the charge and the INSERT leaves a charge nobody recorded. Everything else
 * (API keys, the request shape, replaying stored answers byte for byte, 422 for another body) is done properly,
 * so that the duplicates the chaos audit finds come from the check-then-act alone.
 *
 * <p>{@code java -cp <classes>:<pgjdbc> chaos.NaiveService <port> <primary jdbc url> <lookup jdbc url> <stripe base> <clients>}
 * where clients is {@code id:sha256hex,...} as in chargeonce.auth.clients.
 */
public class NaiveService {

    static final Pattern AMOUNT = Pattern.compile("\"amount\"\\s*:\\s*(\\d+)");
    static final Pattern CURRENCY = Pattern.compile("\"currency\"\\s*:\\s*\"([a-z]{3})\"");
    static final Pattern PAYMENT_METHOD = Pattern.compile("\"payment_method\"\\s*:\\s*\"(\\w+)\"");
    static final Pattern METADATA = Pattern.compile("\"(\\w+)\"\\s*:\\s*\"([\\w-]*)\"");
    static final SecureRandom RANDOM = new SecureRandom();

    final String primaryUrl;
    final String lookupUrl;
    final String stripeBase;
    final Map<String, String> clientByKeyHash = new HashMap<>();
    final HttpClient stripe = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2)).build();

    NaiveService(String primaryUrl, String lookupUrl, String stripeBase, String clients) {
        this.primaryUrl = primaryUrl;
        this.lookupUrl = lookupUrl;
        this.stripeBase = stripeBase;
        for (String entry : clients.split(",")) {
            String[] parts = entry.split(":");
            clientByKeyHash.put(parts[1], parts[0]);
        }
    }

    public static void main(String[] args) throws Exception {
        NaiveService service = new NaiveService(args[1], args[2], args[3], args[4]);
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), Integer.parseInt(args[0])), 1024);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/health", exchange -> respond(exchange, 200, "{\"status\":\"UP\"}", false));
        server.createContext("/v1/charges", exchange -> {
            try {
                service.charge(exchange);
            } catch (SQLException e) {
                respond(exchange, 503, "{\"error\":{\"type\":\"api_error\",\"code\":\"database_unavailable\"}}", false);
            } catch (RuntimeException | IOException e) {
                respond(exchange, 500, "{\"error\":{\"type\":\"api_error\",\"message\":\"" + e.getClass().getSimpleName() + "\"}}", false);
            }
        });
        server.start();
        System.out.println("naive service on 127.0.0.1:" + args[0] + " lookup=" + args[2]);
    }

    void charge(HttpExchange exchange) throws IOException, SQLException {
        String auth = exchange.getRequestHeaders().getFirst("Authorization");
        String client = auth == null || !auth.startsWith("Bearer ") ? null : clientByKeyHash.get(TestClients.sha256(auth.substring(7)));
        if (client == null) {
            respond(exchange, 401, "{\"error\":{\"type\":\"authentication_error\"}}", false);
            return;
        }
        String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
        String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        String fingerprint = TestClients.sha256(body);

        // CHECK: is the key known? (on the replica when one is configured: the incident)
        try (Connection c = connect(lookupUrl); PreparedStatement ps = c.prepareStatement(
                "SELECT fingerprint, response_status, response_body FROM stripe_intents WHERE client_id = ? AND idempotency_key = ?")) {
            ps.setString(1, client);
            ps.setString(2, key);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    if (!rs.getString(1).equals(fingerprint)) {
                        respond(exchange, 422, "{\"error\":{\"type\":\"idempotency_error\",\"code\":\"idempotency_key_reused\"}}", false);
                    } else {
                        respond(exchange, rs.getInt(2), rs.getString(3), true);
                    }
                    return;
                }
            }
        }

        // ACT: not found, so charge, with a Stripe key made up for this call.
        String chargeId = "chg_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
        StringBuilder form = new StringBuilder()
                .append("amount=").append(find(AMOUNT, body)).append("&currency=").append(find(CURRENCY, body))
                .append("&payment_method=").append(find(PAYMENT_METHOD, body)).append("&confirm=true")
                .append("&metadata[chargeonce_charge_id]=").append(chargeId)
                // The same identity of (client, key) as the service writes (KeyIdentities, Keys.identity): the audit
                // maps PaymentIntents to keys by it. Labelling the payment is not what makes this service wrong.
                .append("&metadata[chargeonce_key]=").append(Keys.identity(client, key));
        int meta = body.indexOf("\"metadata\"");
        if (meta >= 0) {
            Matcher m = METADATA.matcher(body.substring(meta + 10, body.indexOf('}', meta)));
            while (m.find()) {
                form.append("&metadata[").append(enc(m.group(1))).append("]=").append(enc(m.group(2)));
            }
        }
        HttpResponse<String> stripeAnswer;
        try {
            stripeAnswer = stripe.send(HttpRequest.newBuilder(URI.create(stripeBase + "/v1/payment_intents"))
                    .timeout(Duration.ofSeconds(8)).header("Authorization", "Bearer sk_test_sandbox")
                    .header("Idempotency-Key", UUID.randomUUID().toString())
                    .header("Content-Type", "application/x-www-form-urlencoded")
                    .POST(HttpRequest.BodyPublishers.ofString(form.toString())).build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            respond(exchange, 503, "{\"error\":{\"type\":\"api_error\",\"code\":\"stripe_unreachable\"}}", false);
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        int status;
        String answer;
        String pi = find(Pattern.compile("\"id\":\"(pi_\\w+)\""), stripeAnswer.body());
        if (stripeAnswer.statusCode() == 200 && stripeAnswer.body().contains("\"status\":\"succeeded\"")) {
            status = 201;
            answer = "{\"id\":\"" + chargeId + "\",\"object\":\"charge\",\"status\":\"succeeded\",\"amount\":" + find(AMOUNT, body)
                    + ",\"currency\":\"" + find(CURRENCY, body) + "\",\"payment_intent\":\"" + pi + "\"}";
        } else if (stripeAnswer.statusCode() == 402 || stripeAnswer.statusCode() == 200) {
            status = 402;
            answer = "{\"error\":{\"type\":\"card_error\",\"code\":\"card_declined\",\"charge\":\"" + chargeId
                    + "\",\"payment_intent\":\"" + pi + "\"}}";
        } else {
            respond(exchange, 503, "{\"error\":{\"type\":\"api_error\",\"code\":\"stripe_" + stripeAnswer.statusCode() + "\"}}", false);
            return;
        }
        try (Connection c = connect(primaryUrl); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, status, response_status, response_body, payment_intent_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (client_id, idempotency_key) DO NOTHING""")) {
            ps.setString(1, chargeId);
            ps.setString(2, client);
            ps.setString(3, key);
            ps.setString(4, fingerprint);
            ps.setString(5, status == 201 ? "completed" : "failed");
            ps.setInt(6, status);
            ps.setString(7, answer);
            ps.setString(8, pi);
            ps.executeUpdate();
        }
        respond(exchange, status, answer, false);
    }

    static Connection connect(String url) throws SQLException {
        return DriverManager.getConnection(url + "?connectTimeout=3&socketTimeout=10", "postgres", "x");
    }

    static String find(Pattern p, String text) {
        Matcher m = p.matcher(text);
        return m.find() ? m.group(1) : "";
    }

    static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    static void respond(HttpExchange exchange, int status, String body, boolean replayed) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", "application/json");
        if (replayed) {
            exchange.getResponseHeaders().set("Idempotent-Replayed", "true");
        }
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }
}

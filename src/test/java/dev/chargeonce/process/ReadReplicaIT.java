package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.sandbox.StripeSandbox;
import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TcpProxy;
import dev.chargeonce.testing.TestClients;
import dev.chargeonce.testing.TestReplica;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The incident this service exists to prevent, against a real streaming replica that replays every commit
 * {@link TestReplica#APPLY_DELAY} late: an idempotency lookup routed to a lagging replica makes a retry look new.
 *
 * <p>The service is configured with that replica as its read data source, through a {@link TcpProxy} that counts
 * every byte sent to it: the POST path (claim, replay lookup, finish) must send none, while the read endpoints
 * do use it and still answer a charge the replica does not have yet. A deliberately naive check-then-act on the
 * same replica, in this class, charges twice: the control that shows the scenario really bites.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ReadReplicaIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    ProcessEnvironment env;
    TcpProxy replicaProxy;
    ServiceProcess service;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeAll
    void startServiceWithLaggingReplica() throws IOException {
        env = new ProcessEnvironment("replica");
        replicaProxy = new TcpProxy(TestReplica.port());
        Map<String, String> config = env.serviceConfig();
        config.putAll(TestReplica.serviceConfig(replicaProxy.port(), env.database));
        // Nothing scheduled talks to the replica here, so every byte the proxy counts comes from a request.
        config.put("chargeonce.replica.lag-interval", "off");
        config.put("quarkus.datasource.replica.jdbc.background-validation-interval", "1h");
        config.put("quarkus.datasource.replica.jdbc.idle-removal-interval", "1h");
        service = ServiceProcess.start("replica", config);
        // The database and the service's schema exist on the replica: what it lacks from now on is rows.
        TestReplica.awaitCaughtUp(Duration.ofSeconds(60));
    }

    @AfterAll
    void stop() throws IOException {
        if (service != null) {
            service.close();
        }
        if (replicaProxy != null) {
            replicaProxy.close();
        }
        if (env != null) {
            env.close();
        }
    }

    /** How many times a scenario that must fit in the lag window is tried on a machine too busy to fit it. */
    private static final int WINDOW_ATTEMPTS = 3;

    @Test
    void retriesInsideTheLagWindowAreReplaysAndAGetReadsItsOwnWrite() throws Exception {
        // Warm the service up (class loading, JIT, the Stripe client) so the scenario below fits in the window.
        assertEquals(201, client.post(service.uri("/v1/charges"), UUID.randomUUID().toString(), ChargeClient.VISA,
                Duration.ofSeconds(10)).status());
        for (int attempt = 1; attempt <= WINDOW_ATTEMPTS; attempt++) {
            if (chargeRetryAndReadInsideTheLagWindow(UUID.randomUUID().toString())) {
                return;
            }
            System.out.printf("attempt %d did not fit in the replica's %s lag window (busy machine); again%n",
                    attempt, TestReplica.APPLY_DELAY);
        }
        throw new AssertionError("no attempt fitted in the replica's lag window: nothing was proven about lag");
    }

    /**
     * A charge, five retries, a GET and a list, all checked for correctness; returns whether they all ran while
     * the replica did not have the charge yet (otherwise they proved nothing about a lagging replica).
     */
    private boolean chargeRetryAndReadInsideTheLagWindow(String key) throws Exception {
        long bytesBefore = replicaProxy.bytesToTarget();
        long connectionsBefore = replicaProxy.connectionsAccepted();
        double missingBefore = metric("chargeonce_replica_fallbacks_total", "reason=\"missing\"");

        ChargeClient.Answer first = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(10));
        long answeredAt = System.currentTimeMillis();
        assertEquals(201, first.status(), first.body());
        String chargeId = JSON.readTree(first.body()).get("id").asText();
        List<ChargeClient.Answer> retries = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            retries.add(client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(10)));
        }
        Duration lagDuringRetries = TestReplica.lag();
        boolean retriesInsideWindow = !replicaHasKey(key);

        for (ChargeClient.Answer retry : retries) {
            assertEquals(201, retry.status(), retry.body());
            assertTrue(retry.replayed(), "a retry is a replay: " + retry);
            assertEquals(first.body(), retry.body(), "a replay is byte for byte the first answer");
        }
        List<StripeSandbox.PaymentIntent> intents = env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(TestClients.ACME, key));
        assertEquals(1, intents.size(), "Stripe saw one PaymentIntent for the key");
        assertEquals(connectionsBefore, replicaProxy.connectionsAccepted(), "the POST path never connected to the replica");
        assertEquals(bytesBefore, replicaProxy.bytesToTarget(), "the POST path never sent a statement to the replica");

        // Read-your-writes: a GET and a list right after the POST answer the charge, replica or not.
        HttpResponse<String> get = client.get(service.uri("/v1/charges/" + chargeId));
        HttpResponse<String> list = client.get(service.uri("/v1/charges?limit=5"));
        boolean readsInsideWindow = !replicaHasKey(key);
        assertEquals(200, get.statusCode(), get.body());
        JsonNode charge = JSON.readTree(get.body());
        assertEquals(chargeId, charge.get("id").asText());
        assertEquals("succeeded", charge.get("status").asText());
        assertEquals(intents.get(0).id(), charge.get("payment_intent").asText());
        assertEquals(200, list.statusCode(), list.body());
        assertEquals(chargeId, JSON.readTree(list.body()).get("data").get(0).get("id").asText(), "the list shows the new charge first");
        assertTrue(replicaProxy.bytesToTarget() > bytesBefore,
                "the read endpoints did ask the replica first (the proxy sees replica traffic, so the zero above means something)");
        if (!retriesInsideWindow || !readsInsideWindow) {
            return false;
        }
        // Nothing else reads from the replica here (no lag gauge, tests one after the other): exactly these two.
        assertEquals(missingBefore + 2, metric("chargeonce_replica_fallbacks_total", "reason=\"missing\""),
                "both reads fell back to the primary because the replica did not have the charge yet");

        // How far behind the replica really was: from the row's creation on the primary (same host clock) and
        // from the 201, until the row shows up on the replica.
        long visibleAt = awaitOnReplica(key);
        long visibleAfterAnswerMillis = visibleAt - answeredAt;
        long rowLagMillis = visibleAt - createdAtOnPrimary(key).toEpochMilli();
        System.out.printf("replica lag observed: charge visible on the replica %d ms after its INSERT on the primary, "
                + "%d ms after its 201; replica-side now() - pg_last_xact_replay_timestamp() during the retries: %d ms%n",
                rowLagMillis, visibleAfterAnswerMillis, lagDuringRetries.toMillis());
        assertTrue(rowLagMillis >= TestReplica.APPLY_DELAY.toMillis() - 100,
                "the replica was really " + TestReplica.APPLY_DELAY + " behind: the row appeared " + rowLagMillis + " ms after its INSERT");

        // Once replayed (and finished there), the replica answers the same charge.
        awaitFinishedOnReplica(key);
        HttpResponse<String> again = client.get(service.uri("/v1/charges/" + chargeId));
        assertEquals(200, again.statusCode());
        assertEquals(charge, JSON.readTree(again.body()), "replica and primary show the same charge");
        return true;
    }

    @Test
    void aReplicaThatIsDownIsReadAround() throws Exception {
        String key = UUID.randomUUID().toString();
        ChargeClient.Answer created = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(10));
        assertEquals(201, created.status(), created.body());
        String chargeId = JSON.readTree(created.body()).get("id").asText();
        // The counter is the service's total since start-up (other tests of this class count too): compare.
        double errorsBefore = metric("chargeonce_replica_fallbacks_total", "reason=\"error\"");
        replicaProxy.cut();
        try {
            HttpResponse<String> get = client.get(service.uri("/v1/charges/" + chargeId));
            HttpResponse<String> list = client.get(service.uri("/v1/charges?limit=3"));
            assertEquals(200, get.statusCode(), "a replica outage is not the client's problem: " + get.body());
            assertEquals(chargeId, JSON.readTree(get.body()).get("id").asText());
            assertEquals(200, list.statusCode(), list.body());
            assertEquals(chargeId, JSON.readTree(list.body()).get("data").get(0).get("id").asText());
            assertEquals(errorsBefore + 2, metric("chargeonce_replica_fallbacks_total", "reason=\"error\""),
                    "both reads, and only they, fell back on error");
            HttpResponse<String> ready = client.get(service.managementUri("/q/health/ready"));
            assertEquals(200, ready.statusCode(), "the service stays ready without its replica: " + ready.body());
        } finally {
            replicaProxy.restore();
        }
    }

    /**
     * The control: the check-then-act of the incident, in test code only. SELECT the key on the replica; if it is
     * not there, charge with a fresh Stripe key and INSERT on the primary. Its retry, inside the lag window, finds
     * nothing on the replica and charges the customer a second time.
     */
    @Test
    void naiveLookupOnTheLaggingReplicaChargesTwice() throws Exception {
        try (Connection c = env.connect(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS naive_charges (client_id text, idempotency_key text, payment_intent text,"
                    + " PRIMARY KEY (client_id, idempotency_key))");
        }
        TestReplica.awaitCaughtUp(Duration.ofSeconds(60)); // the naive lookup's table exists on the replica
        for (int attempt = 1; attempt <= WINDOW_ATTEMPTS; attempt++) {
            String key = UUID.randomUUID().toString();
            NaiveAnswer first = naiveCharge(key);
            NaiveAnswer retry = naiveCharge(key);
            int paymentIntents = env.stripe.intentsForCharge("naive-" + key).size();
            if (retry.replayed()) {
                // The replica had already caught up: a busy machine, not the scenario. Only then is 1 right.
                assertEquals(1, paymentIntents);
                System.out.printf("naive attempt %d: the retry came after the lag window (busy machine); again%n", attempt);
                continue;
            }
            System.out.printf("naive control (lookup on the replica, then charge): %d PaymentIntents for one key; "
                    + "first %s, retry %s%n", paymentIntents, first, retry);
            assertFalse(retry.stored(), "the primary already had the key: the naive code learns it after charging");
            assertEquals(2, paymentIntents, "the naive lookup on the replica charged the customer twice");
            return;
        }
        throw new AssertionError("no naive retry ran inside the replica's lag window: the control proved nothing");
    }

    private record NaiveAnswer(String paymentIntent, boolean replayed, boolean stored) {
    }

    private NaiveAnswer naiveCharge(String key) throws Exception {
        try (Connection replica = TestReplica.connect(env.database); PreparedStatement ps = replica.prepareStatement(
                "SELECT payment_intent FROM naive_charges WHERE client_id = ? AND idempotency_key = ?")) {
            ps.setString(1, TestClients.ACME);
            ps.setString(2, key);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return new NaiveAnswer(rs.getString(1), true, false);
                }
            }
        }
        String paymentIntent = createPaymentIntent(UUID.randomUUID().toString(), "naive-" + key);
        try (Connection primary = env.connect(); PreparedStatement ps = primary.prepareStatement(
                "INSERT INTO naive_charges VALUES (?, ?, ?) ON CONFLICT DO NOTHING")) {
            ps.setString(1, TestClients.ACME);
            ps.setString(2, key);
            ps.setString(3, paymentIntent);
            return new NaiveAnswer(paymentIntent, false, ps.executeUpdate() == 1);
        }
    }

    /** A Stripe create-and-confirm at the sandbox, as a naive service would send it. */
    private String createPaymentIntent(String stripeIdempotencyKey, String chargeTag) throws Exception {
        Map<String, String> form = new LinkedHashMap<>();
        form.put("amount", "1000");
        form.put("currency", "usd");
        form.put("payment_method", "pm_card_visa");
        form.put("confirm", "true");
        form.put("metadata[chargeonce_charge_id]", chargeTag);
        String body = form.entrySet().stream()
                .map(e -> URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8) + "=" + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
                .collect(Collectors.joining("&"));
        HttpResponse<String> response = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(env.stripe.baseUrl() + "/v1/payment_intents"))
                        .header("Authorization", "Bearer sk_test_sandbox").header("Idempotency-Key", stripeIdempotencyKey)
                        .header("Content-Type", "application/x-www-form-urlencoded")
                        .POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, response.statusCode(), response.body());
        return JSON.readTree(response.body()).get("id").asText();
    }

    private boolean replicaHasKey(String key) throws SQLException {
        return replicaStatus(key) != null;
    }

    private String replicaStatus(String key) throws SQLException {
        try (Connection c = TestReplica.connect(env.database); PreparedStatement ps = c.prepareStatement(
                "SELECT status FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, TestClients.ACME);
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(TestClients.ACME, key));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private Instant createdAtOnPrimary(String key) throws SQLException {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT created_at FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, TestClients.ACME);
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(TestClients.ACME, key));
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next(), "the primary has the charge");
                return rs.getTimestamp(1).toInstant();
            }
        }
    }

    /** Polls the replica until it has the key; returns the wall-clock time it first saw it. */
    private long awaitOnReplica(String key) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!replicaHasKey(key)) {
            assertTrue(System.nanoTime() < deadline, "the replica never replayed the charge");
            Thread.sleep(20);
        }
        return System.currentTimeMillis();
    }

    private void awaitFinishedOnReplica(String key) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!"completed".equals(replicaStatus(key))) {
            assertTrue(System.nanoTime() < deadline, "the replica never replayed the finished charge");
            Thread.sleep(50);
        }
    }

    /** One sample of a counter or gauge from the service's Prometheus endpoint (0 when absent). */
    private double metric(String name, String labelFragment) {
        HttpResponse<String> metrics = client.get(service.managementUri("/q/metrics"));
        return metrics.body().lines()
                .filter(line -> line.startsWith(name + "{") || line.startsWith(name + " "))
                .filter(line -> labelFragment == null || line.contains(labelFragment))
                .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
                .sum();
    }
}

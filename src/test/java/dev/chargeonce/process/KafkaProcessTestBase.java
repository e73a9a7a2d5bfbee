package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.sandbox.StripeSandbox;
import dev.chargeonce.testing.KafkaBroker;
import dev.chargeonce.testing.KafkaTestClients;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * What the Kafka process tests share: a real broker (single-node KRaft, a child JVM on loopback, one per test
 * class), a database and a Stripe sandbox per test ({@link ProcessEnvironment}), fresh topics and group per test,
 * the packaged service, and the audits. Two classes ({@link KafkaIngressIT}, {@link KafkaGroupAndFailoverIT}) so
 * that the two test JVMs of the suite share the work.
 */
abstract class KafkaProcessTestBase {

    static final String CLIENT = "orders";
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newHttpClient();

    static KafkaBroker broker;
    static KafkaTestClients kafka;

    ProcessEnvironment env;
    final List<ServiceProcess> services = new ArrayList<>();
    String commands;
    String results;
    String deadLetters;
    String group;

    @BeforeAll
    static void startBroker() {
        broker = KafkaBroker.start(Path.of("target", "kafka-tests"));
        kafka = new KafkaTestClients(broker.bootstrapServers());
    }

    @AfterAll
    static void stopBroker() {
        if (kafka != null) {
            kafka.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("kafka");
        String run = UUID.randomUUID().toString().substring(0, 8);
        commands = "commands-" + run;
        results = "results-" + run;
        deadLetters = "dlt-" + run;
        group = "chargeonce-" + run;
    }

    @AfterEach
    void tearDown() throws Exception {
        for (ServiceProcess service : services) {
            service.close();
        }
        env.close();
    }

    Map<String, String> config(Duration lease) {
        Map<String, String> config = env.serviceConfig();
        ProcessEnvironment.shortLease(config, lease, Duration.ofSeconds(3));
        config.put("chargeonce.recovery.interval", "1s");
        config.put("chargeonce.kafka.enabled", "true");
        config.put("chargeonce.kafka.bootstrap-servers", broker.bootstrapServers());
        config.put("chargeonce.kafka.commands-topic", commands);
        config.put("chargeonce.kafka.results-topic", results);
        config.put("chargeonce.kafka.dead-letter-topic", deadLetters);
        config.put("chargeonce.kafka.group-id", group);
        config.put("chargeonce.kafka.client-id", CLIENT);
        config.put("chargeonce.kafka.gauge-interval", "1s");
        // A member killed with -9 leaves the group when its session ends: short, so that the tests' rebalances are.
        config.put("chargeonce.kafka.client.\"session.timeout.ms\"", "6000");
        config.put("chargeonce.kafka.client.\"heartbeat.interval.ms\"", "1000");
        return config;
    }

    ServiceProcess start(String name, Map<String, String> config) {
        ServiceProcess service = ServiceProcess.start(name, config);
        services.add(service);
        return service;
    }

    static String command(long amount, String orderId) {
        return "{\"amount\":" + amount + ",\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"metadata\":{\"order_id\":\""
                + orderId + "\"}}";
    }

    void auditLostCommandsChargedOnce(ServiceProcess service, List<String> events) throws Exception {
        await("the lost commands are read again and charged", Duration.ofSeconds(60),
                () -> finishedRows() == events.size() && storedOffset() == events.size());
        await("their results are published", Duration.ofSeconds(30), () -> outboxUnsent() == 0);
        assertTrue(metric(service, "chargeonce_kafka_offset_rewinds_total") >= 1, "the partition was read again");
        for (String event : events) {
            assertEquals("completed", rowStatus(event), event);
            List<StripeSandbox.PaymentIntent> intents = env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(CLIENT, event));
            assertEquals(1, intents.size(), "one PaymentIntent for " + event);
            try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                    "SELECT response_body FROM stripe_intents WHERE client_id = ? AND idempotency_key = ?")) {
                ps.setString(1, CLIENT);
                ps.setString(2, event);
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    assertTrue(rs.getString(1).contains(intents.get(0).id()), "the answer names the PaymentIntent Stripe made first");
                }
            }
        }
        assertEquals(events.size(), env.stripe.ledger().size(), "no PaymentIntent beyond the commands' (Stripe's whole ledger)");
        // A lost row comes back under its charge id: the results published before and after the loss name one charge.
        Map<String, Set<String>> chargeIdsOfEvent = new HashMap<>();
        for (JsonNode result : published()) {
            if (!result.get("charge_id").isNull()) {
                chargeIdsOfEvent.computeIfAbsent(result.get("event_id").asText(), k -> new HashSet<>()).add(result.get("charge_id").asText());
            }
        }
        for (String event : events) {
            assertEquals(1, chargeIdsOfEvent.getOrDefault(event, Set.of()).size(),
                    "one charge id on the result topic for " + event + ": " + chargeIdsOfEvent.get(event));
        }
    }

    long storedOffset() {
        return count("SELECT coalesce(sum(next_offset), -1) FROM kafka_offsets WHERE group_id = '" + group + "'");
    }

    // ---- the audit ----------------------------------------------------------------------------------------------

    /**
     * For each event id: exactly one PaymentIntent at Stripe, one finished row, and exactly one distinct result on
     * the results topic after dedup by charge id, equal to the row's answer; and no result for any other charge.
     */
    void auditExactlyOnce(List<String> events) throws Exception {
        Map<String, String[]> rows = new HashMap<>();
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT idempotency_key, id, status, response_status, response_body FROM stripe_intents WHERE client_id = ?")) {
            ps.setString(1, CLIENT);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.put(rs.getString(1), new String[]{rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5)});
                }
            }
        }
        assertEquals(new HashSet<>(events), rows.keySet(), "one row per event id, no other");
        Map<String, List<JsonNode>> byCharge = new LinkedHashMap<>();
        for (JsonNode result : published()) {
            if (!result.get("charge_id").isNull()) {
                byCharge.computeIfAbsent(result.get("charge_id").asText(), k -> new ArrayList<>()).add(result);
            }
        }
        Set<String> chargeIds = new HashSet<>();
        for (String event : events) {
            String[] row = rows.get(event);
            List<StripeSandbox.PaymentIntent> intents = env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(CLIENT, event));
            assertEquals(1, intents.size(), "one PaymentIntent for " + event);
            assertEquals("completed", row[1], event);
            chargeIds.add(row[0]);
            List<JsonNode> theirs = byCharge.getOrDefault(row[0], List.of());
            assertFalse(theirs.isEmpty(), "a result for " + event);
            for (JsonNode result : theirs) {
                assertEquals(event, result.get("event_id").asText());
                assertEquals(Integer.parseInt(row[2]), result.get("status").asInt());
                assertEquals(JSON.readTree(row[3]), result.get("body"), "the result is the row's answer");
            }
            assertTrue(row[3].contains(intents.get(0).id()), "the answer names the PaymentIntent Stripe made");
        }
        assertEquals(chargeIds, byCharge.keySet(), "after dedup by charge id: one result per charge, none else");
        assertEquals(events.size(), env.stripe.ledger().size(), "no PaymentIntent beyond the commands' (Stripe's whole ledger)");
    }

    List<JsonNode> published() throws Exception {
        List<JsonNode> parsed = new ArrayList<>();
        for (KafkaTestClients.Message m : kafka.readAll(results)) {
            JsonNode node = JSON.readTree(m.value());
            assertKeyed(node, m);
            parsed.add(node);
        }
        return parsed;
    }

    /**
     * A charge's results are keyed by the event id; a refusal (no charge id) by the event id, a tab, {@code refused},
     * a tab and the refused record's place: never an event id (printable ASCII), so never in an outcome's place.
     */
    void assertKeyed(JsonNode result, KafkaTestClients.Message m) {
        String event = result.get("event_id").asText();
        if (result.get("charge_id").isNull()) {
            assertTrue(m.key().matches(java.util.regex.Pattern.quote(event + "\trefused\tkafka:" + commands + "-") + "\\d+@\\d+"),
                    "a refusal keyed apart from the event id: " + m.key());
            assertEquals("refusal", m.headers().get("chargeonce-result-kind"), m.value());
        } else {
            assertEquals(event, m.key(), "a charge's results keyed by its event id");
            int status = result.get("status").asInt();
            boolean undecided = status == 202 || status == 200
                    && List.of("requires_action", "processing").contains(result.get("body").path("status").asText());
            assertEquals(undecided ? "accepted" : "outcome", m.headers().get("chargeonce-result-kind"), m.value());
        }
    }

    String rowStatus(String event) {
        try {
            return env.rowStatus(event);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    long rows() {
        return count("SELECT count(*) FROM stripe_intents");
    }

    long finishedRows() {
        return count("SELECT count(*) FROM stripe_intents WHERE status <> 'processing'");
    }

    long outboxRows(String event) {
        return count("SELECT count(*) FROM kafka_outbox WHERE event_id = '" + event.replace("'", "''") + "'");
    }

    long outboxUnsent() {
        return count("SELECT count(*) FROM kafka_outbox WHERE sent_at IS NULL");
    }

    long count(String sql) {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static double metric(ServiceProcess service, String series) throws Exception {
        String body = HTTP.send(HttpRequest.newBuilder(URI.create(service.managementUri("/q/metrics").toString())).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        for (String line : body.split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        throw new AssertionError("no series " + series + " in /q/metrics");
    }

    static void await(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out (" + timeout + "): " + what);
            }
            Thread.sleep(200);
        }
    }
}

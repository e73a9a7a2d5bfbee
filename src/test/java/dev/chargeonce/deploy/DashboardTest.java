package dev.chargeonce.deploy;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.testing.Management;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The Grafana dashboard in {@code k8s/} shows only what the service exports: every metric a panel queries is in
 * {@code /q/metrics} after a charge and a refund (a panel on a misspelt or renamed metric is an empty graph at the
 * moment someone needs it). k8s/validate.mjs checks the same panels' PromQL syntax.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class DashboardTest {

    /** Metric names in a PromQL expression: ours, and the HTTP server's. Label names and functions do not match. */
    static final Set<String> ONLY_WITH_A_REPLICA = Set.of("chargeonce_replica_lag_seconds");

    /**
     * The Kafka ingress' meters exist only with the ingress on (off in this suite): registered by KafkaMetrics,
     * exported in KafkaIngressIT, which checks the dashboard's Kafka metrics against a real service's /q/metrics.
     */
    static boolean onlyWithKafka(String metric) {
        return metric.startsWith("chargeonce_kafka_");
    }

    static final Pattern METRIC = Pattern.compile("\\b((?:chargeonce|http_server)_[a-z0-9_]+)\\b");

    static JsonNode dashboard() throws Exception {
        Manifests.Document configMap = Manifests.load(Manifests.K8S).all().stream()
                .filter(d -> d.kind().equals("ConfigMap") && d.body().at("/metadata/labels/grafana_dashboard").isTextual())
                .findFirst().orElseThrow(() -> new AssertionError("no ConfigMap labelled grafana_dashboard in k8s/"));
        return new ObjectMapper().readTree(configMap.body().at("/data/chargeonce.json").asText());
    }

    static Set<String> metricsOf(JsonNode dashboard) {
        Set<String> metrics = new TreeSet<>();
        dashboard.path("panels").forEach(panel -> panel.path("targets").forEach(target -> {
            Matcher m = METRIC.matcher(target.path("expr").asText());
            while (m.find()) {
                metrics.add(m.group(1));
            }
        }));
        return metrics;
    }

    @Test
    void everyPanelQueriesAMetricTheServiceExports() throws Exception {
        JsonNode dashboard = dashboard();
        assertEquals("chargeonce", dashboard.path("uid").asText());
        List<String> titles = dashboard.path("panels").findValuesAsText("title");
        for (String needed : List.of("Charges by outcome", "Replays", "409", "Stripe call latency", "Stripe errors", "circuit",
                "processing", "parked", "findings", "Webhooks", "Replica lag", "Kafka consumer lag", "Kafka outbox backlog",
                "Kafka redeliveries", "Kafka dead letters")) {
            assertTrue(titles.stream().anyMatch(t -> t.contains(needed)), "a panel for " + needed + ": " + titles);
        }
        Set<String> queried = metricsOf(dashboard);
        assertTrue(queried.size() >= 15, "the panels query the service's metrics: " + queried);

        String charge = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body("{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}")
                .post("/v1/charges").then().statusCode(201).extract().path("id");
        String refund = "{\"amount\": 100}";
        String refundKey = UUID.randomUUID().toString();
        for (int i = 0; i < 2; i++) { // the second is a replay
            given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", refundKey)
                    .contentType(ContentType.JSON).body(refund).post("/v1/charges/" + charge + "/refunds").then().statusCode(201);
        }
        String exported = Management.given().get("/q/metrics").then().statusCode(200).extract().asString();
        Set<String> names = exported.lines().filter(l -> !l.startsWith("#") && !l.isBlank())
                .map(l -> l.replaceAll("[{ ].*", "")).collect(Collectors.toCollection(TreeSet::new));
        Set<String> missing = new TreeSet<>();
        for (String metric : queried) {
            if (!names.contains(metric) && !ONLY_WITH_A_REPLICA.contains(metric) && !onlyWithKafka(metric)) {
                missing.add(metric);
            }
        }
        // The replica's gauges exist only with a replica configured (this suite has none): registered by ReplicaLag,
        // exported in ReadReplicaIT and TwoInstancesIT, which assert on them.
        String replicaLag = Files.readString(Path.of("src/main/java/dev/chargeonce/replica/ReplicaLag.java"));
        ONLY_WITH_A_REPLICA.forEach(metric -> assertTrue(replicaLag.contains("\"" + metric.replace('_', '.') + "\""),
                metric + " is registered by ReplicaLag"));
        String kafkaMetrics = Files.readString(Path.of("src/main/java/dev/chargeonce/kafka/KafkaMetrics.java"));
        queried.stream().filter(DashboardTest::onlyWithKafka).forEach(metric -> assertTrue(kafkaMetrics.contains("\""
                + metric.replaceFirst("_total$", "").replace('_', '.') + "\""), metric + " is registered by KafkaMetrics"));
        assertTrue(queried.stream().filter(DashboardTest::onlyWithKafka).count() >= 6, "panels for the Kafka ingress: " + queried);
        assertTrue(missing.isEmpty(), "panels query metrics the service does not export: " + missing);
        assertFalse(METRIC.matcher("rate(job)").find(), "the extraction itself matches only metric names");
    }
}

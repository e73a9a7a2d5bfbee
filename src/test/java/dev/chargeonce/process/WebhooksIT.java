package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.chargeonce.sandbox.SandboxWebhooks;
import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import dev.chargeonce.testing.TestPostgres;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Stripe's at-least-once delivery against two real instances: one event delivered ten times at once, split over
 * both, changes the charge once and is acknowledged ten times; and an instance killed (kill -9) between recording an
 * event and committing leaves nothing behind, so Stripe's redelivery is applied, once.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WebhooksIT {

    static final ObjectMapper JSON = new ObjectMapper();
    static final String THREE_DS = "{\"amount\": 1500, \"currency\": \"eur\", \"payment_method\": \"pm_card_authenticationRequired\"}";

    ProcessEnvironment env;
    ServiceProcess a;
    ServiceProcess b;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @BeforeAll
    void start() {
        env = new ProcessEnvironment("webhooks");
        Map<String, String> config = env.serviceConfig();
        a = ServiceProcess.start("webhooks-a", config);
        b = ServiceProcess.start("webhooks-b", config);
    }

    @AfterAll
    void stop() throws IOException {
        for (ServiceProcess instance : new ServiceProcess[] {a, b}) {
            if (instance != null) {
                instance.close();
            }
        }
        if (env != null) {
            env.close();
        }
    }

    @Test
    void oneEventDeliveredTenTimesAtOnceToTwoInstancesChangesTheChargeOnce() throws Exception {
        Charge charge = threeDSecureCharge();
        String event = succeededEvent(charge.paymentIntent());
        CountDownLatch go = new CountDownLatch(1);
        List<Future<HttpResponse<String>>> deliveries = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(10)) {
            for (int i = 0; i < 10; i++) {
                ServiceProcess instance = i % 2 == 0 ? a : b;
                deliveries.add(pool.submit(() -> {
                    go.await();
                    return deliver(instance, event);
                }));
            }
            go.countDown();
        }
        int fresh = 0;
        for (Future<HttpResponse<String>> delivery : deliveries) {
            HttpResponse<String> answer = delivery.get();
            assertEquals(200, answer.statusCode(), answer.body());
            fresh += JSON.readTree(answer.body()).get("duplicate").asBoolean() ? 0 : 1;
        }
        assertEquals(1, fresh, "one delivery recorded it; nine found it recorded");
        assertEquals(1, inboxRows(event), "one row in the inbox");
        assertEquals("succeeded", status(charge.id()));
    }

    @Test
    void anInstanceKilledBetweenRecordingAnEventAndCommittingLeavesNothingAndTheRedeliveryIsApplied() throws Exception {
        Charge charge = threeDSecureCharge();
        String event = succeededEvent(charge.paymentIntent());
        // Inside the event's transaction, after its inbox row is inserted, the charge's lock waits for this test's
        // lock on the row while the test kills the instance: the transaction can never commit. (A lock, not a
        // trigger: the same on Citus, which refuses triggers on distributed tables.)
        Connection locker = env.connect();
        try {
            locker.setAutoCommit(false);
            String clientId;
            try (PreparedStatement read = locker.prepareStatement("SELECT client_id FROM stripe_intents WHERE id = ?")) {
                read.setString(1, charge.id());
                try (ResultSet rs = read.executeQuery()) {
                    assertTrue(rs.next(), "the charge's row");
                    clientId = rs.getString(1);
                }
            }
            try (PreparedStatement lock = locker.prepareStatement(
                    "SELECT 1 FROM stripe_intents WHERE id = ? AND client_id = ? FOR UPDATE")) {
                lock.setString(1, charge.id());
                lock.setString(2, clientId);
                lock.executeQuery().close();
            }
            CompletableFuture<Integer> dying = CompletableFuture.supplyAsync(() -> {
                try {
                    return deliver(a, event).statusCode();
                } catch (IOException e) {
                    return -1;
                } catch (InterruptedException e) {
                    return -2;
                }
            });
            awaitStalledTransaction(locker, Duration.ofSeconds(30));
            a.kill9();
            assertEquals(-1, (int) dying.get(), "the instance died before it could acknowledge");
            locker.rollback();
            // Stripe did not get a 2xx: it redelivers (here to the other instance).
            HttpResponse<String> redelivery = deliver(b, event);
            assertEquals(200, redelivery.statusCode(), redelivery.body());
            assertEquals(false, JSON.readTree(redelivery.body()).get("duplicate").asBoolean(),
                    "the dead instance's transaction left no inbox row: the redelivery is applied");
            assertEquals("succeeded", status(charge.id()));
            assertTrue(JSON.readTree(deliver(b, event).body()).get("duplicate").asBoolean(), "and only once");
            assertEquals(1, inboxRows(event));
        } finally {
            locker.close();
            a.startProcess();
        }
    }

    record Charge(String id, String paymentIntent) {
    }

    private Charge threeDSecureCharge() throws Exception {
        ChargeClient.Answer answer = client.post(a.uri("/v1/charges"), UUID.randomUUID().toString(), THREE_DS, Duration.ofSeconds(30));
        assertEquals(202, answer.status(), answer.body());
        JsonNode body = JSON.readTree(answer.body());
        return new Charge(body.get("id").asText(), body.get("payment_intent").asText());
    }

    /** The event Stripe sends when the customer completes 3-D Secure: the PaymentIntent, now succeeded. */
    private String succeededEvent(String paymentIntentId) throws Exception {
        ObjectNode pi = (ObjectNode) JSON.readTree(http.send(HttpRequest.newBuilder(
                        java.net.URI.create(env.stripe.baseUrl() + "/v1/payment_intents/" + paymentIntentId))
                .header("Authorization", "Bearer sk_test_sandbox").build(), HttpResponse.BodyHandlers.ofString()).body());
        pi.put("status", "succeeded");
        pi.remove("next_action");
        ObjectNode event = JSON.createObjectNode();
        event.put("id", "evt_it" + UUID.randomUUID().toString().replace("-", "").substring(0, 20));
        event.put("object", "event");
        event.put("api_version", SandboxWebhooks.DEFAULT_API_VERSION);
        event.put("created", System.currentTimeMillis() / 1000);
        event.put("type", "payment_intent.succeeded");
        event.putObject("data").set("object", pi);
        return JSON.writeValueAsString(event);
    }

    private HttpResponse<String> deliver(ServiceProcess instance, String event) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(instance.uri("/v1/webhooks/stripe")).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json; charset=utf-8")
                .header("Stripe-Signature", SandboxWebhooks.signatureHeader(event, PostgresAndSandbox.WEBHOOK_SECRET,
                        System.currentTimeMillis() / 1000))
                .POST(HttpRequest.BodyPublishers.ofString(event)).build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Until a statement waits for {@code locker}'s row lock: the event's, whose transaction inserted its inbox row
     * first. On Citus the waiting statement runs on the worker that holds the shard: the coordinator's
     * {@code citus_lock_waits} shows it.
     */
    private void awaitStalledTransaction(Connection locker, Duration timeout) throws Exception {
        int lockerPid;
        try (Statement s = locker.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            lockerPid = rs.getInt(1);
        }
        String waiting = TestPostgres.onCitus()
                ? "SELECT count(*) FROM citus_lock_waits"
                : "SELECT count(*) FROM pg_stat_activity WHERE " + lockerPid + " = ANY (pg_blocking_pids(pid))";
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(waiting)) {
            while (System.nanoTime() < deadline) {
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getInt(1) > 0) {
                        return;
                    }
                }
                Thread.sleep(20);
            }
        }
        throw new AssertionError("the event's transaction never waited for the charge's lock");
    }


    private int inboxRows(String event) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM stripe_events WHERE id = ?")) {
            ps.setString(1, JSON.readTree(event).get("id").asText());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private String status(String chargeId) throws Exception {
        return JSON.readTree(client.get(a.isAlive() ? a.uri("/v1/charges/" + chargeId) : b.uri("/v1/charges/" + chargeId)).body())
                .get("status").asText();
    }
}

package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import dev.chargeonce.testing.TestReplica;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Many pods: two packaged instances of the service on different ports share one primary (and the lagging
 * replica for reads). The claim is one statement on the primary, so which instance a retry reaches does not
 * matter: 64 concurrent requests with one key, spread over both, make one PaymentIntent and one answer.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TwoInstancesIT {

    private static final int REQUESTS = 64;
    /** How long the claim holder's Stripe create takes; below the service's read timeout (8 s). */
    private static final long HOLDER_STRIPE_MILLIS = 6_000;
    private static final ObjectMapper JSON = new ObjectMapper();

    ProcessEnvironment env;
    ServiceProcess instanceA;
    ServiceProcess instanceB;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeAll
    void startTwoInstances() {
        env = new ProcessEnvironment("instances");
        Map<String, String> config = env.serviceConfig();
        config.putAll(TestReplica.serviceConfig(TestReplica.port(), env.database));
        config.put("chargeonce.replica.lag-interval", "1s"); // the scheduler's shortest interval
        instanceA = ServiceProcess.start("instance-a", config);
        instanceB = ServiceProcess.start("instance-b", config);
        assertFalse(instanceA.port() == instanceB.port());
        TestReplica.awaitCaughtUp(Duration.ofSeconds(60));
    }

    @AfterAll
    void stop() throws IOException {
        for (ServiceProcess instance : new ServiceProcess[] {instanceA, instanceB}) {
            if (instance != null) {
                instance.close();
            }
        }
        if (env != null) {
            env.close();
        }
    }

    @Test
    void sixtyFourConcurrentRequestsOverTwoInstancesMakeOnePaymentIntentAndOneAnswer() throws Exception {
        String key = UUID.randomUUID().toString();
        int intentsBefore = env.stripe.ledger().size();
        long createsBefore = env.stripe.createRequests();
        // The claim holder's create stays at Stripe for HOLDER_STRIPE_MILLIS (inside the service's 8 s read timeout,
        // so it still answers 201): long enough that every other request, fired at two processes on a busy machine,
        // arrives while the claim is held. With a short latency the late ones are mere replays, and a run without
        // any 409 would prove nothing about the race.
        env.stripe.plan("slow:" + HOLDER_STRIPE_MILLIS);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<ChargeClient.Answer>> futures = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(REQUESTS)) {
            for (int i = 0; i < REQUESTS; i++) {
                ServiceProcess instance = i % 2 == 0 ? instanceA : instanceB;
                futures.add(pool.submit(() -> {
                    start.await();
                    return client.post(instance.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
                }));
            }
            start.countDown();
        }
        assertEquals(0, env.stripe.planLeft(), "the claim holder's create was the slow one");

        List<ChargeClient.Answer> answers = new ArrayList<>();
        int[] chargedBy = new int[2];
        int[] inFlightBy = new int[2];
        for (int i = 0; i < REQUESTS; i++) {
            ChargeClient.Answer answer = futures.get(i).get();
            answers.add(answer);
            chargedBy[i % 2] += answer.status() == 201 ? 1 : 0;
            inFlightBy[i % 2] += answer.status() == 409 ? 1 : 0;
        }
        List<ChargeClient.Answer> charged = answers.stream().filter(a -> a.status() == 201).toList();
        long inFlight = answers.stream().filter(a -> a.status() == 409).count();
        assertFalse(charged.isEmpty(), "the request holding the claim answered 201");
        String body = charged.get(0).body();
        String chargeId = JSON.readTree(body).get("id").asText();
        System.out.printf("two instances, %d concurrent requests with one key: %d x 201 (A %d, B %d), %d x 409 (A %d, B %d), "
                + "%d PaymentIntent(s)%n", REQUESTS, charged.size(), chargedBy[0], chargedBy[1], inFlight, inFlightBy[0],
                inFlightBy[1], env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(TestClients.ACME, key)).size());
        // The race really happened, and across processes: each instance found the key in flight at least once,
        // so one of them answered 409 for a claim the other instance held.
        assertTrue(inFlightBy[0] > 0 && inFlightBy[1] > 0,
                "both instances answered 409 while the claim was held: A " + inFlightBy[0] + ", B " + inFlightBy[1]);
        for (ChargeClient.Answer answer : answers) {
            assertTrue(answer.status() == 201 || answer.status() == 409, "every answer is the charge or in flight: " + answer);
            if (answer.status() == 201) {
                assertEquals(body, answer.body(), "every 201 is byte for byte the same charge");
            } else {
                assertNotNull(answer.retryAfter(), "a 409 says when to retry");
            }
        }
        assertEquals(1, env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(TestClients.ACME, key)).size(), "exactly one PaymentIntent at Stripe for the charge");
        assertEquals(intentsBefore + 1, env.stripe.ledger().size(), "and no other PaymentIntent at all");
        assertEquals(createsBefore + 1, env.stripe.createRequests(), "only the claim holder called Stripe");

        // Every later retry, on either instance, replays the same answer.
        for (ServiceProcess instance : List.of(instanceA, instanceB, instanceA, instanceB)) {
            ChargeClient.Answer replay = client.post(instance.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(10));
            assertEquals(201, replay.status(), replay.body());
            assertTrue(replay.replayed());
            assertEquals(body, replay.body());
        }
        assertEquals(intentsBefore + 1, env.stripe.ledger().size());
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*), min(status), min(response_body) FROM stripe_intents WHERE stripe_identity IN (?, ?)")) {
            ps.setString(1, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.ACME, key));
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.GLOBEX, key));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertEquals(1, rs.getInt(1), "one row for the key");
                assertEquals("completed", rs.getString(2));
                assertEquals(body, rs.getString(3));
            }
        }
    }

    /** The maximum of the samples so far: a gauge is NaN until measured, and Math.max(x, NaN) stays NaN for ever. */
    static double maxIgnoringNaN(double max, double sample) {
        return Double.isNaN(sample) ? max : Math.max(max, sample);
    }

    @Test
    void aPodStartedWhileAnotherMigratesWaitsForTheMigrationRatherThanFailing() throws Exception {
        // A rolling deploy: one pod's migration holds Flyway's schema history (here the test's lock stands in for
        // it) for longer than the pool's bound on one read. A pod starting meanwhile waits for it: the bound is the
        // hot path's (a database that fell silent), not a migration's, which may wait on locks and rewrite tables.
        Map<String, String> config = env.serviceConfig();
        config.put("quarkus.datasource.jdbc.additional-jdbc-properties.watchedReadLimit", "1");
        ServiceProcess instanceC = null;
        try (Connection holder = env.connect()) {
            holder.setAutoCommit(false);
            try (PreparedStatement lock = holder.prepareStatement(
                    "LOCK TABLE flyway_schema_history IN ACCESS EXCLUSIVE MODE")) {
                lock.execute();
            }
            // Released once the starting pod has waited on it for more than twice its read limit.
            java.util.concurrent.CompletableFuture<Boolean> release = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try (Connection watcher = env.connect();
                        PreparedStatement waiting = watcher.prepareStatement(
                                "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'flyway_schema_history'::regclass")) {
                    boolean waited = false;
                    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                    while (!waited && System.nanoTime() < deadline) {
                        try (ResultSet rows = waiting.executeQuery()) {
                            rows.next();
                            waited = rows.getLong(1) > 0;
                        }
                        Thread.sleep(50);
                    }
                    Thread.sleep(2_500);
                    holder.commit();
                    return waited;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            instanceC = ServiceProcess.start("instance-c", config);
            assertTrue(release.get(), "the pod's start waited on the schema history");
            ChargeClient.Answer answer = client.post(instanceC.uri("/v1/charges"), UUID.randomUUID().toString(),
                    ChargeClient.VISA, Duration.ofSeconds(10));
            assertEquals(201, answer.status(), answer.body());
        } finally {
            if (instanceC != null) {
                instanceC.close();
            }
        }
    }

    @Test
    void bothInstancesExportTheReplicaLag() throws Exception {
        // Writes keep the replica behind by its apply delay; the gauge (measured every second) must show it. A
        // gauge is NaN until its first measurement, and a loaded machine may measure late: so the writes go on
        // while sampling, NaN samples are skipped (Math.max keeps a NaN for ever), and the sampling waits for both
        // instances to have shown the lag, up to a generous bound, instead of a window as long as the delay.
        double floor = TestReplica.APPLY_DELAY.toMillis() / 1000.0 - 0.5;
        double maxA = 0;
        double maxB = 0;
        double maxBytes = 0;
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        long nextWrite = 0;
        while (System.nanoTime() < deadline && (maxA < floor || maxB < floor || maxBytes <= 0)) {
            if (System.nanoTime() >= nextWrite) {
                ChargeClient.Answer answer = client.post(instanceA.uri("/v1/charges"), UUID.randomUUID().toString(),
                        ChargeClient.VISA, Duration.ofSeconds(10));
                assertEquals(201, answer.status(), answer.body());
                nextWrite = System.nanoTime() + Duration.ofMillis(500).toNanos();
            }
            maxA = maxIgnoringNaN(maxA, gauge(instanceA, "chargeonce_replica_lag_seconds"));
            maxB = maxIgnoringNaN(maxB, gauge(instanceB, "chargeonce_replica_lag_seconds"));
            maxBytes = maxIgnoringNaN(maxBytes, gauge(instanceA, "chargeonce_replica_lag_bytes"));
            Thread.sleep(200);
        }
        System.out.printf("replica lag gauge while behind: instance A max %.3f s, instance B max %.3f s, max %.0f bytes%n",
                maxA, maxB, maxBytes);
        // While it holds WAL it has not replayed, the replica's last replayed commit is at least the delay old.
        assertTrue(maxA >= floor, "instance A saw the replica " + maxA + " s behind");
        assertTrue(maxB >= floor, "instance B saw the replica " + maxB + " s behind");
        assertTrue(maxBytes > 0, "the replica had WAL to replay");

        // Caught up again: the gauge falls back to 0 (an idle primary is not lag).
        long caughtUpDeadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        double now = gauge(instanceA, "chargeonce_replica_lag_seconds");
        while (now > 0.5 && System.nanoTime() < caughtUpDeadline) {
            Thread.sleep(200);
            now = gauge(instanceA, "chargeonce_replica_lag_seconds");
        }
        assertTrue(now <= 0.5, "the gauge shows the replica caught up: " + now);
    }

    private double gauge(ServiceProcess instance, String name) {
        String metrics = client.get(instance.managementUri("/q/metrics")).body();
        return metrics.lines()
                .filter(line -> line.startsWith(name + "{") || line.startsWith(name + " "))
                .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
                .findFirst()
                .orElseThrow(() -> new AssertionError(name + " is not exported by " + instance.managementUri("/q/metrics")));
    }
}

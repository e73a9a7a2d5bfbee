package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A slow original whose lease runs out while Stripe is still working on it, and a retry that takes the row over:
 * fencing keeps one outcome in the row, the Stripe key keeps one PaymentIntent, and each client's answer agrees
 * with the row (a final answer identical to it, or a "not final yet" 409/503).
 */
class SlowOriginalRacingTakeoverIT {

    /** How long Stripe takes over the original's create: well past its 1 s lease, below its 20 s read timeout. */
    private static final long ORIGINAL_STRIPE_MILLIS = 10_000;

    ProcessEnvironment env;
    ServiceProcess service;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("race");
        Map<String, String> config = env.serviceConfig();
        config.put("chargeonce.idempotency.lease", "1s");
        config.put("chargeonce.recovery.enabled", "false");
        // Long enough that the original waits for the slow Stripe instead of timing out: the SDK's socket, and
        // the fault-tolerance timeout above it (seconds, the annotation's unit).
        config.put("chargeonce.stripe.read-timeout", "20s");
        config.put("dev.chargeonce.stripe.StripeApi/create/Timeout/value", "25");
        service = ServiceProcess.start("race", config);
    }

    @AfterEach
    void tearDown() throws Exception {
        service.close();
        env.close();
    }

    @Test
    void theRowKeepsOneOutcomeAndBothClientsAgreeWithIt() throws Exception {
        String key = UUID.randomUUID().toString();
        // Only the original's create is slow, and far slower than its 1 s lease: the window in which the takeover
        // below must happen is this long, whatever the machine's load.
        env.stripe.plan("slow:" + ORIGINAL_STRIPE_MILLIS);
        CompletableFuture<ChargeClient.Answer> original = CompletableFuture.supplyAsync(
                () -> client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(60)));
        env.awaitCreateRequests(1, Duration.ofSeconds(30));
        awaitLeaseExpired(key, Duration.ofSeconds(30));
        assertEquals(1, env.stripe.executing(), "the original's lease expired while Stripe is still charging it");
        long createsBeforeTakeover = env.stripe.createRequests();

        // The retry takes the row over (a new lease generation) and re-sends the same Stripe key.
        ChargeClient.Answer takeover = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(60));
        // The original's create ran from before the takeover until after its answer: so the row was taken over,
        // and the same key re-sent, while Stripe was charging the original. Otherwise nothing raced.
        assertEquals(1, env.stripe.executing(), "Stripe still charges the original after the takeover answered " + takeover);
        assertFalse(original.isDone(), "the original still waits for Stripe");
        assertTrue(env.stripe.createRequests() > createsBeforeTakeover, "the takeover re-sent the key to Stripe");
        assertTrue(row(key).leaseGeneration >= 2, "the retry took the row over");
        ChargeClient.Answer slow = original.get();

        assertEquals(1, env.stripe.ledger().size(), "one PaymentIntent, whoever won");
        Row row = row(key);
        assertConsistentWithRow(slow, row);
        assertConsistentWithRow(takeover, row);

        // Whatever each got, a further retry ends at the final answer the row holds, and nothing more is charged.
        ChargeClient.Answer last;
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        do {
            Thread.sleep(300);
            last = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
        } while (last.status() != 201 && System.nanoTime() < deadline);
        assertEquals(201, last.status(), last.body());
        Row finished = row(key);
        assertEquals("completed", finished.status);
        assertEquals(finished.body, last.body());
        if (slow.status() == 201) {
            assertEquals(finished.body, slow.body(), "the slow original answered exactly what the row holds");
        }
        if (takeover.status() == 201) {
            assertEquals(finished.body, takeover.body());
        }
        assertEquals(1, env.stripe.ledger().size());
    }

    /** Polls the row until its lease has run out by the database's clock (the one the service's claim reads). */
    private void awaitLeaseExpired(String key, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT lease_until < clock_timestamp() FROM stripe_intents WHERE idempotency_key = ?")) {
            ps.setString(1, key);
            while (true) {
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next() && rs.getBoolean(1)) {
                        return;
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("the original's lease did not expire within " + timeout);
                }
                Thread.sleep(20);
            }
        }
    }

    private static void assertConsistentWithRow(ChargeClient.Answer answer, Row row) {
        if (answer.status() == 201 || answer.status() == 402) {
            assertEquals("completed".equals(row.status) || "failed".equals(row.status), true,
                    "a final answer was given, so the row is final: " + row.status);
            assertEquals(row.body, answer.body(), "the final answer is the row's");
        } else {
            assertTrue(answer.status() == 409 || answer.status() == 503, "otherwise 'not final yet': " + answer);
        }
    }

    record Row(String status, int leaseGeneration, String body) {
    }

    private Row row(String key) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT status, lease_gen, response_body FROM stripe_intents WHERE idempotency_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return new Row(rs.getString(1), rs.getInt(2), rs.getString(3));
            }
        }
    }
}

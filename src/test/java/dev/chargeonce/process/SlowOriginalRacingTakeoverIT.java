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
 * A holder that stalls past its lease while its Stripe request is in flight (a stop-the-world pause, a frozen VM:
 * here a real SIGSTOP of the process), and a retry on another instance that takes the row over and re-sends the
 * same key. A legal configuration cannot make a running holder outlive its lease (start-up refuses a lease shorter
 * than a Stripe call), so a stall is the way it happens. Fencing keeps one outcome in the row, the Stripe key keeps
 * one PaymentIntent, and each client's answer agrees with the row (identical to it, or a "not final yet" 409/503).
 */
class SlowOriginalRacingTakeoverIT {

    private static final Duration LEASE = Duration.ofSeconds(4);
    /** Stripe takes this long over the original's create: the stall begins while it runs. */
    private static final long ORIGINAL_STRIPE_MILLIS = 2_000;

    ProcessEnvironment env;
    ServiceProcess stalled;
    ServiceProcess other;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("race");
        Map<String, String> config = env.serviceConfig();
        ProcessEnvironment.shortLease(config, LEASE, Duration.ofSeconds(3));
        config.put("chargeonce.recovery.enabled", "false");
        stalled = ServiceProcess.start("race-stalled", config);
        other = ServiceProcess.start("race-other", config);
    }

    @AfterEach
    void tearDown() throws Exception {
        stalled.close();
        other.close();
        env.close();
    }

    @Test
    void theRowKeepsOneOutcomeAndBothClientsAgreeWithIt() throws Exception {
        String key = UUID.randomUUID().toString();
        env.stripe.plan("slow:" + ORIGINAL_STRIPE_MILLIS);
        CompletableFuture<ChargeClient.Answer> original = CompletableFuture.supplyAsync(
                () -> client.post(stalled.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(90)));
        env.awaitCreateRequests(1, Duration.ofSeconds(30));
        stalled.pause();
        ChargeClient.Answer takeover;
        try {
            assertEquals(1, env.stripe.executing(), "the holder froze while Stripe was charging its request");
            awaitLeaseExpired(key, Duration.ofSeconds(30));
            long createsBeforeTakeover = env.stripe.createRequests();

            // The retry, on the other instance, takes the row over and re-sends the same Stripe key: Stripe answers
            // with the original's PaymentIntent (or 409 while it still works on it).
            takeover = client.post(other.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(60));
            assertTrue(env.stripe.createRequests() > createsBeforeTakeover, "the takeover re-sent the key to Stripe");
            assertTrue(row(key).leaseGeneration >= 2, "the retry took the row over");
            assertFalse(original.isDone(), "the frozen holder has not answered its client");
        } finally {
            stalled.resume();
        }
        // The holder wakes up with Stripe's answer in its socket and a lease that is no longer its own.
        ChargeClient.Answer woken = original.get();
        env.awaitStripeCharged(TestClients.ACME, key, Duration.ofSeconds(30));

        assertEquals(1, env.stripe.ledger().size(), "one PaymentIntent, whoever won");
        Row row = row(key);
        assertConsistentWithRow(woken, row);
        assertConsistentWithRow(takeover, row);

        // Whatever each got, a further retry ends at the final answer the row holds, and nothing more is charged.
        ChargeClient.Answer last;
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        do {
            last = client.post(other.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
            if (last.status() != 201) {
                Thread.sleep(300);
            }
        } while (last.status() != 201 && System.nanoTime() < deadline);
        assertEquals(201, last.status(), last.body());
        Row finished = row(key);
        assertEquals("completed", finished.status);
        assertEquals(finished.body, last.body());
        if (woken.status() == 201) {
            assertEquals(finished.body, woken.body(), "the stalled holder answered exactly what the row holds");
        }
        if (takeover.status() == 201) {
            assertEquals(finished.body, takeover.body());
        }
        assertTrue(last.body().contains(env.stripe.ledger().get(0).id()), "the row names the one PaymentIntent");
        assertEquals(1, env.stripe.ledger().size());
    }

    /** Polls the row until its lease has run out by the database's clock (the one the service's claim reads). */
    private void awaitLeaseExpired(String key, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT lease_until < clock_timestamp() FROM stripe_intents WHERE stripe_identity IN (?, ?)")) {
            ps.setString(1, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.ACME, key));
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.GLOBEX, key));
            while (true) {
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next() && rs.getBoolean(1)) {
                        return;
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("the stalled holder's lease did not expire within " + timeout);
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
                "SELECT status, lease_gen, response_body FROM stripe_intents WHERE stripe_identity IN (?, ?)")) {
            ps.setString(1, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.ACME, key));
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.GLOBEX, key));
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return new Row(rs.getString(1), rs.getInt(2), rs.getString(3));
            }
        }
    }
}

package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.sandbox.StripeSandbox;
import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The crash window between the Stripe call and the row update, with a real {@code kill -9} of the packaged
 * service while the sandbox holds the create: Stripe charges, the service is gone before it can write.
 */
class CrashBetweenStripeAndUpdateIT {

    ProcessEnvironment env;
    ServiceProcess service;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("crash");
    }

    @AfterEach
    void tearDown() throws Exception {
        if (service != null) {
            service.close();
        }
        env.close();
    }

    private Map<String, String> config(boolean recovery) {
        Map<String, String> config = env.serviceConfig();
        // Stripe holds the create 2 s (the kill lands meanwhile): the read timeout must outlast it.
        ProcessEnvironment.shortLease(config, Duration.ofSeconds(4), Duration.ofSeconds(3));
        config.put("chargeonce.recovery.enabled", Boolean.toString(recovery));
        config.put("chargeonce.recovery.interval", "1s");
        return config;
    }

    /** Starts a charge, kills the service while Stripe is charging, and returns the key. */
    private String chargeAndKillMidFlight() throws Exception {
        String key = UUID.randomUUID().toString();
        env.stripe.setLatencyMillis(2_000);
        CompletableFuture<ChargeClient.Answer> inFlight = CompletableFuture.supplyAsync(
                () -> client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30)));
        env.awaitCreateRequests(1, Duration.ofSeconds(30));
        service.kill9();
        assertEquals(1, env.stripe.executing(), "the service died while Stripe was still charging (the crash window)");
        assertEquals(-1, inFlight.get().status(), "the client lost its connection with the service");
        // Stripe finishes the charge the dead service asked for, however long a busy machine makes that take.
        env.awaitStripeCharged(TestClients.ACME, key, Duration.ofSeconds(30));
        env.stripe.setLatencyMillis(0);
        assertEquals(1, env.stripe.ledger().size(), "Stripe charged once before anyone retried");
        assertEquals("processing", env.rowStatus(key), "the crash left the row processing");
        return key;
    }

    @Test
    void clientRetryAfterTheLeaseFinishesTheChargeWithoutASecondOne() throws Exception {
        service = ServiceProcess.start("crash-retry", config(false));
        String key = chargeAndKillMidFlight();
        service.startProcess();

        ChargeClient.Answer answer = retryUntilFinal(key, Duration.ofSeconds(30));
        assertEquals(201, answer.status(), answer.body());
        assertOnePaymentIntentAndRowHolds(key, answer);
    }

    @Test
    void recoveryWorkerAloneFinishesTheCharge() throws Exception {
        service = ServiceProcess.start("crash-recovery", config(true));
        String key = chargeAndKillMidFlight();
        service.startProcess();

        assertEquals("completed", env.awaitRowStatus(key, "completed", Duration.ofSeconds(30)),
                "the recovery worker finished the row without any client");
        long creates = env.stripe.createRequests();
        ChargeClient.Answer answer = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(10));
        assertEquals(201, answer.status());
        assertTrue(answer.replayed());
        assertEquals(creates, env.stripe.createRequests(), "the client's retry is a replay");
        assertOnePaymentIntentAndRowHolds(key, answer);
    }

    private void assertOnePaymentIntentAndRowHolds(String key, ChargeClient.Answer answer) throws Exception {
        List<StripeSandbox.PaymentIntent> ledger = env.stripe.ledger();
        assertEquals(1, ledger.size(), "exactly one PaymentIntent at Stripe");
        assertTrue(answer.body().contains(ledger.get(0).id()), "the answer names the PaymentIntent Stripe made");
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT status, response_status, response_body FROM stripe_intents WHERE stripe_identity IN (?, ?)")) {
            ps.setString(1, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.ACME, key));
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.GLOBEX, key));
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                assertEquals("completed", rs.getString(1));
                assertEquals(answer.status(), rs.getInt(2));
                assertEquals(answer.body(), rs.getString(3), "the client got exactly what the row holds");
            }
        }
    }

    private ChargeClient.Answer retryUntilFinal(String key, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        ChargeClient.Answer answer;
        do {
            answer = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(15));
            assertTrue(answer.status() == 201 || answer.status() == 409 || answer.status() == 503,
                    "a retry is answered, in flight, or unknown: " + answer);
            if (answer.status() != 201) {
                Thread.sleep(500);
            }
        } while (answer.status() != 201 && System.nanoTime() < deadline);
        return answer;
    }
}

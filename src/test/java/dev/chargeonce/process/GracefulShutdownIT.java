package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** SIGTERM while Stripe is charging: the charge in flight finishes its call and its row before the process exits. */
class GracefulShutdownIT {

    ProcessEnvironment env;
    ServiceProcess service;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("shutdown");
        service = ServiceProcess.start("shutdown", env.serviceConfig());
    }

    @AfterEach
    void tearDown() throws Exception {
        service.close();
        env.close();
    }

    @Test
    void inFlightChargeFinishesBeforeExit() throws Exception {
        String key = UUID.randomUUID().toString();
        env.stripe.setLatencyMillis(2_000);
        CompletableFuture<ChargeClient.Answer> inFlight = CompletableFuture.supplyAsync(
                () -> client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30)));
        env.awaitCreateRequests(1, Duration.ofSeconds(10));
        service.terminate(Duration.ofSeconds(30));

        ChargeClient.Answer answer = inFlight.get();
        assertEquals(201, answer.status(), "the charge in flight was answered: " + answer.body());
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT status, response_body FROM stripe_intents WHERE stripe_identity IN (?, ?)")) {
            ps.setString(1, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.ACME, key));
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.GLOBEX, key));
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                assertEquals("completed", rs.getString(1), "its row was finished before exit");
                assertEquals(answer.body(), rs.getString(2));
            }
        }
        assertEquals(1, env.stripe.ledger().size());
    }
}

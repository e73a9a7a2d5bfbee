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
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The database becomes unreachable after Stripe charged and before the row is updated: the test cuts the TCP
 * proxy between the service and PostgreSQL (it never stops a server it did not start) while the sandbox holds the
 * create, then restores it.
 */
class DatabaseCutAfterStripeIT {

    ProcessEnvironment env;
    ServiceProcess service;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("dbcut");
        Map<String, String> config = env.serviceConfig();
        // Stripe holds the create 1.5 s while the database is cut: the read timeout must outlast it.
        ProcessEnvironment.shortLease(config, java.time.Duration.ofSeconds(4), java.time.Duration.ofSeconds(2));
        config.put("chargeonce.recovery.interval", "1s");
        service = ServiceProcess.start("dbcut", config);
    }

    @AfterEach
    void tearDown() throws Exception {
        service.close();
        env.close();
    }

    @Test
    void noSecondChargeAndTheRowCompletesOnceTheDatabaseIsBack() throws Exception {
        String key = UUID.randomUUID().toString();
        env.stripe.setLatencyMillis(1_500);
        CompletableFuture<ChargeClient.Answer> first = CompletableFuture.supplyAsync(
                () -> client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30)));
        env.awaitCreateRequests(1, Duration.ofSeconds(10));
        env.databaseProxy.cut();
        ChargeClient.Answer during = first.get();
        env.stripe.setLatencyMillis(0);
        assertEquals(1, env.stripe.ledger().size(), "Stripe charged");
        assertEquals(503, during.status(), "the outcome could not be recorded: not final, retry: " + during.body());
        assertTrue(during.retryAfter() != null);

        // While the database is away, retries are refused before any Stripe call.
        long creates = env.stripe.createRequests();
        ChargeClient.Answer whileDown = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
        assertEquals(503, whileDown.status());
        assertEquals(creates, env.stripe.createRequests(), "no claim, no Stripe call");
        assertEquals("processing", env.rowStatus(key));

        env.databaseProxy.restore();
        // The recovery worker (or a retry) re-sends the same Stripe key and records Stripe's answer.
        assertEquals("completed", env.awaitRowStatus(key, "completed", Duration.ofSeconds(30)));
        assertEquals(1, env.stripe.ledger().size(), "no second charge");

        ChargeClient.Answer after = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(10));
        assertEquals(201, after.status(), after.body());
        assertTrue(after.body().contains(env.stripe.ledger().get(0).id()));
    }

}

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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Stripe failing trips the circuit: answers are fast 503s with no Stripe call and no lease, until it closes. */
class CircuitBreakerIT {

    static final String CB = "dev.chargeonce.stripe.StripeApi/create/CircuitBreaker/";
    ProcessEnvironment env;
    ServiceProcess service;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("circuit");
        Map<String, String> config = env.serviceConfig();
        config.put(CB + "requestVolumeThreshold", "4");
        config.put(CB + "failureRatio", "0.5");
        config.put(CB + "delay", "3000");
        config.put(CB + "successThreshold", "1");
        config.put("chargeonce.recovery.enabled", "false");
        service = ServiceProcess.start("circuit", config);
    }

    @AfterEach
    void tearDown() throws Exception {
        service.close();
        env.close();
    }

    @Test
    void openCircuitAnswers503FastWithoutCallingStripeAndRecoversWhenItCloses() throws Exception {
        env.stripe.failNextBeforeCharging(100);
        for (int i = 0; i < 4; i++) {
            ChargeClient.Answer a = client.post(service.uri("/v1/charges"), UUID.randomUUID().toString(), ChargeClient.VISA,
                    Duration.ofSeconds(30));
            assertEquals(503, a.status(), a.body());
        }
        long creates = env.stripe.createRequests();
        assertEquals(4, creates);

        String key = UUID.randomUUID().toString();
        long start = System.nanoTime();
        ChargeClient.Answer fast = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertEquals(503, fast.status());
        assertTrue(fast.body().contains("stripe_unavailable"), fast.body());
        assertTrue(fast.retryAfter() != null);
        assertTrue(millis < 1_000, "open circuit answers fast, took " + millis + " ms");
        assertEquals(creates, env.stripe.createRequests(), "Stripe not called while open");
        assertEquals(0, rows(key), "no lease claimed for a call that was not made");

        env.stripe.failNextBeforeCharging(0);
        Thread.sleep(3_500); // the circuit's delay: half-open lets a trial call through
        ChargeClient.Answer after = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
        assertEquals(201, after.status(), after.body());
        assertEquals(1, env.stripe.ledger().size());
    }

    private int rows(String key) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM stripe_intents WHERE idempotency_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}

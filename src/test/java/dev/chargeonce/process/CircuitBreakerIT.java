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
    static final String REFUND_CB = "dev.chargeonce.stripe.StripeApi/createRefund/CircuitBreaker/";
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
        config.put(REFUND_CB + "requestVolumeThreshold", "4");
        config.put(REFUND_CB + "failureRatio", "0.5");
        config.put(REFUND_CB + "delay", "3000");
        config.put(REFUND_CB + "successThreshold", "1");
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

    @Test
    void refundsHaveTheirOwnCircuitAndAnOpenOneReservesNothing() throws Exception {
        ChargeClient.Answer charged = client.post(service.uri("/v1/charges"), UUID.randomUUID().toString(), ChargeClient.VISA,
                Duration.ofSeconds(30));
        assertEquals(201, charged.status(), charged.body());
        String chargeId = charged.body().replaceAll(".*\"id\":\"(chg_[^\"]+)\".*", "$1");
        java.net.URI refunds = service.uri("/v1/charges/" + chargeId + "/refunds");
        env.stripe.plan("fail_before", "fail_before", "fail_before", "fail_before");
        for (int i = 0; i < 4; i++) {
            ChargeClient.Answer a = client.post(refunds, UUID.randomUUID().toString(), "{\"amount\": 100}", Duration.ofSeconds(30));
            assertEquals(503, a.status(), a.body());
        }
        assertEquals(400, reserved(chargeId), "the four refunds whose outcome is unknown keep their amounts");
        long creates = env.stripe.createRequests();

        String key = UUID.randomUUID().toString();
        ChargeClient.Answer fast = client.post(refunds, key, "{\"amount\": 100}", Duration.ofSeconds(30));
        assertEquals(503, fast.status(), fast.body());
        assertTrue(fast.body().contains("stripe_unavailable") && fast.body().contains("nothing was refunded"), fast.body());
        assertEquals(creates, env.stripe.createRequests(), "Stripe not called while the refunds' circuit is open");
        assertEquals(0, rows("stripe_refunds", key), "no claim for a call that was not made");
        assertEquals(400, reserved(chargeId), "nothing reserved for it");
        ChargeClient.Answer charge = client.post(service.uri("/v1/charges"), UUID.randomUUID().toString(), ChargeClient.VISA,
                Duration.ofSeconds(30));
        assertEquals(201, charge.status(), "charges do not share the refunds' circuit: " + charge.body());

        Thread.sleep(3_500); // the circuit's delay: half-open lets a trial call through
        ChargeClient.Answer after = client.post(refunds, key, "{\"amount\": 100}", Duration.ofSeconds(30));
        assertEquals(201, after.status(), after.body());
        assertEquals(500, reserved(chargeId));
    }

    private long reserved(String chargeId) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT amount_reserved FROM stripe_intents WHERE id = ?")) {
            ps.setString(1, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private int rows(String key) throws Exception {
        return rows("stripe_intents", key);
    }

    private int rows(String table, String key) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM " + table + " WHERE stripe_identity = ?")) {
            ps.setString(1, table.equals("stripe_refunds") ? dev.chargeonce.testing.TestKeys.refundIdentity(dev.chargeonce.testing.TestClients.ACME, key)
                    : dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.ACME, key));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}

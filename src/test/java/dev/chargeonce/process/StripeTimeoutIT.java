package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Stripe slower than the read timeout: the service gives up on the try (the watchdog ends it at the read timeout on
 * the request's virtual thread) while Stripe goes on charging. The answer is "unknown" (503), the retries re-send
 * the same Stripe key, and the payment exists once.
 */
class StripeTimeoutIT {

    ProcessEnvironment env;
    ServiceProcess service;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("timeout");
        Map<String, String> config = env.serviceConfig();
        config.put("chargeonce.stripe.read-timeout", "700ms");
        config.put("chargeonce.recovery.enabled", "false");
        service = ServiceProcess.start("timeout", config);
    }

    @AfterEach
    void tearDown() throws Exception {
        service.close();
        env.close();
    }

    @Test
    void aTimedOutCreateIsNeverChargedTwice() throws Exception {
        String key = UUID.randomUUID().toString();
        env.stripe.setLatencyMillis(6_000);
        long started = System.nanoTime();
        ChargeClient.Answer first = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
        assertEquals(503, first.status(), first.body() + " after " + (System.nanoTime() - started) / 1_000_000 + " ms, "
                + env.stripe.createRequests() + " creates");
        assertTrue(first.body().contains("stripe_outcome_unknown"));
        assertTrue(env.stripe.createRequests() >= 2, "fault tolerance retried the timed-out call (same key)");

        // Stripe finishes the first create and stores its answer under the key, however long a busy machine takes.
        env.awaitStripeCharged(TestClients.ACME, key, Duration.ofSeconds(30));
        env.stripe.setLatencyMillis(0);
        ChargeClient.Answer retry = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
        assertEquals(201, retry.status(), retry.body());
        assertEquals(1, env.stripe.ledger().size(), "every re-send carried the same Stripe key: one PaymentIntent");
        assertTrue(retry.body().contains(env.stripe.ledger().get(0).id()));
    }
}

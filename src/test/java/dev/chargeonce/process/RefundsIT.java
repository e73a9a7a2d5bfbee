package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.sandbox.SandboxRefunds;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Refunds across real processes: two packaged instances share one primary, so the reservation on the charge row is
 * all that stands between concurrent refunds and an over-refund; and a real {@code kill -9} between Stripe's refund
 * and the row's update, after which the refund is found again, never made twice.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RefundsIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int CONCURRENT_REFUNDS = 20;

    ProcessEnvironment env;
    ServiceProcess instanceA;
    ServiceProcess instanceB;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeAll
    void startTwoInstances() {
        env = new ProcessEnvironment("refunds");
        Map<String, String> config = env.serviceConfig();
        // Stripe holds the refund 2 s in the kill test: the read timeout must outlast it.
        ProcessEnvironment.shortLease(config, Duration.ofSeconds(4), Duration.ofSeconds(3));
        config.put("chargeonce.recovery.enabled", "false");
        instanceA = ServiceProcess.start("refunds-a", config);
        instanceB = ServiceProcess.start("refunds-b", config);
    }

    @AfterAll
    void stop() throws Exception {
        for (ServiceProcess instance : new ServiceProcess[] {instanceA, instanceB}) {
            if (instance != null) {
                instance.close();
            }
        }
        if (env != null) {
            env.close();
        }
    }

    private String charge(ServiceProcess instance, long amount) throws Exception {
        ChargeClient.Answer charged = client.post(instance.uri("/v1/charges"), UUID.randomUUID().toString(),
                "{\"amount\": " + amount + ", \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}", Duration.ofSeconds(30));
        assertEquals(201, charged.status(), charged.body());
        return JSON.readTree(charged.body()).get("id").asText();
    }

    private ChargeClient.Answer refund(ServiceProcess instance, String chargeId, String key, String body) {
        return client.post(instance.uri("/v1/charges/" + chargeId + "/refunds"), key, body, Duration.ofSeconds(30));
    }

    /**
     * The refund's final answer, as a client following the contract gets it: a 503 (Stripe slow or the circuit
     * open on a loaded machine: "retry with the same Idempotency-Key") or a 409 (the key in flight) is asked again
     * with the same key, for up to a minute; anything else is the answer.
     */
    private ChargeClient.Answer finalAnswer(ServiceProcess instance, String chargeId, String key, String body)
            throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        ChargeClient.Answer answer = refund(instance, chargeId, key, body);
        while ((answer.status() == 503 || answer.status() == 409) && System.nanoTime() < deadline) {
            Thread.sleep(answer.retryAfter() == null ? 500 : Math.min(2_000, Long.parseLong(answer.retryAfter().strip()) * 1000L));
            answer = refund(instance, chargeId, key, body);
        }
        return answer;
    }

    @Test
    @Order(1)
    void concurrentRefundsFromTwoInstancesNeverExceedTheCharge() throws Exception {
        long amount = 10_000;
        String chargeId = charge(instanceA, amount);
        String paymentIntent = JSON.readTree(client.get(instanceA.uri("/v1/charges/" + chargeId)).body()).get("payment_intent").asText();
        long seed = System.nanoTime();
        Random random = new Random(seed);
        List<Long> amounts = new ArrayList<>();
        for (int i = 0; i < CONCURRENT_REFUNDS; i++) {
            amounts.add(1 + (long) random.nextInt((int) (amount / 4))); // about eight fit: the rest must be refused
        }
        int refundCreatesBefore = env.stripe.refunds().createRequests();
        env.stripe.setLatencyMillis(200); // refunds overlap at Stripe too
        CountDownLatch start = new CountDownLatch(1);
        List<Future<ChargeClient.Answer>> futures = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(CONCURRENT_REFUNDS)) {
            for (int i = 0; i < CONCURRENT_REFUNDS; i++) {
                ServiceProcess instance = i % 2 == 0 ? instanceA : instanceB;
                String body = "{\"amount\": " + amounts.get(i) + "}";
                futures.add(pool.submit(() -> {
                    start.await();
                    return finalAnswer(instance, chargeId, UUID.randomUUID().toString(), body);
                }));
            }
            start.countDown();
        }
        env.stripe.setLatencyMillis(0);
        long refundedByAnswers = 0;
        int made = 0;
        int refused = 0;
        List<Long> refusedAmounts = new ArrayList<>();
        for (int i = 0; i < CONCURRENT_REFUNDS; i++) {
            ChargeClient.Answer answer = futures.get(i).get();
            if (answer.status() == 201) {
                made++;
                refundedByAnswers += JSON.readTree(answer.body()).get("amount").asLong();
            } else {
                assertEquals(400, answer.status(), "a refund is made or refused for its amount: " + answer);
                assertEquals("amount_too_large", JSON.readTree(answer.body()).get("error").get("code").asText(), answer.body());
                refused++;
                refusedAmounts.add(amounts.get(i));
            }
        }
        List<SandboxRefunds.Refund> atStripe = env.stripe.refunds().all().stream()
                .filter(r -> r.paymentIntentId().equals(paymentIntent)).toList();
        long refundedAtStripe = atStripe.stream().filter(r -> r.status().matches("pending|succeeded")).mapToLong(SandboxRefunds.Refund::amount).sum();
        System.out.printf("%d concurrent refunds over two instances (seed %d): %d made (%d of %d), %d refused amount_too_large, "
                + "%d refund creates at Stripe%n", CONCURRENT_REFUNDS, seed, made, refundedByAnswers, amount, refused,
                env.stripe.refunds().createRequests() - refundCreatesBefore);
        assertTrue(made > 0 && refused > 0, "the amounts were drawn so that some fit and some do not (seed " + seed + ")");
        assertTrue(refundedAtStripe <= amount, "Stripe never refunded more than was paid: " + refundedAtStripe);
        assertEquals(refundedByAnswers, refundedAtStripe, "every 201 is a refund at Stripe, and nothing else is");
        assertEquals(made, atStripe.size());
        assertEquals(made, env.stripe.refunds().createRequests() - refundCreatesBefore,
                "Stripe was asked only for the refunds that fit: the refused ones never reached it");
        // Nothing was refused that fitted: what is left only shrinks here (no refund fails), so a refused amount did
        // not fit in what was left at the end either.
        for (long refusedAmount : refusedAmounts) {
            assertTrue(refusedAmount > amount - refundedAtStripe, "refused " + refusedAmount + " although "
                    + (amount - refundedAtStripe) + " was left at the end");
        }
        assertEquals(refundedAtStripe, reserved(chargeId), "the charge's reservation is what Stripe refunded");
        JsonNode charge = JSON.readTree(client.get(instanceB.uri("/v1/charges/" + chargeId)).body());
        assertEquals(refundedAtStripe, charge.get("amount_refunded").asLong());
    }

    @Test
    @Order(2)
    void killNineBetweenStripesRefundAndTheRowUpdateLeavesOneRefund() throws Exception {
        String chargeId = charge(instanceA, 5_000);
        String key = UUID.randomUUID().toString();
        String identity = dev.chargeonce.testing.TestKeys.refundIdentity(TestClients.ACME, key);
        long createsBefore = env.stripe.createRequests();
        env.stripe.setLatencyMillis(2_000);
        CompletableFuture<ChargeClient.Answer> inFlight = CompletableFuture.supplyAsync(
                () -> refund(instanceA, chargeId, key, "{\"amount\": 1200}"));
        env.awaitCreateRequests(createsBefore + 1, Duration.ofSeconds(30));
        instanceA.kill9();
        assertEquals(1, env.stripe.executing(), "the service died while Stripe was still refunding (the crash window)");
        assertEquals(-1, inFlight.get().status(), "the client lost its connection with the service");
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (env.stripe.executing() > 0 || env.stripe.refunds().forKey(identity).isEmpty()) {
            assertTrue(System.nanoTime() < deadline, "Stripe did not finish the refund");
            Thread.sleep(20);
        }
        env.stripe.setLatencyMillis(0);
        assertEquals("processing", refundRowStatus(key), "the crash left the refund's row processing");
        assertEquals(1200, reserved(chargeId), "its amount stays reserved while its outcome is unknown");

        // The client retries on the other instance until the dead holder's lease runs out: the refund is found.
        ChargeClient.Answer answer;
        deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        do {
            answer = refund(instanceB, chargeId, key, "{\"amount\": 1200}");
            assertTrue(answer.status() == 201 || answer.status() == 409 || answer.status() == 503, answer.toString());
            if (answer.status() != 201) {
                Thread.sleep(300);
            }
        } while (answer.status() != 201 && System.nanoTime() < deadline);
        assertEquals(201, answer.status(), answer.body());
        List<SandboxRefunds.Refund> refunds = env.stripe.refunds().forKey(identity);
        assertEquals(1, refunds.size(), "exactly one refund at Stripe for the key");
        assertEquals(refunds.get(0).id(), JSON.readTree(answer.body()).get("stripe_refund").asText(),
                "the answer names the refund the dead instance made");
        assertEquals("completed", refundRowStatus(key));
        assertEquals(1200, reserved(chargeId));
        instanceA.startProcess();
        ChargeClient.Answer replay = refund(instanceA, chargeId, key, "{\"amount\": 1200}");
        assertTrue(replay.replayed());
        assertEquals(answer.body(), replay.body());
        assertEquals(1, env.stripe.refunds().forKey(identity).size());
    }

    private String refundRowStatus(String key) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT status FROM stripe_refunds WHERE stripe_identity = ?")) {
            ps.setString(1, dev.chargeonce.testing.TestKeys.refundIdentity(TestClients.ACME, key));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private long reserved(String chargeId) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT amount_reserved FROM stripe_intents WHERE id = ?")) {
            ps.setString(1, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return rs.getLong(1);
            }
        }
    }
}

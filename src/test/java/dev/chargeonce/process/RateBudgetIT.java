package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.SandboxControl;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import dev.chargeonce.testing.TestKeys;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * A burst against Stripe's rate limit, as a flash sale or a fleet retrying after an outage makes one: 500 distinct
 * charges at concurrency 64, over two instances, against a Stripe that admits 25 PaymentIntent creates in any one
 * second and answers 429 beyond. The instances share one budget (20 a second) and smooth the burst into it: each
 * charge is made exactly once, Stripe refuses next to none of the requests it receives (so never receives more
 * than its limit in any one second), and every 503 carries a Retry-After that, honoured, ends in the charge.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RateBudgetIT {

    private static final int CHARGES = 500;
    private static final int CONCURRENCY = 64;
    private static final int STRIPE_LIMIT = 25;

    ProcessEnvironment env;
    SandboxControl stripe;
    ServiceProcess instanceA;
    ServiceProcess instanceB;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeAll
    void start() {
        env = new ProcessEnvironment("budget");
        stripe = new SandboxControl(env.stripe.baseUrl());
        Map<String, String> config = env.serviceConfig();
        // The production budget: Stripe's per-endpoint limit with headroom.
        config.put("chargeonce.stripe.budget.rates.\"payment_intents.create\"", "20");
        instanceA = ServiceProcess.start("budget-a", config);
        instanceB = ServiceProcess.start("budget-b", config);
    }

    @AfterAll
    void stop() throws IOException {
        for (ServiceProcess instance : new ServiceProcess[] {instanceA, instanceB}) {
            if (instance != null) {
                instance.close();
            }
        }
        if (stripe != null) {
            stripe.unlimit();
        }
        if (env != null) {
            env.close();
        }
    }

    @Test
    @Order(1)
    void aBurstIsSmoothedIntoStripesLimitAndEveryChargeIsMadeOnce() throws Exception {
        // Instances that have served before, as a flash sale finds them: a cold JVM's first Stripe calls (classes
        // loading, code not yet compiled) leave late and arrive together, which no budget decides.
        for (ServiceProcess instance : new ServiceProcess[] {instanceA, instanceB}) {
            for (int i = 0; i < 10; i++) {
                assertEquals(201, client.post(instance.uri("/v1/charges"), "warm-" + UUID.randomUUID(), ChargeClient.VISA,
                        Duration.ofSeconds(30)).status());
            }
        }
        Thread.sleep(1000);
        stripe.limit("payment_intents.create=" + STRIPE_LIMIT);
        TreeMap<Double, Double> waitsBefore = waitBuckets();
        AtomicInteger serviceUnavailable = new AtomicInteger();
        List<String> keys = new ArrayList<>();
        List<Future<String>> outcomes = new ArrayList<>();
        long started = System.nanoTime();
        try (ExecutorService clients = Executors.newFixedThreadPool(CONCURRENCY)) {
            for (int i = 0; i < CHARGES; i++) {
                String key = "burst-" + UUID.randomUUID();
                keys.add(key);
                ServiceProcess instance = i % 2 == 0 ? instanceA : instanceB;
                outcomes.add(clients.submit(() -> chargeHonouringRetryAfter(client, instance, key, serviceUnavailable)));
            }
            for (Future<String> outcome : outcomes) {
                assertEquals("201", outcome.get(), "every charge goes through, its 503s honoured");
            }
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        for (String key : keys) {
            assertEquals(1, env.stripe.intentsForKey(TestKeys.identity(TestClients.ACME, key)).size(),
                    "one PaymentIntent for " + key);
        }
        long admitted = stripe.limits().path("endpoints").path("payment_intents.create").path("admitted").asLong();
        long refused = stripe.createsRefused();
        int most = stripe.maxCreatesInAnySecond();
        System.out.printf("burst: %d charges in %.1f s (%.1f a second against a budget of 20), Stripe admitted %d creates"
                + " and refused %d; at most %d in any second; the clients were answered 503 %d times%n", CHARGES, seconds,
                CHARGES / seconds, admitted, refused, most, serviceUnavailable.get());
        TreeMap<Double, Double> waits = waitBuckets();
        waits.replaceAll((le, count) -> count - waitsBefore.getOrDefault(le, 0.0));
        System.out.printf("burst: the wait for a permit, p50 %s s, p90 %s s, p99 %s s (the histogram's bucket bounds)%n",
                quantile(waits, 0.5), quantile(waits, 0.9), quantile(waits, 0.99));
        // Stripe refuses what goes beyond its limit, so what it admitted is within it by construction: what the budget
        // must show is that next to nothing was refused. Without it, 69% of the creates Stripe received were refused
        // (1,125 of 1,625) and the clients were answered 503 993 times. With it: none on a quiet machine; on a loaded
        // one a stalled process sends a few permits' requests late, together with the next ones (below 2%).
        assertTrue(most <= STRIPE_LIMIT, "Stripe never admits more creates than its limit in one second: " + most);
        assertTrue(refused * 20 <= admitted + refused, "next to none of the creates Stripe receives are refused: "
                + refused + " of " + (admitted + refused));
    }

    /**
     * An instance killed with {@code kill -9} in the middle of a burst, with permits booked and not used: the other
     * goes on at the rate, within Stripe's limit, and every charge is made once (the killed instance's charges are
     * retried on the other, as a load balancer would send them).
     */
    @Test
    @Order(2)
    void anInstanceKilledWithPermitsBookedLosesOnlyThemAndTheOtherGoesOnWithinTheLimit() throws Exception {
        stripe.limit("payment_intents.create=" + STRIPE_LIMIT);
        long admittedBefore = stripe.limits().path("endpoints").path("payment_intents.create").path("admitted").asLong();
        long refusedBefore = stripe.createsRefused();
        List<String> keys = new ArrayList<>();
        List<Future<String>> outcomes = new ArrayList<>();
        AtomicInteger serviceUnavailable = new AtomicInteger();
        try (ExecutorService clients = Executors.newFixedThreadPool(CONCURRENCY)) {
            for (int i = 0; i < 300; i++) {
                String key = "killed-" + UUID.randomUUID();
                keys.add(key);
                boolean first = i % 2 == 0;
                outcomes.add(clients.submit(() -> {
                    String outcome = chargeHonouringRetryAfter(client, first ? instanceA : instanceB, key, serviceUnavailable);
                    // The killed instance's clients come back to the one left, with the same key.
                    return outcome.startsWith("-1") ? chargeHonouringRetryAfter(client, instanceB, key, serviceUnavailable) : outcome;
                }));
            }
            Thread.sleep(4000);
            instanceA.kill9();
            for (Future<String> outcome : outcomes) {
                assertEquals("201", outcome.get(), "every charge goes through on the instance left");
            }
        }
        for (String key : keys) {
            assertEquals(1, env.stripe.intentsForKey(TestKeys.identity(TestClients.ACME, key)).size(),
                    "one PaymentIntent for " + key);
        }
        long admitted = stripe.limits().path("endpoints").path("payment_intents.create").path("admitted").asLong() - admittedBefore;
        long refused = stripe.createsRefused() - refusedBefore;
        System.out.printf("kill -9 mid-burst: Stripe admitted %d creates and refused %d; %d answers 503%n", admitted,
                refused, serviceUnavailable.get());
        assertTrue(refused * 20 <= admitted + refused, "next to none of the creates Stripe receives are refused: "
                + refused + " of " + (admitted + refused));
    }

    /** Both instances' histogram of the foreground's wait for a create permit: count at or below each bound. */
    private TreeMap<Double, Double> waitBuckets() throws Exception {
        TreeMap<Double, Double> buckets = new TreeMap<>();
        HttpClient http = HttpClient.newHttpClient();
        for (ServiceProcess instance : new ServiceProcess[] {instanceA, instanceB}) {
            String text = http.send(HttpRequest.newBuilder(instance.managementUri("/q/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            for (String line : text.split("\n")) {
                if (line.startsWith("chargeonce_stripe_budget_wait_seconds_bucket{") && line.contains("class=\"foreground\"")
                        && line.contains("endpoint=\"payment_intents.create\"")) {
                    String le = line.substring(line.indexOf("le=\"") + 4, line.indexOf('"', line.indexOf("le=\"") + 4));
                    double bound = le.equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
                    buckets.merge(bound, Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)), Double::sum);
                }
            }
        }
        return buckets;
    }

    /** The smallest bucket bound at or below which the share {@code q} of the waits fell. */
    private static String quantile(TreeMap<Double, Double> buckets, double q) {
        double total = buckets.isEmpty() ? 0 : buckets.lastEntry().getValue();
        for (var bucket : buckets.entrySet()) {
            if (bucket.getValue() >= q * total) {
                return String.format("%.3f", bucket.getKey());
            }
        }
        return "?";
    }

    /**
     * Posts the charge until it is answered 201, honouring each 503's Retry-After (which it must carry), and each
     * 409's (the key in flight: the recovery worker may be finishing a row whose client was answered 503).
     */
    static String chargeHonouringRetryAfter(ChargeClient client, ServiceProcess instance, String key, AtomicInteger serviceUnavailable)
            throws InterruptedException {
        long giveUp = System.nanoTime() + Duration.ofMinutes(3).toNanos();
        while (System.nanoTime() < giveUp) {
            ChargeClient.Answer answer = client.post(instance.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(60));
            if (answer.status() != 503 && answer.status() != 409) {
                return Integer.toString(answer.status()) + (answer.status() == 201 ? "" : " " + answer.body());
            }
            if (answer.status() == 503) {
                serviceUnavailable.incrementAndGet();
            }
            assertNotNull(answer.retryAfter(), "a 503 says when to come back: " + answer.body());
            Thread.sleep(Long.parseLong(answer.retryAfter()) * 1000);
        }
        return "gave up";
    }
}

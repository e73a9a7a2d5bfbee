package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.idempotency.KeyIdentities;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.PreviousRelease;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import dev.chargeonce.testing.TestKeys;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/**
 * Keys stored hashed, the upgrade: the release before V1.13.0 (built from this repository's history) and
 * this one against one database, through the README's steps, with the same keys sent to both at once in each step.
 *
 * <ol>
 *   <li>the previous release alone (it stores keys and their unkeyed hash, version 0); this release started over it
 *       without the steps (writing version 1, reading nothing else) refuses to start, before it migrates anything;
 *   <li>step 1 beside it: this release writing version 0, reading version 1, mixed writers (it migrates only to
 *       V1.13.0);
 *   <li>step 2 beside step 1 (the previous release stopped): writing version 1, reading version 0, still mixed;
 *   <li>step 3 (step 1 stopped): the normal build, mixed writers off; V1.14.0 erases the stored keys.
 * </ol>
 *
 * Each key is charged once (one PaymentIntent at Stripe under any of its identities, one row; a refund key refunds
 * once), every retry of it, on any instance and in any later step, gets the first answer, and no key is left in the
 * database.
 */
class RollingUpgradeIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String FIRST_FILE_OF_THE_CHANGE = "src/main/resources/db/migration/V1.13.0__keys_not_stored.sql";
    private static final int KEYS_PER_STEP = 24;

    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);
    /** Every key sent, with the charge id of its first final answer. */
    final Map<String, String> chargeOf = new java.util.concurrent.ConcurrentHashMap<>();
    /** Every refund key sent, with its charge and the refund id of its first final answer. */
    final Map<String, String[]> refundOf = new java.util.concurrent.ConcurrentHashMap<>();

    @Test
    void thePreviousReleaseAndThisOneChargeEachKeyOnceThroughEveryStepOfTheUpgrade() throws Exception {
        Path previousJar = PreviousRelease.jarBefore(FIRST_FILE_OF_THE_CHANGE);
        try (ProcessEnvironment env = new ProcessEnvironment("upgrade");
             ExecutorService pool = Executors.newFixedThreadPool(16)) {
            Map<String, String> previousConfig = env.serviceConfig();
            previousConfig.keySet().removeIf(k -> k.startsWith("chargeonce.idempotency.key-hash")); // it knows none
            Map<String, String> stepOneConfig = env.serviceConfig();
            stepOneConfig.putAll(Map.of("chargeonce.idempotency.key-hash-version", "0",
                    "chargeonce.idempotency.key-hash-read-versions", "1",
                    "chargeonce.idempotency.key-hash-mixed-writers", "true"));
            Map<String, String> stepTwoConfig = env.serviceConfig();
            stepTwoConfig.putAll(Map.of("chargeonce.idempotency.key-hash-version", "1",
                    "chargeonce.idempotency.key-hash-read-versions", "0",
                    "chargeonce.idempotency.key-hash-mixed-writers", "true"));
            Map<String, String> stepThreeConfig = env.serviceConfig();
            stepThreeConfig.putAll(Map.of("chargeonce.idempotency.key-hash-version", "1",
                    "chargeonce.idempotency.key-hash-read-versions", "0"));

            try (ServiceProcess previous = ServiceProcess.start("upgrade-previous", previousJar, previousConfig)) {
                List<String> before = chargeNewKeys(pool, List.of(previous, previous), "before");
                refundSome(pool, List.of(previous, previous), before);
                assertEquals(KEYS_PER_STEP, countKeysStored(env), "the previous release stores the keys");
                String refused = ServiceProcess.startExpectingRefusal("upgrade-without-the-steps", env.serviceConfig(),
                        Duration.ofSeconds(90));
                assertTrue(refused.contains("version(s) [0]"), "this release over it without the steps is refused:\n"
                        + refused.substring(Math.max(0, refused.length() - 3000)));
                assertEquals("1.12.0", schemaVersion(env), "and migrated nothing: the previous release still claims");
                try (ServiceProcess stepOne = ServiceProcess.start("upgrade-step-1", stepOneConfig)) {
                    assertEquals("1.13.0", schemaVersion(env), "steps 1 and 2 migrate up to V1.13.0, not V1.14.0");
                    refundSome(pool, List.of(previous, stepOne), chargeNewKeys(pool, List.of(previous, stepOne), "step1"));
                    replayAll(stepOne);
                    previous.terminate(Duration.ofSeconds(30));
                    try (ServiceProcess stepTwo = ServiceProcess.start("upgrade-step-2", stepTwoConfig)) {
                        refundSome(pool, List.of(stepOne, stepTwo), chargeNewKeys(pool, List.of(stepOne, stepTwo), "step2"));
                        replayAll(stepTwo);
                        replayAll(stepOne);
                        stepOne.terminate(Duration.ofSeconds(30));
                        try (ServiceProcess stepThree = ServiceProcess.start("upgrade-step-3", stepThreeConfig)) {
                            refundSome(pool, List.of(stepTwo, stepThree), chargeNewKeys(pool, List.of(stepTwo, stepThree), "step3"));
                            replayAll(stepThree);
                            assertTrue(applied(env, "1.14.0"), "step 3 applies V1.14.0");
                            assertEquals(0, countKeysStored(env), "V1.14.0 erased the keys the previous release and step 1 stored");
                            for (String key : before) {
                                assertEquals(identities(key).get(0), rowIdentity(env, key),
                                        "a row claimed before the upgrade keeps its identity (its Stripe keys were derived from it)");
                            }
                        }
                    }
                }
            }
            for (String key : chargeOf.keySet()) {
                List<String> identities = identities(key);
                int intents = 0;
                for (String identity : identities) {
                    intents += env.stripe.intentsForKey(identity).size();
                }
                assertEquals(1, intents, "one PaymentIntent for " + key + " under any of its identities");
                assertEquals(1, rowsOf(env, identities), "one row for " + key);
            }
            for (String refundKey : refundOf.keySet()) {
                int refunds = env.stripe.refunds().forKey(KeyIdentities.compute(0, null, Operation.REFUND, TestClients.ACME, refundKey)).size()
                        + env.stripe.refunds().forKey(TestKeys.refundIdentity(TestClients.ACME, refundKey)).size();
                assertEquals(1, refunds, "one refund at Stripe for " + refundKey + " under any of its identities");
            }
            assertEquals(16, refundOf.size());
            System.out.printf("rolling upgrade: %d charge keys and %d refund keys, each once, through the previous release"
                    + " and the three steps%n", chargeOf.size(), refundOf.size());
        }
    }

    /** New keys, each sent four times at once, two to each instance, then retried until final. */
    private List<String> chargeNewKeys(ExecutorService pool, List<ServiceProcess> instances, String step) {
        List<String> keys = new ArrayList<>();
        List<CompletableFuture<Void>> sends = new ArrayList<>();
        for (int i = 0; i < KEYS_PER_STEP; i++) {
            String key = "order-" + step + "-" + i + "-" + UUID.randomUUID().toString().substring(0, 8);
            keys.add(key);
            for (int copy = 0; copy < 4; copy++) {
                ServiceProcess instance = instances.get(copy % 2);
                sends.add(CompletableFuture.runAsync(() -> finalAnswer(instance, key), pool));
            }
        }
        sends.forEach(CompletableFuture::join);
        return keys;
    }

    /** A refund of 100 on four of these charges, each refund key sent four times at once, two to each instance. */
    private void refundSome(ExecutorService pool, List<ServiceProcess> instances, List<String> keys) {
        List<CompletableFuture<Void>> sends = new ArrayList<>();
        for (String key : keys.subList(0, 4)) {
            String refundKey = "refund-" + key;
            String chargeId = chargeOf.get(key);
            for (int copy = 0; copy < 4; copy++) {
                ServiceProcess instance = instances.get(copy % 2);
                sends.add(CompletableFuture.runAsync(() -> finalRefund(instance, chargeId, refundKey), pool));
            }
        }
        sends.forEach(CompletableFuture::join);
    }

    private void finalRefund(ServiceProcess instance, String chargeId, String refundKey) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            ChargeClient.Answer a = client.post(instance.uri("/v1/charges/" + chargeId + "/refunds"), refundKey,
                    "{\"amount\": 100}", Duration.ofSeconds(30));
            if (a.status() == 201) {
                String[] mine = {chargeId, chargeId(a)};
                String[] first = refundOf.putIfAbsent(refundKey, mine);
                assertEquals((first == null ? mine : first)[1], mine[1], refundKey + ": every final answer names one refund");
                return;
            }
            assertTrue(a.status() == 409 || a.status() == 503 || a.status() == -1, refundKey + ": " + a);
            sleep(100);
        }
        throw new AssertionError(refundKey + " had no final answer within 60 s");
    }

    /** Every key sent so far, once more through {@code instance}: the first answer, as a replay. */
    private void replayAll(ServiceProcess instance) {
        for (Map.Entry<String, String[]> refund : refundOf.entrySet()) {
            ChargeClient.Answer again = client.post(instance.uri("/v1/charges/" + refund.getValue()[0] + "/refunds"),
                    refund.getKey(), "{\"amount\": 100}", Duration.ofSeconds(30));
            assertEquals(201, again.status(), refund.getKey() + ": " + again);
            assertTrue(again.replayed(), refund.getKey() + " is a replay: " + again);
            assertEquals(refund.getValue()[1], chargeId(again), refund.getKey() + ": the same refund");
        }
        for (String key : chargeOf.keySet()) {
            ChargeClient.Answer again = client.post(instance.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
            assertEquals(201, again.status(), key + ": " + again);
            assertTrue(again.replayed(), key + " is a replay: " + again);
            assertEquals(chargeOf.get(key), chargeId(again), key + ": the same charge");
        }
    }

    /** Sends until the key's answer is final (a 409 says another request of it is in flight). */
    private void finalAnswer(ServiceProcess instance, String key) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            ChargeClient.Answer a = client.post(instance.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
            if (a.status() == 201) {
                String id = chargeId(a);
                String first = chargeOf.putIfAbsent(key, id);
                assertEquals(first == null ? id : first, id, key + ": every final answer names one charge");
                return;
            }
            assertTrue(a.status() == 409 || a.status() == 503 || a.status() == -1, key + ": " + a);
            sleep(100);
        }
        throw new AssertionError(key + " had no final answer within 60 s");
    }

    private static String chargeId(ChargeClient.Answer a) {
        try {
            return JSON.readTree(a.body()).get("id").asText();
        } catch (java.io.IOException e) {
            throw new AssertionError(a.body(), e);
        }
    }

    /** The key's identities under versions 0 and 1, version 0 first. */
    private static List<String> identities(String key) {
        return List.of(KeyIdentities.compute(0, null, Operation.CHARGE, TestClients.ACME, key),
                TestKeys.identity(TestClients.ACME, key));
    }

    private static long countKeysStored(ProcessEnvironment env) throws Exception {
        try (Connection c = env.connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM stripe_intents WHERE idempotency_key IS NOT NULL")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String schemaVersion(ProcessEnvironment env) throws Exception {
        try (Connection c = env.connect(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT version FROM flyway_schema_history WHERE success ORDER BY installed_rank DESC LIMIT 1")) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static boolean applied(ProcessEnvironment env, String version) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT EXISTS (SELECT 1 FROM flyway_schema_history WHERE success AND version = ?)")) {
            ps.setString(1, version);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    private static String rowIdentity(ProcessEnvironment env, String key) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT stripe_identity FROM stripe_intents WHERE client_id = ? AND stripe_identity = ANY (?)")) {
            ps.setString(1, TestClients.ACME);
            ps.setArray(2, c.createArrayOf("text", identities(key).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private static int rowsOf(ProcessEnvironment env, List<String> identities) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM stripe_intents WHERE client_id = ? AND stripe_identity = ANY (?)")) {
            ps.setString(1, TestClients.ACME);
            ps.setArray(2, c.createArrayOf("text", identities.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

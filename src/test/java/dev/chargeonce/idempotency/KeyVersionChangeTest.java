package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.DedicatedDatabase;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.TestKeys;
import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

/**
 * A change of the key-hash version (from the unkeyed identities of releases before V1.13.0 to a secret, or from one
 * secret to the next) on a live database: two stores on one database, as two instances of a fleet in the middle of
 * the rollout the README describes, claim the same keys at once. Whatever version each writes, every key gets one
 * row and one fresh claim: one charge.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class KeyVersionChangeTest {

    static final Duration HORIZON = TakeoverFencingTest.HORIZON;

    @Inject
    AgroalDataSource primary;

    @Inject
    IdempotencyConfig config;

    @Inject
    Flyway flyway;

    /**
     * Step one of the rollout (write the old version, read the new one too) beside step two (write the new one,
     * read the old one too), both with the per-key lock of mixed writers on: 32 claims of each new key at once, half
     * through each. The identities of a key under the two versions differ, so the unique index cannot decide the
     * race; the lock does. Without it ({@code mixed-writers} off) this test finds two rows for some keys.
     */
    @Test
    void instancesWritingTwoVersionsAtOnceClaimEachKeyOnce() throws Exception {
        race("1.13.0", TestKeys.identities(KeyIdentities.UNKEYED, List.of(1), true), TestKeys.identities(1, List.of(0), true));
    }

    /** The same for a change of secret: version 1 to version 2. */
    @Test
    void aChangeOfSecretClaimsEachKeyOnceToo() throws Exception {
        race(null, TestKeys.identities(1, List.of(2), true), TestKeys.identities(2, List.of(1), true));
    }

    /**
     * After the rollout: a key claimed under the old version (before the upgrade, or by an instance of step one) is
     * found by an instance that writes the new one and reads the old one: the retry is a replay, not a second
     * charge; and its row keeps the identity its Stripe keys were derived from.
     */
    @Test
    void aKeyClaimedUnderTheOldVersionIsFoundUnderTheNew() throws Exception {
        try (DedicatedDatabase database = DedicatedDatabase.create(primary, flyway, "1.13.0")) {
            Claims before = claims(database, TestKeys.identities(KeyIdentities.UNKEYED, List.of(), false));
            Claims after = claims(database, TestKeys.identities(1, List.of(0), false));
            String client = "version-" + UUID.randomUUID();
            String key = "order-1234";
            Claim first = before.claim(TakeoverFencingTest.newIntent(client, key), HORIZON);
            ClaimedIntent held = assertInstanceOf(Claim.Fresh.class, first).intent();
            assertTrue(new Finishes(database.dataSource, new SimpleMeterRegistry()).finish(held, IntentStatus.COMPLETED, new StoredAnswer(201, "{\"id\":\"" + held.id() + "\"}"), "pi_1"));

            Claim retry = after.claim(TakeoverFencingTest.newIntent(client, key), HORIZON);
            Claim.Replay replay = assertInstanceOf(Claim.Replay.class, retry, "the retry under the new version replays");
            assertEquals("{\"id\":\"" + held.id() + "\"}", replay.answer().body());
            assertEquals(1, rowsOf(database.dataSource, client, key));
            assertEquals(KeyIdentities.compute(0, null, Operation.CHARGE, client, key), held.stripeIdentity(),
                    "the old row keeps its old identity (its Stripe keys were derived from it)");

            // A new key under the new version gets a keyed identity.
            Claim fresh = after.claim(TakeoverFencingTest.newIntent(client, "order-1235"), HORIZON);
            assertTrue(assertInstanceOf(Claim.Fresh.class, fresh).intent().stripeIdentity().startsWith("k001-"));
        }
    }

    /**
     * What the start-up check reads ({@link KeyVersionsCheck}): the versions the rows have, found on the unique index
     * (versions 0, 1, 2 and 10 here: 10 sorts after 1 and 2 only by its digits), and none in an empty database.
     */
    @Test
    void theVersionsTheRowsHaveAreFoundOnTheIndex() throws Exception {
        try (DedicatedDatabase database = DedicatedDatabase.create(primary, flyway, "1.13.0")) {
            Claims any = claims(database, TestKeys.identities(1, List.of(), false));
            Upkeep upkeep = new Upkeep(database.dataSource);
            assertEquals(java.util.Set.of(), upkeep.identityVersionsInUse());
            String client = "versions-" + UUID.randomUUID();
            claims(database, TestKeys.identities(KeyIdentities.UNKEYED, List.of(), false)).claim(TakeoverFencingTest.newIntent(client, "a"), HORIZON);
            any.claim(TakeoverFencingTest.newIntent(client, "b"), HORIZON);
            claims(database, TestKeys.identities(2, List.of(), false)).claim(TakeoverFencingTest.newIntent(client, "c"), HORIZON);
            KeyIdentities ten = new KeyIdentities(10, List.of(), java.util.Map.of(10, java.util.Base64.getDecoder().decode(TestKeys.SECRET_1)), false);
            claims(database, ten).claim(TakeoverFencingTest.newIntent(client, "d"), HORIZON);
            assertEquals(new java.util.TreeSet<>(List.of(0, 1, 2, 10)), upkeep.identityVersionsInUse());
        }
    }

    /** @param schema the migration the database is at (an upgrade's first steps hold it at 1.13.0); null: the latest */
    private void race(String schema, KeyIdentities stepOne, KeyIdentities stepTwo) throws Exception {
        try (DedicatedDatabase database = DedicatedDatabase.create(primary, flyway, schema)) {
            List<Claims> instances = List.of(claims(database, stepOne), claims(database, stepTwo));
            String client = "version-race-" + UUID.randomUUID();
            int keys = 40;
            int claimers = 32;
            try (ExecutorService pool = Executors.newFixedThreadPool(claimers)) {
                for (int k = 0; k < keys; k++) {
                    String key = "order-" + k;
                    CountDownLatch start = new CountDownLatch(1);
                    List<Future<Claim>> claims = new ArrayList<>();
                    for (int i = 0; i < claimers; i++) {
                        Claims instance = instances.get(i % 2);
                        NewIntent intent = TakeoverFencingTest.newIntent(client, key);
                        claims.add(pool.submit(() -> {
                            start.await();
                            return instance.claim(intent, HORIZON);
                        }));
                    }
                    start.countDown();
                    int fresh = 0;
                    for (Future<Claim> claim : claims) {
                        if (claim.get() instanceof Claim.Fresh) {
                            fresh++;
                        }
                    }
                    assertEquals(1, rowsOf(database.dataSource, client, key), "one row for " + key + " under any version");
                    assertEquals(1, fresh, "one fresh claim of " + key);
                }
            }
        }
    }

    private Claims claims(DedicatedDatabase database, KeyIdentities identities) {
        return new Claims(database.dataSource, config, identities, new SimpleMeterRegistry());
    }

    private static int rowsOf(AgroalDataSource source, String client, String key) throws Exception {
        try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM stripe_intents WHERE client_id = ? AND stripe_identity = ANY (?)")) {
            ps.setString(1, client);
            ps.setArray(2, c.createArrayOf("text", TestKeys.allIdentities(client, key).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}

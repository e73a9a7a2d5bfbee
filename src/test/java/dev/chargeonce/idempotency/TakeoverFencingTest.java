package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.DedicatedDatabase;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

/**
 * The store's fences, statement by statement, against the real database: who may still write a row once it has moved
 * on (taken over, renewed, parked, answered, moved to the next Stripe attempt). Takeovers, and the other writers too:
 * <ul>
 *   <li>takeovers: concurrent recovery passes take every expired row over exactly once and nothing else; a retry
 *       that read the row before its holder renewed, parked or answered it does not take it over;</li>
 *   <li>claims: sixty-four claims of one new key make one row, on this release's schema and on a rolling deploy's;</li>
 *   <li>holders: one that lost its lease cannot finish, release, park or move the Stripe attempt; a proof about one
 *       Stripe attempt moves the row once;</li>
 *   <li>operators: "nothing was made" waits until no try of the key can still reach Stripe; a finish or requeue acts
 *       only at the generation the operator saw, never on a row answered since.</li>
 * </ul>
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class TakeoverFencingTest {

    static final Duration HORIZON = Duration.ofHours(23);
    static final String REQUEST = "{\"amount\":1,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}";

    @Inject
    Claims claims;

    @Inject
    Finishes finishes;

    @Inject
    OperatorRows operatorRows;

    @Inject
    AgroalDataSource primary;

    @Inject
    IdempotencyConfig idempotencyConfig;

    @Inject
    KeyIdentities identities;

    @Inject
    Flyway flyway;

    /**
     * {@code takeOverExpired} scans the whole table, as the recovery worker does. On the suite's shared database it
     * would also take over (and leave with a bumped generation and a fresh lease) every expired row another test
     * left behind, so this test runs it on a database of its own, migrated like the service's: every row there is
     * the test's, the result needs no filter (a row it should not have taken counts against it), and decoys show
     * what the scan must leave alone.
     */
    @Test
    void concurrentRecoveryPassesTakeOverEveryExpiredRowExactlyOnceAndNothingElse() throws Exception {
        try (DedicatedDatabase database = DedicatedDatabase.create(primary, flyway)) {
            Claims scanner = new Claims(database.dataSource, idempotencyConfig, identities, new SimpleMeterRegistry());
            Finishes scannerFinishes = new Finishes(database.dataSource, new SimpleMeterRegistry());
            String client = "fencing-" + UUID.randomUUID();
            int rows = 60;
            Set<String> expired = new HashSet<>();
            for (int i = 0; i < rows; i++) {
                expired.add(identities.of(Operation.CHARGE, client, new IdempotencyKey("k" + i)));
                insert(database.dataSource, client, "k" + i, "processing", "now() - interval '1 second'", false);
            }
            insert(database.dataSource, client, "live-lease", "processing", "now() + interval '1 hour'", false);
            insert(database.dataSource, client, "parked", "processing", "now() - interval '1 second'", true);
            insert(database.dataSource, client, "finished", "completed", "NULL", false);
            Map<String, RowState> decoysBefore = rowStates(database.dataSource, client, "live-lease", "parked", "finished");

            int workers = 4;
            CountDownLatch start = new CountDownLatch(1);
            List<Future<List<ClaimedIntent>>> passes = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(workers)) {
                for (int w = 0; w < workers; w++) {
                    Callable<List<ClaimedIntent>> pass = () -> {
                        start.await();
                        List<ClaimedIntent> mine = new ArrayList<>();
                        List<ClaimedIntent> batch;
                        do {
                            batch = scanner.takeOverExpired(Operation.CHARGE, 7, HORIZON);
                            mine.addAll(batch);
                        } while (!batch.isEmpty());
                        return mine;
                    };
                    passes.add(pool.submit(pass));
                }
                start.countDown();
            }
            Set<String> seen = new HashSet<>();
            int total = 0;
            for (Future<List<ClaimedIntent>> f : passes) {
                for (ClaimedIntent intent : f.get()) {
                    total++;
                    assertTrue(seen.add(intent.id()), "row " + intent.id() + " taken over twice");
                    assertTrue(expired.contains(intent.stripeIdentity()),
                            "only expired, unparked rows are taken over: " + intent.stripeIdentity());
                    assertEquals(2, intent.leaseGeneration());
                    assertTrue(scannerFinishes.finish(intent, IntentStatus.FAILED, new StoredAnswer(400, "{}"), null),
                            "the pass that took row " + intent.id() + " over still holds its lease");
                }
            }
            assertEquals(rows, total, "every expired row was taken over exactly once");
            assertEquals(decoysBefore, rowStates(database.dataSource, client, "live-lease", "parked", "finished"),
                    "a live lease, a parked row and a finished row are left as they were");
            assertTrue(scanner.takeOverExpired(Operation.CHARGE, 100, HORIZON).isEmpty(), "nothing left to take over");
        }
    }

    /**
     * The claim reads first and inserts only when its snapshot has no row: sixty-four claims of one new key at once,
     * each with a row id of its own, give one fresh claim and one row; every other claim sees the row (in flight),
     * including those whose read came before the winner's commit and whose insert then did nothing (their next round
     * reads it). Repeated over many keys, so that the lost race really happens.
     */
    @Test
    void sixtyFourClaimsOfOneNewKeyAtOnceMakeOneRow() throws Exception {
        claimRaces(claims, primary);
    }

    /**
     * The same races on the schema a rolling deploy of this release passes through (V1.13.0 without V1.14.0's
     * constraint, while instances of the release before still write keys): the claim names no index in its
     * {@code ON CONFLICT} (one that named the identity's index alone answered a duplicate that lost on another unique
     * index, as V1.8.x had, with a 500).
     */
    @Test
    void claimsRaceCleanlyOnTheSchemaOfARollingDeployToo() throws Exception {
        try (DedicatedDatabase database = DedicatedDatabase.create(primary, flyway, "1.13.0")) {
            claimRaces(new Claims(database.dataSource, idempotencyConfig, identities, new SimpleMeterRegistry()), database.dataSource);
        }
    }

    private static void claimRaces(Claims store, AgroalDataSource primary) throws Exception {
        String client = "race-" + UUID.randomUUID();
        int keys = 20;
        int claimers = 64;
        try (ExecutorService pool = Executors.newFixedThreadPool(claimers)) {
            for (int k = 0; k < keys; k++) {
                IdempotencyKey key = new IdempotencyKey("race-" + k + "-" + UUID.randomUUID());
                CountDownLatch start = new CountDownLatch(1);
                List<Future<Claim>> claims = new ArrayList<>();
                for (int i = 0; i < claimers; i++) {
                    NewIntent intent = newIntent(client, key.value());
                    claims.add(pool.submit(() -> {
                        start.await();
                        return store.claim(intent, HORIZON);
                    }));
                }
                start.countDown();
                int fresh = 0;
                for (Future<Claim> claim : claims) {
                    Claim c = claim.get();
                    if (c instanceof Claim.Fresh) {
                        fresh++;
                    } else {
                        assertInstanceOf(Claim.InFlight.class, c, "a claim that did not win sees the key in flight");
                    }
                }
                assertEquals(1, fresh, "exactly one claim of " + key.value() + " is fresh");
                try (Connection c = primary.getConnection();
                     PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM stripe_intents WHERE client_id = ? AND stripe_identity = ANY (?)")) {
                    ps.setString(1, client);
                    // under any version: one row for the key, whatever identity it got
                    ps.setArray(2, c.createArrayOf("text", dev.chargeonce.testing.TestKeys.allIdentities(client, key.value()).toArray()));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        assertEquals(1, rs.getInt(1), "one row for the key");
                    }
                }
            }
        }
    }

    @Test
    void aHolderThatLostItsLeaseCannotFinishOrMoveTheStripeAttempt() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        IdempotencyKey key = new IdempotencyKey("k");
        NewIntent intent = newIntent(client, "k");
        ClaimedIntent original = assertInstanceOf(Claim.Fresh.class, claims.claim(intent, HORIZON)).intent();
        assertInstanceOf(Claim.InFlight.class, claims.claim(intent, HORIZON), "a live lease answers in flight");

        expireLease(original.id());
        ClaimedIntent successor = assertInstanceOf(Claim.TakenOver.class, claims.claim(intent, HORIZON)).intent();
        assertEquals(original.leaseGeneration() + 1, successor.leaseGeneration());
        assertEquals(original.stripeAttempt(), successor.stripeAttempt(), "a takeover never changes the Stripe key");

        assertFalse(finishes.finish(original, IntentStatus.COMPLETED, new StoredAnswer(201, "{\"stale\":true}"), "pi_stale"),
                "the stale holder's finish changes nothing");
        assertTrue(claims.nextStripeAttempt(original, HORIZON).isEmpty(), "nor can it move the Stripe attempt");
        assertTrue(finishes.finish(successor, IntentStatus.COMPLETED, new StoredAnswer(201, "{\"winner\":true}"), "pi_w"));
        assertFalse(finishes.finish(successor, IntentStatus.FAILED, new StoredAnswer(402, "{}"), null), "final is final");
        assertEquals("{\"winner\":true}", finishes.answerOf(Operation.CHARGE, original.clientId(), original.id()).orElseThrow().body());
        Claim replay = claims.claim(intent, HORIZON);
        assertEquals(new StoredAnswer(201, "{\"winner\":true}"), assertInstanceOf(Claim.Replay.class, replay).answer());
        assertInstanceOf(Claim.Mismatch.class, claims.claim(new NewIntent(Operation.CHARGE, "chg_", client, key, Fingerprint.of("POST", "/v1/charges", "other"),
                "{}", 1, "usd"), HORIZON));
    }

    /**
     * A holder that lost its lease (its Stripe call outlived it) must not give the successor's lease away, nor park
     * the row the successor is driving: either would let a third driver in, or stop a charge that is being made.
     */
    @Test
    void aHolderThatLostItsLeaseCannotReleaseOrParkTheRow() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        NewIntent intent = newIntent(client, "k");
        ClaimedIntent original = assertInstanceOf(Claim.Fresh.class, claims.claim(intent, HORIZON)).intent();
        expireLease(original.id());
        ClaimedIntent successor = assertInstanceOf(Claim.TakenOver.class, claims.claim(intent, HORIZON)).intent();
        RowState held = rowState(primary, original.id());
        assertTrue(held.leaseLive(), "the successor holds a live lease");

        assertFalse(claims.release(original, serverError()), "the stale holder's release is refused");
        assertEquals(held, rowState(primary, original.id()), "the stale holder's release changes nothing");
        assertInstanceOf(Claim.InFlight.class, claims.claim(intent, HORIZON), "the successor still holds the key");

        assertFalse(claims.markForReconciliation(original, "test"), "the stale holder cannot park the row");
        assertEquals(held, rowState(primary, original.id()), "its attempt to park changes nothing");
        assertInstanceOf(Claim.InFlight.class, claims.claim(intent, HORIZON), "the successor still holds the key");

        // The holder of the lease can do both: the statements are fenced, not inert.
        assertTrue(claims.release(successor, serverError()));
        RowState released = rowState(primary, original.id());
        assertFalse(released.leaseLive(), "the holder's release gives the lease up at once");
        assertEquals(ClaimedIntent.SERVER_ERROR, released.lastStripeError());
        ClaimedIntent third = assertInstanceOf(Claim.TakenOver.class, claims.claim(intent, HORIZON)).intent();
        assertTrue(third.keyAnsweredServerError(), "the next driver learns Stripe answered 5xx for the key");
        assertFalse(third.keyNeverSent(), "and that the key was sent (the released holder reported its send)");
        assertTrue(claims.markForReconciliation(third, "test"), "the holder can park the row");
        assertTrue(rowState(primary, original.id()).needsReconciliation());
        assertInstanceOf(Claim.UnderReconciliation.class, claims.claim(intent, HORIZON));
        assertFalse(claims.markForReconciliation(successor, "test"), "a stale holder cannot park it again either");
    }

    /**
     * A holder whose lease ran out by the database's clock still holds the row until someone takes it over, and may
     * renew its lease: a retry that read the expired lease before the renewal must not take the row over after it,
     * or two drivers would hold the key at once.
     */
    @Test
    void aRetryThatReadAnExpiredLeaseDoesNotTakeTheRowOverOnceItsHolderRenewedIt() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        NewIntent intent = newIntent(client, "k");
        ClaimedIntent holder = assertInstanceOf(Claim.Fresh.class, claims.claim(intent, HORIZON)).intent();
        expireLease(holder.id());
        Row read = readRow(intent);
        assertTrue(read.leaseLeftMillis() <= 0, "the retry read an expired lease");

        assertTrue(claims.renewLease(holder), "the holder renews its lease: no one took the row over");
        assertTrue(claims.answerOrTakeOver(Operation.CHARGE, read, intent.fingerprint(), HORIZON).isEmpty(),
                "the retry's takeover of the renewed lease matches nothing");
        assertEquals(holder.leaseGeneration(), rowState(primary, holder.id()).leaseGeneration(), "no new holder");
        assertInstanceOf(Claim.InFlight.class, claims.claim(intent, HORIZON), "the holder still holds the key");
    }

    /**
     * A retry reads the key's row, then takes it over in a statement of its own. The row's holder may park it in
     * between (its lease ran out by the clock while it parked it, but its generation is still the row's): the
     * takeover must then match nothing, or the parked row, which the service never sends again by itself, would be
     * driven again behind the operator who resolves it.
     */
    @Test
    void aRetryThatReadTheRowBeforeItsHolderParkedItDoesNotTakeItOver() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        NewIntent intent = newIntent(client, "k");
        ClaimedIntent holder = assertInstanceOf(Claim.Fresh.class, claims.claim(intent, HORIZON)).intent();
        expireLease(holder.id());
        Row read = readRow(intent);
        assertTrue(read.leaseLeftMillis() <= 0 && !read.needsReconciliation(), "the retry read an expired, unparked lease");

        assertTrue(claims.markForReconciliation(holder, "test"), "the holder parks the row after the retry's read");
        assertTrue(claims.answerOrTakeOver(Operation.CHARGE, read, intent.fingerprint(), HORIZON).isEmpty(),
                "the retry's takeover of the parked row matches nothing");
        assertEquals(holder.leaseGeneration(), rowState(primary, holder.id()).leaseGeneration(), "no new holder");
        assertInstanceOf(Claim.UnderReconciliation.class, claims.claim(intent, HORIZON), "the row stays parked");
    }

    /**
     * The same race with a row answered in between: a takeover never reopens an answered row, whatever its lease
     * columns say (a finish clears {@code lease_until}; the row is set back to an expired lease here by hand, so
     * that only the status can refuse).
     */
    @Test
    void aRetryThatReadTheRowBeforeItWasAnsweredDoesNotTakeItOver() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        NewIntent intent = newIntent(client, "k");
        ClaimedIntent holder = assertInstanceOf(Claim.Fresh.class, claims.claim(intent, HORIZON)).intent();
        expireLease(holder.id());
        Row read = readRow(intent);
        assertTrue(finishes.finish(holder, IntentStatus.COMPLETED, new StoredAnswer(201, "{\"answered\":true}"), "pi_a"));
        expireLease(holder.id());

        assertTrue(claims.answerOrTakeOver(Operation.CHARGE, read, intent.fingerprint(), HORIZON).isEmpty(),
                "the retry's takeover of the answered row matches nothing");
        assertEquals(holder.leaseGeneration(), rowState(primary, holder.id()).leaseGeneration(), "no new holder");
        assertEquals(new StoredAnswer(201, "{\"answered\":true}"),
                assertInstanceOf(Claim.Replay.class, claims.claim(intent, HORIZON)).answer(), "the answer stands");
    }

    /**
     * A holder moves to the next Stripe key only from the attempt its lookup proved empty: the same proof again (the
     * holder's generation is unchanged by the move) matches nothing, or it would skip a key it has just sent.
     */
    @Test
    void aProofAboutOneStripeAttemptMovesTheRowOnceFromThatAttempt() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        NewIntent intent = newIntent(client, "k");
        ClaimedIntent holder = assertInstanceOf(Claim.Fresh.class, claims.claim(intent, HORIZON)).intent();
        ClaimedIntent next = claims.nextStripeAttempt(holder, HORIZON).orElseThrow();
        assertEquals(holder.stripeAttempt() + 1, next.stripeAttempt());
        assertEquals(holder.leaseGeneration(), next.leaseGeneration(), "the move keeps the holder's generation");

        assertTrue(claims.nextStripeAttempt(holder, HORIZON).isEmpty(), "the proof about the first attempt is spent");
        assertEquals(next.stripeAttempt(), readRow(intent).stripeAttempt(), "the row stays on the second attempt");
        assertEquals(next.stripeAttempt() + 1, claims.nextStripeAttempt(next, HORIZON).orElseThrow().stripeAttempt(),
                "a proof about the second attempt moves it on");
    }

    /**
     * An operator's "nothing was made" waits, in its own statement, until no try of the key can still reach Stripe
     * (the holder's send bound, or its last report, plus the longest a request runs): whatever its caller checked
     * before, a row whose holder may still send is not answered, or a try on its way would charge after it.
     */
    @Test
    void anOperatorCannotAnswerNothingWasMadeWhileATryOfTheKeyMayStillReachStripe() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        ClaimedIntent holder = assertInstanceOf(Claim.Fresh.class, claims.claim(newIntent(client, "k"), HORIZON)).intent();
        Finishes.Final nothingMade = new Finishes.Final(IntentStatus.FAILED, new StoredAnswer(400, "{}"), null, null, null);
        Duration requestMaxDuration = Duration.ofSeconds(1);

        assertFalse(operatorRows.abandonByOperator(Operation.CHARGE, holder.id(), client, holder.leaseGeneration(), nothingMade,
                requestMaxDuration), "refused while the holder may still send the key");
        assertEquals("processing", rowState(primary, holder.id()).status());

        // the holder's send bound and the row's claim long past: no try of the key can still run
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                UPDATE stripe_intents SET stripe_sending_until = now() - interval '1 hour',
                       created_at = now() - interval '1 hour', stripe_key_first_sent = now() - interval '1 hour'
                 WHERE id = ?""")) {
            ps.setString(1, holder.id());
            ps.executeUpdate();
        }
        assertTrue(operatorRows.abandonByOperator(Operation.CHARGE, holder.id(), client, holder.leaseGeneration(), nothingMade,
                requestMaxDuration), "once the key is settled the statement answers it");
        assertEquals("failed", rowState(primary, holder.id()).status());
    }

    /**
     * An operator's finish and requeue act on a processing row at the generation the operator saw: not on a row a
     * driver took over since, nor on a row answered since (its client may have its answer already).
     */
    @Test
    void anOperatorCannotFinishOrRequeueARowThatMovedOrWasAnswered() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        Finishes.Final attached = new Finishes.Final(IntentStatus.COMPLETED, new StoredAnswer(201, "{\"operator\":true}"), "pi_op",
                "succeeded", null);

        NewIntent moved = newIntent(client, "moved");
        ClaimedIntent seen = assertInstanceOf(Claim.Fresh.class, claims.claim(moved, HORIZON)).intent();
        expireLease(seen.id());
        assertInstanceOf(Claim.TakenOver.class, claims.claim(moved, HORIZON));
        RowState takenOver = rowState(primary, seen.id());
        assertFalse(operatorRows.finishByOperator(Operation.CHARGE, seen.id(), client, seen.leaseGeneration(), attached),
                "the generation the operator saw is gone");
        assertEquals(takenOver, rowState(primary, seen.id()), "the new holder's row is left as it was");

        NewIntent answered = newIntent(client, "answered");
        ClaimedIntent holder = assertInstanceOf(Claim.Fresh.class, claims.claim(answered, HORIZON)).intent();
        assertTrue(finishes.finish(holder, IntentStatus.FAILED, new StoredAnswer(402, "{\"declined\":true}"), null));
        RowState done = rowState(primary, holder.id());
        assertFalse(operatorRows.finishByOperator(Operation.CHARGE, holder.id(), client, holder.leaseGeneration(), attached),
                "an answered row is not answered again");
        assertFalse(operatorRows.requeue(Operation.CHARGE, holder.id(), client, holder.leaseGeneration()),
                "nor handed back to the drivers");
        assertEquals(done, rowState(primary, holder.id()), "the answered row is left as it was");
        assertEquals(new StoredAnswer(402, "{\"declined\":true}"),
                assertInstanceOf(Claim.Replay.class, claims.claim(answered, HORIZON)).answer());
    }

    /** The key's row as a retry's read sees it (the claim's first statement). */
    private Row readRow(NewIntent intent) throws SQLException {
        try (Connection c = primary.getConnection()) {
            return Row.ofKey(c, Operation.CHARGE, intent.clientId(), identities.lookup(Operation.CHARGE, intent.clientId(), intent.key()),
                    HORIZON).orElseThrow();
        }
    }

    /** A holder that sent the key a moment ago and got Stripe's 5xx. */
    private static LeaseRelease serverError() {
        return new LeaseRelease(ClaimedIntent.SERVER_ERROR, Duration.ofMillis(5), Duration.ofSeconds(60), null);
    }

    static NewIntent newIntent(String client, String key) {
        return new NewIntent(Operation.CHARGE, "chg_", client,
                new IdempotencyKey(key), Fingerprint.of("POST", "/v1/charges", REQUEST), REQUEST, 1, "usd");
    }

    /** What a holder's write may change in a row; {@code leaseLive} as the database clock sees it. */
    record RowState(int leaseGeneration, Timestamp leaseUntil, boolean leaseLive, String lastStripeError,
                    boolean needsReconciliation, String status, Timestamp updatedAt) {
    }

    private static RowState rowState(DataSource source, String id) throws SQLException {
        try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT lease_gen, lease_until, coalesce(lease_until > clock_timestamp(), false), last_stripe_error,
                       needs_reconciliation, status, updated_at
                  FROM stripe_intents WHERE id = ?""")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next(), "row " + id + " exists");
                return new RowState(rs.getInt(1), rs.getTimestamp(2), rs.getBoolean(3), rs.getString(4), rs.getBoolean(5),
                        rs.getString(6), rs.getTimestamp(7));
            }
        }
    }

    /** The state of the rows of these keys (a dedicated database: keys alone name the rows). */
    private Map<String, RowState> rowStates(DataSource source, String client, String... keys) throws SQLException {
        Map<String, RowState> states = new LinkedHashMap<>();
        for (String key : keys) {
            try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "SELECT id FROM stripe_intents WHERE stripe_identity = ?")) {
                ps.setString(1, identities.of(Operation.CHARGE, client, new IdempotencyKey(key)));
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next(), "row of " + key + " exists");
                    states.put(key, rowState(source, rs.getString(1)));
                }
            }
        }
        return states;
    }

    private void insert(DataSource source, String client, String key, String status, String leaseUntil, boolean parked)
            throws SQLException {
        boolean finished = !"processing".equals(status);
        try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                            lease_until, needs_reconciliation, response_status, response_body, finished_at,
                                            stripe_identity)
                VALUES (?, ?, ?, 'f', '{}', 1, 'usd', ?, %s, ?, ?, ?, %s, ?)"""
                .formatted(leaseUntil, finished ? "now()" : "NULL"))) {
            ps.setString(1, "chg_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24));
            ps.setString(2, client);
            ps.setString(3, null); // keys are not stored
            ps.setString(4, status);
            ps.setBoolean(5, parked);
            if (finished) {
                ps.setInt(6, 201);
                ps.setString(7, "{}");
            } else {
                ps.setNull(6, java.sql.Types.INTEGER);
                ps.setNull(7, java.sql.Types.VARCHAR);
            }
            ps.setString(8, identities.of(Operation.CHARGE, client, new IdempotencyKey(key)));
            ps.executeUpdate();
        }
    }

    private void expireLease(String id) throws Exception {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("UPDATE stripe_intents SET lease_until = now() - interval '1 second' WHERE id = ?")) {
            ps.setString(1, id);
            ps.executeUpdate();
        }
    }
}

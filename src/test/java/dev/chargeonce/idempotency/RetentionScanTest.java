package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.DedicatedDatabase;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

/**
 * Retention reads its candidates without locks, over every client (on Citus, every shard), then deletes each
 * client's share in a statement of its own that checks them again under their locks. What that must keep: a row
 * deleted once, never twice or by a statement that found it changed; nothing deleted that still counts (in flight,
 * followed at Stripe, a charge with a refund, young); a row someone holds locked skipped, not waited for.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class RetentionScanTest {

    static final Duration RETENTION = Duration.ofDays(1);

    @Inject
    AgroalDataSource primary;

    @Inject
    Flyway flyway;

    @Test
    void concurrentPassesDeleteEveryOldFinishedRowOnceAndKeepWhatStillCounts() throws Exception {
        try (DedicatedDatabase database = DedicatedDatabase.create(primary, flyway)) {
            Upkeep upkeep = new Upkeep(database.dataSource);
            Set<String> old = new TreeSet<>();
            for (String client : List.of("retention-a", "retention-b", "retention-c")) {
                for (int i = 0; i < 20; i++) {
                    old.add(insertCharge(database.dataSource, client, i % 2 == 0 ? "completed" : "failed", "succeeded", "2 days"));
                }
            }
            Set<String> kept = new TreeSet<>();
            kept.add(insertCharge(database.dataSource, "retention-a", "completed", "succeeded", "1 hour")); // young
            kept.add(insertCharge(database.dataSource, "retention-a", "processing", null, null)); // in flight
            kept.add(insertCharge(database.dataSource, "retention-b", "accepted", "processing", "2 days")); // followed at Stripe
            String refunded = insertCharge(database.dataSource, "retention-c", "completed", "succeeded", "2 days");
            insertRefund(database.dataSource, "retention-c", refunded);
            kept.add(refunded); // a refund names it

            int workers = 3;
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Integer>> passes = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(workers)) {
                for (int w = 0; w < workers; w++) {
                    passes.add(pool.submit(() -> {
                        start.await();
                        int mine = 0;
                        int n;
                        do {
                            n = upkeep.deleteFinishedBefore(Operation.CHARGE, RETENTION, 7);
                            mine += n;
                        } while (n > 0);
                        return mine;
                    }));
                }
                start.countDown();
            }
            int deleted = 0;
            for (Future<Integer> pass : passes) {
                deleted += pass.get();
            }
            // the passes may each have stopped on a batch another pass emptied first: one more pass finds nothing
            deleted += upkeep.deleteFinishedBefore(Operation.CHARGE, RETENTION, 100);
            assertEquals(old.size(), deleted, "every old finished row deleted exactly once (counted by the statements that deleted)");
            assertEquals(kept, ids(database.dataSource), "what still counts is kept, nothing else is left");
        }
    }

    @Test
    void aRowSomeoneHoldsLockedIsSkippedNotWaitedForAndGoesInTheNextPass() throws Exception {
        try (DedicatedDatabase database = DedicatedDatabase.create(primary, flyway)) {
            Upkeep upkeep = new Upkeep(database.dataSource);
            String locked = insertCharge(database.dataSource, "retention-lock", "completed", "succeeded", "2 days");
            String free = insertCharge(database.dataSource, "retention-lock", "completed", "succeeded", "2 days");
            try (Connection holder = database.dataSource.getConnection()) {
                // as a refund's claim holds its charge while it checks the amount
                holder.setAutoCommit(false);
                try (PreparedStatement ps = holder.prepareStatement("SELECT 1 FROM stripe_intents WHERE id = ? FOR UPDATE")) {
                    ps.setString(1, locked);
                    ps.executeQuery().close();
                }
                ExecutorService pool = Executors.newSingleThreadExecutor();
                Future<Integer> pass = pool.submit(() -> upkeep.deleteFinishedBefore(Operation.CHARGE, RETENTION, 10));
                Integer deleted;
                try {
                    deleted = pass.get(30, TimeUnit.SECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    deleted = null; // it waits for the lock: let it go before failing, or the pass never ends
                } finally {
                    holder.rollback();
                    pool.shutdown();
                }
                assertEquals(1, deleted, "the free row deleted, the locked one skipped (null: the pass waited for the lock)");
                assertEquals(Set.of(locked), ids(database.dataSource));
            }
            assertEquals(1, upkeep.deleteFinishedBefore(Operation.CHARGE, RETENTION, 10), "the next pass takes it");
            assertTrue(ids(database.dataSource).isEmpty(), "both gone: " + free + ", " + locked);
        }
    }

    private static String insertCharge(DataSource source, String client, String status, String chargeStatus, String age)
            throws SQLException {
        boolean finished = !"processing".equals(status);
        String id = "chg_" + java.util.UUID.randomUUID().toString().replace("-", "").substring(0, 24);
        try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                            lease_until, response_status, response_body, finished_at, charge_status,
                                            recheck_at, stripe_identity)
                VALUES (?, ?, NULL, 'f', '{}', 100, 'usd', ?, %s, ?, ?, %s, ?, %s, ?)"""
                .formatted(finished ? "NULL" : "now() + interval '1 hour'",
                        finished ? "now() - interval '" + age + "'" : "NULL",
                        "accepted".equals(status) ? "now() + interval '1 hour'" : "NULL"))) {
            ps.setString(1, id);
            ps.setString(2, client);
            ps.setString(3, status);
            if (finished) {
                ps.setInt(4, "accepted".equals(status) ? 202 : 201);
                ps.setString(5, "{}");
            } else {
                ps.setNull(4, java.sql.Types.INTEGER);
                ps.setNull(5, java.sql.Types.VARCHAR);
            }
            ps.setString(6, chargeStatus);
            ps.setString(7, java.util.UUID.randomUUID().toString());
            ps.executeUpdate();
        }
        return id;
    }

    /** A young finished refund of the charge (its own retention keeps it, and so the charge stays). */
    private static void insertRefund(DataSource source, String client, String chargeId) throws SQLException {
        try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_refunds (id, charge_id, client_id, idempotency_key, fingerprint, request, amount, currency,
                                            status, response_status, response_body, finished_at, refund_status, stripe_identity)
                VALUES (?, ?, ?, NULL, 'f', '{}', 1, 'usd', 'completed', 201, '{}', now(), 'succeeded', ?)""")) {
            ps.setString(1, "rfd_" + java.util.UUID.randomUUID().toString().replace("-", "").substring(0, 24));
            ps.setString(2, chargeId);
            ps.setString(3, client);
            ps.setString(4, java.util.UUID.randomUUID().toString());
            ps.executeUpdate();
        }
    }

    private static Set<String> ids(DataSource source) throws SQLException {
        Set<String> ids = new TreeSet<>();
        try (Connection c = source.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT id FROM stripe_intents")) {
            while (rs.next()) {
                ids.add(rs.getString(1));
            }
        }
        return ids;
    }
}

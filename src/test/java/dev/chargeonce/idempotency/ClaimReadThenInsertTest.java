package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The claim reads the key's row, and only when it has none inserts one ({@code StatementCatalog#CLAIM}). Between the
 * two statements another claim of the key may insert it: the insert then does nothing, and the claim must read again
 * and answer what holds the key, never take the key as new. Here the other claim is held open on purpose: its row is
 * inserted and not yet committed, so this claim's read finds nothing and its insert waits on that row; what the
 * other transaction then does decides the answer.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ClaimReadThenInsertTest {

    @Inject
    Claims claims;

    @Inject
    KeyIdentities identities;

    @Inject
    AgroalDataSource primary;

    /** The other claim commits: this claim's insert does nothing, and it answers the key as held (409), not as new. */
    @Test
    void anInsertThatLostToAClaimCommittedAfterTheReadReadsAgainAndAnswersTheHolder() throws Exception {
        String client = "read-then-insert-" + UUID.randomUUID();
        NewIntent mine = TakeoverFencingTest.newIntent(client, "order-1");
        NewIntent theirs = TakeoverFencingTest.newIntent(client, "order-1");
        try (Connection other = primary.getConnection()) {
            other.setAutoCommit(false);
            insertUncommitted(other, theirs);
            CompletableFuture<Claim> claim = CompletableFuture.supplyAsync(() -> claims.claim(mine, TakeoverFencingTest.HORIZON));
            awaitInsertWaitingOn(other);
            assertFalse(claim.isDone(), "the claim's insert waits for the uncommitted row of the same key");
            other.commit();
            Claim answer = claim.get(30, TimeUnit.SECONDS);
            Claim.InFlight inFlight = assertInstanceOf(Claim.InFlight.class, answer,
                    "the key is held by the claim that committed first: " + answer);
            assertEquals(idOf(theirs), inFlight.rowId());
        }
        assertEquals(1, rowsOf(client), "one row for the key");
    }

    /** The other claim rolls back: the key has no row after all, and this claim's insert makes it. */
    @Test
    void anInsertWaitingOnAClaimThatRolledBackMakesTheRow() throws Exception {
        String client = "read-then-insert-" + UUID.randomUUID();
        NewIntent mine = TakeoverFencingTest.newIntent(client, "order-1");
        try (Connection other = primary.getConnection()) {
            other.setAutoCommit(false);
            insertUncommitted(other, TakeoverFencingTest.newIntent(client, "order-1"));
            CompletableFuture<Claim> claim = CompletableFuture.supplyAsync(() -> claims.claim(mine, TakeoverFencingTest.HORIZON));
            awaitInsertWaitingOn(other);
            other.rollback();
            Claim answer = claim.get(30, TimeUnit.SECONDS);
            assertEquals(idOf(mine), assertInstanceOf(Claim.Fresh.class, answer, "the key is new: " + answer).intent().id());
        }
        assertEquals(1, rowsOf(client), "one row for the key");
    }

    /** The id a claim of the intent's key gives its new row. */
    private String idOf(NewIntent intent) {
        return dev.chargeonce.idempotency.RowIds.ofIdentity(intent.idPrefix(),
                identities.lookup(intent.operation(), intent.clientId(), intent.key()).get(0));
    }

    /** The claim's own insert, in {@code tx}, left uncommitted. */
    private void insertUncommitted(Connection tx, NewIntent intent) throws SQLException {
        String identity = identities.lookup(intent.operation(), intent.clientId(), intent.key()).get(0);
        try (PreparedStatement ps = tx.prepareStatement(StatementCatalog.hotPathStatements(Operation.CHARGE).get("CLAIM"))) {
            int i = 1;
            ps.setString(i++, idOf(intent));
            ps.setString(i++, intent.clientId());
            ps.setString(i++, null);
            ps.setString(i++, intent.fingerprint().stored(1));
            ps.setString(i++, intent.requestJson());
            ps.setLong(i++, intent.amount());
            ps.setString(i++, intent.currency());
            ps.setLong(i++, 60_000);
            ps.setLong(i++, 60_000);
            ps.setString(i++, identity);
            ps.setString(i, null);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next(), "the other claim inserted its row");
            }
        }
    }

    /** Until a statement of another session waits for {@code holder}'s transaction (the claim's insert). */
    private void awaitInsertWaitingOn(Connection holder) throws Exception {
        int holderPid;
        try (PreparedStatement ps = holder.prepareStatement("SELECT pg_backend_pid()"); ResultSet rs = ps.executeQuery()) {
            rs.next();
            holderPid = rs.getInt(1);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                    SELECT count(*) FROM pg_stat_activity
                     WHERE ? = ANY (pg_blocking_pids(pid)) AND query LIKE 'INSERT INTO stripe_intents%'
                    """)) {
                ps.setInt(1, holderPid);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getInt(1) > 0) {
                        return;
                    }
                }
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no claim's insert waited on the uncommitted row within 60 s");
    }

    private int rowsOf(String client) throws SQLException {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM stripe_intents WHERE client_id = ?")) {
            ps.setString(1, client);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}

package dev.chargeonce.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.TcpProxy;
import dev.chargeonce.testing.TestPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A database that stops answering without closing the connection is noticed by the watchdog, not by a timer per read:
 * real PostgreSQL behind a {@link TcpProxy} that goes silent (every byte dropped, nothing closed). Without a bound
 * the statement below would wait for as long as TCP keeps the connection (the first test checks that it does).
 */
class WatchedSocketFactoryTest {

    static final int LIMIT_SECONDS = 2;

    TcpProxy proxy;
    String database;

    @BeforeEach
    void setUp() throws Exception {
        database = TestPostgres.newDatabase("watched");
        proxy = new TcpProxy(TestPostgres.port());
    }

    @AfterEach
    void tearDown() throws Exception {
        proxy.close();
    }

    /** The reference: pgjdbc's default sockets, no socketTimeout. The statement is still waiting long past the limit. */
    @Test
    void withoutTheWatchdogAStatementToASilentDatabaseWaitsOn() throws Exception {
        try (Connection c = connect(new Properties())) {
            proxy.silence();
            CompletableFuture<Integer> statement = CompletableFuture.supplyAsync(() -> selectOne(c));
            assertThrows(TimeoutException.class, () -> statement.get(LIMIT_SECONDS * 3L, TimeUnit.SECONDS),
                    "nothing bounds the read: the statement is still waiting");
            proxy.restore(); // closes the hung connection: the statement ends
            assertThrows(ExecutionException.class, statement::get);
        }
    }

    @Test
    void aStatementToASilentDatabaseFailsAsAConnectionFailureOnceItsReadOutlivesTheLimit() throws Exception {
        long closedBefore = WatchedSocketFactory.readsClosed();
        try (Connection c = connect(watched(LIMIT_SECONDS))) {
            assertEquals(1, selectOne(c), "a database that answers is read as usual");
            proxy.silence();
            long started = System.nanoTime();
            CompletableFuture<Integer> statement = CompletableFuture.supplyAsync(() -> selectOne(c));
            // Generous for a loaded machine; the point is that it ends at all, and not before its limit.
            ExecutionException failed = assertThrows(ExecutionException.class, () -> statement.get(60, TimeUnit.SECONDS));
            Duration waited = Duration.ofNanos(System.nanoTime() - started);
            SQLException cause = assertInstanceOf(SQLException.class, failed.getCause().getCause(), failed.toString());
            assertTrue(cause.getSQLState().startsWith("08"), "a connection failure, which the service answers as "
                    + "unavailable (retry): " + cause.getSQLState() + " " + cause.getMessage());
            assertTrue(waited.toMillis() >= LIMIT_SECONDS * 1000L, "not closed before the limit: " + waited);
            assertTrue(c.isClosed(), "pgjdbc gave the connection up, so the pool drops it");
            assertTrue(WatchedSocketFactory.readsClosed() > closedBefore);
        }
    }

    /** A statement slower than the watchdog's interval but within the limit is left alone. */
    @Test
    void aSlowStatementWithinTheLimitIsLeftAlone() throws Exception {
        try (Connection c = connect(watched(LIMIT_SECONDS * 2)); Statement s = c.createStatement()) {
            s.execute("SELECT pg_sleep(0.5)");
            assertEquals(1, selectOne(c));
            assertFalse(c.isClosed());
        }
    }

    @Test
    void aLimitThatIsNotAPositiveNumberOfSecondsIsRefused() {
        Properties zero = new Properties();
        zero.setProperty(WatchedSocketFactory.READ_LIMIT, "0");
        assertThrows(IllegalArgumentException.class, () -> new WatchedSocketFactory(zero));
        Properties words = new Properties();
        words.setProperty(WatchedSocketFactory.READ_LIMIT, "ten");
        assertThrows(IllegalArgumentException.class, () -> new WatchedSocketFactory(words));
    }

    private static Properties watched(int limitSeconds) {
        Properties p = new Properties();
        p.setProperty("socketFactory", WatchedSocketFactory.class.getName());
        p.setProperty(WatchedSocketFactory.READ_LIMIT, Integer.toString(limitSeconds));
        return p;
    }

    private Connection connect(Properties extra) throws SQLException {
        Properties p = new Properties();
        p.putAll(extra);
        p.setProperty("user", "postgres");
        p.setProperty("password", "postgres");
        p.setProperty("connectTimeout", "5");
        return DriverManager.getConnection(TestPostgres.jdbcUrl(proxy.port(), database), p);
    }

    private static int selectOne(Connection c) {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT 1")) {
            rs.next();
            return rs.getInt(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}

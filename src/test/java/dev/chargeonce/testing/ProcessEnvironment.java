package dev.chargeonce.testing;

import dev.chargeonce.sandbox.StripeSandbox;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a process test owns: a fresh database on the suite's PostgreSQL, a {@link TcpProxy} in front of it (the
 * services connect through it, so the test can cut the database away), and a Stripe sandbox in the test JVM
 * (it outlives any service the test kills).
 */
public final class ProcessEnvironment implements AutoCloseable {

    public final String database;
    public final TcpProxy databaseProxy;
    public final StripeSandbox stripe;

    public ProcessEnvironment(String prefix) {
        try {
            this.database = TestPostgres.newDatabase(prefix);
            this.databaseProxy = new TcpProxy(TestPostgres.port());
            this.stripe = StripeSandbox.start(0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Config for a service process: database through the proxy, the sandbox, the test clients, short leases. */
    public Map<String, String> serviceConfig() {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("quarkus.datasource.jdbc.url", TestPostgres.jdbcUrl(databaseProxy.port(), database));
        config.put("quarkus.datasource.username", "postgres");
        config.put("quarkus.datasource.password", "postgres");
        config.put("chargeonce.stripe.api-key", "sk_test_sandbox");
        config.put("chargeonce.stripe.api-base", stripe.baseUrl());
        config.put("chargeonce.auth.clients", TestClients.config());
        return config;
    }

    /** A direct connection to the test database (not through the proxy), to inspect rows. */
    public Connection connect() throws SQLException {
        return DriverManager.getConnection(TestPostgres.jdbcUrl(TestPostgres.port(), database), "postgres", "postgres");
    }

    @Override
    public void close() throws IOException {
        databaseProxy.close();
        stripe.close();
    }
}

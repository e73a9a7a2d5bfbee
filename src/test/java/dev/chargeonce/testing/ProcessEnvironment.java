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
    /** The server the proxy leads to: the suite's PostgreSQL, or a test's own (then, after a failover, its standby). */
    private volatile int serverPort;

    public ProcessEnvironment(String prefix) {
        this(TestPostgres.port(), TestPostgres.newDatabase(prefix));
    }

    /** On a server the test started itself ({@link TestPostgres#startServer()}), database {@code database} there. */
    public ProcessEnvironment(int serverPort, String database) {
        try {
            this.serverPort = serverPort;
            this.database = database;
            this.databaseProxy = new TcpProxy(serverPort);
            this.stripe = StripeSandbox.start(0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A failover as the services see it: every connection to the old server is dropped, and the address they know
     * leads to the server on {@code port} (the promoted standby) from now on; {@link #connect()} too.
     */
    public void failOverTo(int port) {
        databaseProxy.cut();
        databaseProxy.retarget(port);
        serverPort = port;
        databaseProxy.restore();
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
        config.put("chargeonce.stripe.webhook-secret", PostgresAndSandbox.WEBHOOK_SECRET);
        config.putAll(TestKeys.config());
        // Tests that count Stripe's requests must not see the reconciliation's lists; those that test it enable it.
        config.put("chargeonce.reconciliation.enabled", "false");
        return config;
    }

    /**
     * A lease of a few seconds, so that a test sees takeovers quickly, with Stripe timeouts and retries cut to fit
     * inside it: the service refuses to start with a lease shorter than one Stripe call can take (a holder must be
     * done sending before anyone else may take over). {@code readTimeout} is the SDK's per-try wait.
     */
    public static void shortLease(Map<String, String> config, java.time.Duration lease, java.time.Duration readTimeout) {
        long connect = 500;
        long perTry = connect + readTimeout.toMillis();
        long pause = 200 + 150; // the retry's delay and jitter
        int retries = 2;
        while (retries > 0 && (retries + 1) * perTry + retries * pause >= lease.toMillis() - 250) {
            retries--;
        }
        if (perTry >= lease.toMillis() - 250) {
            throw new IllegalArgumentException("a " + readTimeout + " read timeout does not fit in a " + lease + " lease");
        }
        config.put("chargeonce.idempotency.lease", lease.toMillis() + "ms");
        config.put("chargeonce.stripe.connect-timeout", connect + "ms");
        config.put("chargeonce.stripe.read-timeout", readTimeout.toMillis() + "ms");
        config.put("dev.chargeonce.stripe.StripeApi/create/Retry/maxRetries", Integer.toString(retries));
        config.put("dev.chargeonce.stripe.StripeApi/createRefund/Retry/maxRetries", Integer.toString(retries));
    }

    /** A direct connection to the test database (not through the proxy), to inspect rows. */
    public Connection connect() throws SQLException {
        return DriverManager.getConnection(TestPostgres.jdbcUrl(serverPort, database), "postgres", "postgres");
    }

    /** Waits until the sandbox has received {@code n} create requests (the service is now "charging"). */
    public void awaitCreateRequests(long n, java.time.Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (stripe.createRequests() < n && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        if (stripe.createRequests() < n) {
            throw new AssertionError("Stripe saw " + stripe.createRequests() + " creates, expected " + n);
        }
    }

    /**
     * Waits until the sandbox executes no create and holds a PaymentIntent of this (client, Idempotency-Key): a
     * slow create the service may no longer wait for (it timed out, or it was killed) has been charged.
     */
    public void awaitStripeCharged(String clientId, String idempotencyKey, java.time.Duration timeout)
            throws InterruptedException {
        String identity = dev.chargeonce.testing.TestKeys.identity(clientId, idempotencyKey);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (stripe.executing() > 0 || stripe.intentsForKey(identity).isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("Stripe did not charge the key within " + timeout + ": " + stripe.executing()
                        + " create(s) executing, " + stripe.intentsForKey(identity).size() + " PaymentIntent(s) of the key");
            }
            Thread.sleep(20);
        }
    }

    /** The status of the row of this Idempotency-Key, or null when there is none. */
    public String rowStatus(String idempotencyKey) throws SQLException {
        // An HTTP row by its identity under a test client; a Kafka command's row (any client) by its event id, the one
        // key rows keep.
        try (Connection c = connect(); java.sql.PreparedStatement ps = c.prepareStatement(
                "SELECT status FROM stripe_intents WHERE stripe_identity IN (?, ?) OR (idempotency_key = ? AND origin IS NOT NULL)")) {
            ps.setString(1, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.ACME, idempotencyKey));
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.GLOBEX, idempotencyKey));
            ps.setString(3, idempotencyKey);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    /** Waits up to {@code timeout} for the row to reach {@code status}; returns the status it has then. */
    public String awaitRowStatus(String idempotencyKey, String status, java.time.Duration timeout)
            throws SQLException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        String current = rowStatus(idempotencyKey);
        while (!status.equals(current) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            current = rowStatus(idempotencyKey);
        }
        return current;
    }

    @Override
    public void close() throws IOException {
        databaseProxy.close();
        stripe.close();
    }
}

package dev.chargeonce.testing;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The lagging read replica of the incident: a real streaming standby ({@link StreamingStandby}) of
 * {@link TestPostgres}, on its own port, that replays every commit {@link #APPLY_DELAY} late
 * ({@code recovery_min_apply_delay}), reliably behind. One per test JVM, started on first use.
 */
public final class TestReplica {

    /** How far behind the replica replays every commit. */
    public static final Duration APPLY_DELAY = Duration.ofSeconds(3);

    private static final String SLOT = "chargeonce_test_replica";

    private static StreamingStandby standby;

    private TestReplica() {
    }

    private static synchronized StreamingStandby standby() {
        if (standby == null) {
            long started = System.nanoTime();
            standby = StreamingStandby.start(TestPostgres.port(), TestPostgres.port(), SLOT, APPLY_DELAY);
            System.out.printf("test replica: streaming from port %d on port %d, apply delay %s, ready in %d ms%n",
                    TestPostgres.port(), standby.port(), APPLY_DELAY, (System.nanoTime() - started) / 1_000_000);
        }
        return standby;
    }

    public static int port() {
        return standby().port();
    }

    /**
     * The service's config for a replica data source on {@code port} (the replica's own, or a proxy in front of
     * it) and {@code database}.
     */
    public static Map<String, String> serviceConfig(int port, String database) {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("quarkus.datasource.replica.jdbc.url", TestPostgres.jdbcUrl(port, database));
        config.put("quarkus.datasource.replica.username", "postgres");
        config.put("quarkus.datasource.replica.password", "postgres");
        return config;
    }

    /** A connection to a database on the replica (read-only: it is a hot standby). */
    public static Connection connect(String database) throws SQLException {
        return standby().connect(database);
    }

    /**
     * Waits until the replica has replayed everything the primary had written when this was called (so a new
     * database and its schema exist there): about {@link #APPLY_DELAY}.
     */
    public static void awaitCaughtUp(Duration timeout) {
        standby().awaitCaughtUp(timeout);
    }

    /** The replica's lag as its own clock sees it (zero when it replayed all it received). */
    public static Duration lag() {
        return standby().lag();
    }
}

package dev.chargeonce.replica;

import dev.chargeonce.idempotency.DatabaseFailures;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.Startup;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.jboss.logging.Logger;

/**
 * Measures how far the replica is behind and exports it (only when a replica is configured):
 * <ul>
 *   <li>{@code chargeonce.replica.lag.seconds}: on the replica, {@code now() - pg_last_xact_replay_timestamp()}
 *       while it holds WAL it has not replayed yet, 0 once it has replayed all it received. While behind, this is
 *       an upper bound of how stale a read can be: it counts from the last commit the replica <em>did</em> replay,
 *       so after an idle stretch of the primary it also includes that idle time.</li>
 *   <li>{@code chargeonce.replica.lag.bytes}: WAL the primary has written that the replica has not replayed
 *       ({@code pg_current_wal_lsn()} on the primary minus {@code pg_last_wal_replay_lsn()} on the replica).</li>
 * </ul>
 * A failed measurement sets both to NaN: "unknown" must not read as "caught up".
 */
@Startup // the gauges exist from start-up on, before the first measurement
@ApplicationScoped
public class ReplicaLag {

    private static final Logger LOG = Logger.getLogger(ReplicaLag.class);

    private static final String REPLICA_SIDE = """
            SELECT pg_is_in_recovery() AS in_recovery,
                   CASE WHEN NOT pg_is_in_recovery() THEN 0
                        WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                        ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())
                   END AS lag_seconds,
                   pg_last_wal_replay_lsn()::text AS replay_lsn
            """;
    private static final String PRIMARY_SIDE = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ?::pg_lsn)";

    private final ReadSource reads;
    private volatile double lagSeconds = Double.NaN;
    private volatile double lagBytes = Double.NaN;

    ReplicaLag(ReadSource reads, MeterRegistry registry) {
        this.reads = reads;
        if (reads.replicaConfigured()) {
            Gauge.builder("chargeonce.replica.lag.seconds", this, r -> r.lagSeconds)
                    .description("How stale replica reads can be: now() - last replayed commit while WAL is pending, else 0")
                    .baseUnit("seconds").register(registry);
            Gauge.builder("chargeonce.replica.lag.bytes", this, r -> r.lagBytes)
                    .description("WAL written on the primary and not yet replayed on the replica")
                    .baseUnit("bytes").register(registry);
        }
    }

    @Scheduled(identity = "replica-lag", every = "${chargeonce.replica.lag-interval:5s}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void measure() {
        if (!reads.replicaConfigured()) {
            return;
        }
        try {
            reads.onReplica(ReplicaLag::replicaSide).ifPresentOrElse(replica -> {
                lagSeconds = replica.lagSeconds();
                lagBytes = replica.inRecovery() && replica.replayLsn() != null ? bytesBehind(replica.replayLsn()) : 0;
            }, () -> {
                lagSeconds = Double.NaN;
                lagBytes = Double.NaN;
            });
        } catch (DatabaseUnavailableException e) {
            // the primary side failed: the replica side alone is still worth exporting
            LOG.debugf("replica lag in bytes unknown: %s", e.getMessage());
            lagBytes = Double.NaN;
        }
    }

    /** The last measurement, for tests and logs: NaN when unknown. */
    public double lagSeconds() {
        return lagSeconds;
    }

    private record ReplicaSide(boolean inRecovery, double lagSeconds, String replayLsn) {
    }

    private static ReplicaSide replicaSide(AgroalDataSource replica) {
        try (Connection c = replica.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(REPLICA_SIDE)) {
            rs.next();
            double seconds = rs.getDouble("lag_seconds");
            return new ReplicaSide(rs.getBoolean("in_recovery"), rs.wasNull() ? Double.NaN : Math.max(0, seconds), rs.getString("replay_lsn"));
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    private double bytesBehind(String replayLsn) {
        try (Connection c = reads.primary().getConnection(); PreparedStatement ps = c.prepareStatement(PRIMARY_SIDE)) {
            ps.setString(1, replayLsn);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return Math.max(0, rs.getDouble(1));
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }
}

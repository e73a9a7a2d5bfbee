package dev.chargeonce.replica;

import dev.chargeonce.idempotency.DatabaseFailures;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.agroal.DataSource;
import io.quarkus.arc.InjectableInstance;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * Where the read endpoints read: the named data source {@code replica} when it is configured and active, the
 * primary otherwise. Only the read endpoints hold this bean; the idempotency path (the store's classes in
 * {@code dev.chargeonce.idempotency}: {@code Claims}, {@code Finishes}, ...) injects the default data source alone and
 * never sees it.
 *
 * <p>A replica is allowed to be behind and allowed to be down: a read that fails on it is answered from the
 * primary (and counted), never turned into an error for the client.
 */
@ApplicationScoped
public class ReadSource {

    private static final Logger LOG = Logger.getLogger(ReadSource.class);

    /** A read against one data source, as the read endpoints' statements take it. */
    @FunctionalInterface
    public interface Read<T> {
        T run(AgroalDataSource source);
    }

    /**
     * How far the replica has replayed: {@code inRecovery} false means it is not a standby at all (it answers
     * for itself); {@code lastReplayedCommit} is the primary's timestamp of the last commit it replayed, or empty
     * when it has replayed none since it started.
     */
    public record Position(boolean inRecovery, Optional<Instant> lastReplayedCommit) {
    }

    private final AgroalDataSource primary;
    private final Optional<AgroalDataSource> replica;
    private final MeterRegistry metrics;

    ReadSource(@Default AgroalDataSource primary, @DataSource("replica") InjectableInstance<AgroalDataSource> replica,
               MeterRegistry metrics) {
        this.primary = primary;
        // Inactive (no URL, or quarkus.datasource.replica.active=false): listActive() is empty and nothing connects.
        List<AgroalDataSource> active = replica.listActive();
        this.replica = active.isEmpty() ? Optional.empty() : Optional.of(active.get(0));
        this.metrics = metrics;
        LOG.infof("read endpoints read from %s", this.replica.isPresent() ? "the replica, falling back to the primary" : "the primary");
    }

    public boolean replicaConfigured() {
        return replica.isPresent();
    }

    public AgroalDataSource primary() {
        return primary;
    }

    /**
     * Runs the read on the replica. Empty when there is no replica or the replica could not answer (logged and
     * counted as fallback reason {@code error}): the caller then reads the primary.
     */
    public <T> Optional<T> onReplica(Read<T> read) {
        if (replica.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(read.run(replica.get()));
        } catch (DatabaseUnavailableException e) {
            LOG.warnf("replica read failed, reading the primary instead: %s", e.getMessage());
            fellBack("error");
            return Optional.empty();
        }
    }

    /** Counts a read the replica could not answer by itself: {@code missing}, {@code processing}, {@code error}, ... */
    public void fellBack(String reason) {
        metrics.counter("chargeonce.replica.fallbacks", "reason", reason).increment();
    }

    /** How far this data source (the replica) has replayed the primary's WAL. */
    public static Position position(AgroalDataSource source) {
        try (Connection c = source.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT pg_is_in_recovery(), pg_last_xact_replay_timestamp()")) {
            rs.next();
            Timestamp replayed = rs.getTimestamp(2);
            return new Position(rs.getBoolean(1), Optional.ofNullable(replayed).map(Timestamp::toInstant));
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }
}

package dev.chargeonce.reconcile;

import dev.chargeonce.idempotency.DatabaseFailures;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.Transactions;
import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Every statement on the reconciliation tables (the job's lease, its runs and their checkpoints, the objects a run
 * saw, the findings, the operators' audit trail), on the primary. Nothing here touches a charge or a refund.
 */
@ApplicationScoped
public class ReconciliationStore {

    static final String JOB = "reconciliation";

    private final AgroalDataSource primary;

    ReconciliationStore(AgroalDataSource primary) {
        this.primary = primary;
    }

    // ---- the job's lease -------------------------------------------------------------------------------------------

    /** The lease this instance holds on the job: every checkpoint it writes carries the generation. */
    record JobLease(String holder, long generation) {
    }

    /**
     * Takes the job's lease when it is free or already ours, for {@code lease}; a new holder gets a new generation
     * (a holder that lost it can no longer write a checkpoint). Empty when another instance holds it.
     */
    Optional<JobLease> acquire(String holder, Duration lease) {
        return query("""
                UPDATE job_leases
                   SET lease_gen = CASE WHEN holder = ? AND lease_until > clock_timestamp() THEN lease_gen ELSE lease_gen + 1 END,
                       holder = ?, lease_until = clock_timestamp() + ? * interval '1 millisecond'
                 WHERE name = ? AND (lease_until <= clock_timestamp() OR holder = ?)
                RETURNING lease_gen""", ps -> {
            ps.setString(1, holder);
            ps.setString(2, holder);
            ps.setLong(3, lease.toMillis());
            ps.setString(4, JOB);
            ps.setString(5, holder);
        }, rs -> rs.next() ? Optional.of(new JobLease(holder, rs.getLong(1))) : Optional.<JobLease>empty());
    }

    /** Lets the lease go, so that another instance may run at once (a clean stop, or a pass that is done). */
    void release(JobLease lease) {
        update("UPDATE job_leases SET lease_until = '-infinity' WHERE name = ? AND holder = ? AND lease_gen = ?", ps -> {
            ps.setString(1, JOB);
            ps.setString(2, lease.holder());
            ps.setLong(3, lease.generation());
        });
    }

    // ---- runs ------------------------------------------------------------------------------------------------------

    /** A run and where it stands. {@code cursor}: Stripe's {@code starting_after}, or our rows' {@code finished_at|id}. */
    public record Run(long id, Instant from, Instant to, String requestedBy, String status, String phase, String cursor, int pages,
               int objects, int rateLimited, int newFindings, String error, Instant createdAt, Instant startedAt,
               Instant finishedAt) {
    }

    private static final String RUN_COLUMNS = "id, window_from, window_to, requested_by, status, phase, cursor, pages, objects, "
            + "rate_limited, new_findings, error, created_at, started_at, finished_at";

    private static Run run(ResultSet rs) throws SQLException {
        return new Run(rs.getLong("id"), instant(rs, "window_from"), instant(rs, "window_to"), rs.getString("requested_by"),
                rs.getString("status"), rs.getString("phase"), rs.getString("cursor"), rs.getInt("pages"), rs.getInt("objects"),
                rs.getInt("rate_limited"), rs.getInt("new_findings"), rs.getString("error"), instant(rs, "created_at"),
                instant(rs, "started_at"), instant(rs, "finished_at"));
    }

    Run queue(Instant from, Instant to, String requestedBy) {
        return query("INSERT INTO reconciliation_runs (window_from, window_to, requested_by) VALUES (?, ?, ?) RETURNING " + RUN_COLUMNS,
                ps -> {
                    ps.setTimestamp(1, Timestamp.from(from));
                    ps.setTimestamp(2, Timestamp.from(to));
                    ps.setString(3, requestedBy);
                }, rs -> {
                    rs.next();
                    return run(rs);
                });
    }

    /** The oldest run not finished yet: a run a killed instance left half-way comes before a queued one. */
    Optional<Run> nextOpenRun() {
        return query("SELECT " + RUN_COLUMNS + " FROM reconciliation_runs WHERE status IN ('queued', 'running') "
                + "ORDER BY status = 'running' DESC, created_at LIMIT 1", ps -> {
        }, rs -> rs.next() ? Optional.of(run(rs)) : Optional.<Run>empty());
    }

    /** The end of the newest window the schedule completed: where the next scheduled window starts. */
    Optional<Instant> lastScheduledWindowEnd() {
        return query("SELECT max(window_to) FROM reconciliation_runs WHERE requested_by = 'schedule' AND status = 'completed'",
                ps -> {
                }, rs -> rs.next() && rs.getTimestamp(1) != null ? Optional.of(rs.getTimestamp(1).toInstant()) : Optional.<Instant>empty());
    }

    Optional<Run> findRun(long id) {
        return query("SELECT " + RUN_COLUMNS + " FROM reconciliation_runs WHERE id = ?", ps -> ps.setLong(1, id),
                rs -> rs.next() ? Optional.of(run(rs)) : Optional.<Run>empty());
    }

    List<Run> recentRuns(int limit) {
        return query("SELECT " + RUN_COLUMNS + " FROM reconciliation_runs ORDER BY id DESC LIMIT ?", ps -> ps.setInt(1, limit), rs -> {
            List<Run> runs = new ArrayList<>();
            while (rs.next()) {
                runs.add(run(rs));
            }
            return runs;
        });
    }

    /** When the newest run finished, for the "reconciliation is running" gauge; empty before the first. */
    Optional<Instant> lastCompletedAt() {
        return query("SELECT max(finished_at) FROM reconciliation_runs WHERE status = 'completed'", ps -> {
        }, rs -> rs.next() && rs.getTimestamp(1) != null ? Optional.of(rs.getTimestamp(1).toInstant()) : Optional.<Instant>empty());
    }

    /**
     * Writes where a run stands after a page, fenced by the job's lease: false when this instance no longer holds
     * it (another holder carries the run on from the last checkpoint that did commit).
     */
    boolean checkpoint(JobLease lease, long runId, String phase, String cursor, int pages, int objects, int rateLimited,
                       int newFindings) {
        return update("""
                UPDATE reconciliation_runs
                   SET status = 'running', phase = ?, cursor = ?, pages = pages + ?, objects = objects + ?,
                       rate_limited = rate_limited + ?, new_findings = new_findings + ?, error = NULL,
                       started_at = coalesce(started_at, clock_timestamp())
                 WHERE id = ? AND status IN ('queued', 'running')
                   AND EXISTS (SELECT 1 FROM job_leases WHERE name = ? AND holder = ? AND lease_gen = ?
                                                            AND lease_until > clock_timestamp())""", ps -> {
            ps.setString(1, phase);
            ps.setString(2, cursor);
            ps.setInt(3, pages);
            ps.setInt(4, objects);
            ps.setInt(5, rateLimited);
            ps.setInt(6, newFindings);
            ps.setLong(7, runId);
            ps.setString(8, JOB);
            ps.setString(9, lease.holder());
            ps.setLong(10, lease.generation());
        }) == 1;
    }

    /** Extends the job's lease while a page is slow (a rate-limit back-off); false when it was lost. */
    boolean renew(JobLease lease, Duration duration) {
        return update("UPDATE job_leases SET lease_until = clock_timestamp() + ? * interval '1 millisecond' "
                + "WHERE name = ? AND holder = ? AND lease_gen = ? AND lease_until > clock_timestamp()", ps -> {
            ps.setLong(1, duration.toMillis());
            ps.setString(2, JOB);
            ps.setString(3, lease.holder());
            ps.setLong(4, lease.generation());
        }) == 1;
    }

    /** Ends a run ({@code completed} or {@code failed} with the reason); its seen objects are no longer needed. */
    boolean finish(JobLease lease, long runId, String status, String error) {
        return inTransaction(tx -> {
            int changed;
            try (PreparedStatement ps = tx.prepareStatement("""
                    UPDATE reconciliation_runs SET status = ?, phase = 'done', error = ?, finished_at = clock_timestamp()
                     WHERE id = ? AND status IN ('queued', 'running')
                       AND EXISTS (SELECT 1 FROM job_leases WHERE name = ? AND holder = ? AND lease_gen = ?)""")) {
                ps.setString(1, status);
                ps.setString(2, error);
                ps.setLong(3, runId);
                ps.setString(4, JOB);
                ps.setString(5, lease.holder());
                ps.setLong(6, lease.generation());
                changed = ps.executeUpdate();
            }
            try (PreparedStatement ps = tx.prepareStatement("DELETE FROM reconciliation_seen WHERE run_id = ?")) {
                ps.setLong(1, runId);
                ps.executeUpdate();
            }
            return changed == 1;
        });
    }

    /** Records that Stripe has these objects (ids of ours or Stripe's) for the run's second half. */
    void saw(long runId, Collection<String> objectIds) {
        if (objectIds.isEmpty()) {
            return;
        }
        update("INSERT INTO reconciliation_seen (run_id, object_id) SELECT ?, unnest(?) ON CONFLICT DO NOTHING", ps -> {
            ps.setLong(1, runId);
            ps.setArray(2, ps.getConnection().createArrayOf("text", objectIds.toArray()));
        });
    }

    /** Which of these ids the run already saw at Stripe. */
    java.util.Set<String> seen(long runId, Collection<String> ids) {
        if (ids.isEmpty()) {
            return java.util.Set.of();
        }
        return query("SELECT object_id FROM reconciliation_seen WHERE run_id = ? AND object_id = ANY (?)", ps -> {
            ps.setLong(1, runId);
            ps.setArray(2, ps.getConnection().createArrayOf("text", ids.toArray()));
        }, rs -> {
            java.util.Set<String> found = new java.util.HashSet<>();
            while (rs.next()) {
                found.add(rs.getString(1));
            }
            return found;
        });
    }

    // ---- findings --------------------------------------------------------------------------------------------------

    /** A finding as stored. */
    public record StoredFinding(long id, FindingKind kind, String subject, String operation, String rowId, String stripeObjectId,
                                String clientId, String detail, Instant firstSeen, Instant lastSeen, int timesSeen,
                                Instant resolvedAt, String resolvedBy, String resolution) {

        public boolean open() {
            return resolvedAt == null;
        }
    }

    private static final String FINDING_COLUMNS = "id, kind, subject, operation, row_id, stripe_object_id, client_id, detail, "
            + "first_seen, last_seen, times_seen, resolved_at, resolved_by, resolution";

    private static StoredFinding finding(ResultSet rs) throws SQLException {
        return new StoredFinding(rs.getLong("id"), FindingKind.valueOf(rs.getString("kind").toUpperCase(java.util.Locale.ROOT)),
                rs.getString("subject"), rs.getString("operation"), rs.getString("row_id"), rs.getString("stripe_object_id"),
                rs.getString("client_id"), rs.getString("detail"), instant(rs, "first_seen"), instant(rs, "last_seen"),
                rs.getInt("times_seen"), instant(rs, "resolved_at"), rs.getString("resolved_by"), rs.getString("resolution"));
    }

    /**
     * Records what a run found: new findings are inserted; one already recorded (open or resolved) only has its
     * last sighting moved, so a run never reports the same difference twice. Returns the new ones.
     */
    List<Finding> record(long runId, List<Finding> findings) {
        if (findings.isEmpty()) {
            return List.of();
        }
        return inTransaction(tx -> {
            List<Finding> fresh = new ArrayList<>();
            for (Finding f : findings) {
                if (record(tx, runId, f)) {
                    fresh.add(f);
                }
            }
            return fresh;
        });
    }

    private static final String RECORD_FINDING = """
            INSERT INTO reconciliation_findings AS f (kind, subject, operation, row_id, stripe_object_id, client_id, detail,
                                                     first_run_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (kind, subject) DO UPDATE
               SET last_seen = clock_timestamp(), times_seen = f.times_seen + 1, detail = excluded.detail
            RETURNING (xmax = 0) AS inserted""";

    /**
     * Records one finding in the caller's transaction ({@link #record(long, List)}'s rule: once per kind and subject);
     * {@code runId} null for one found outside a run (an event). True when it is new.
     */
    boolean record(Connection tx, Long runId, Finding f) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(RECORD_FINDING)) {
            ps.setString(1, f.kind().column());
            ps.setString(2, f.subject());
            ps.setString(3, f.operation() == null ? null : f.operation().name().toLowerCase(java.util.Locale.ROOT));
            ps.setString(4, f.rowId());
            ps.setString(5, f.stripeObjectId());
            ps.setString(6, f.clientId());
            ps.setString(7, f.detail());
            ps.setObject(8, runId, java.sql.Types.BIGINT);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    /**
     * Resolves the open findings of these kinds that the current sighting no longer shows (a parked row an
     * operator or a driver finished): the job's own resolution, recorded as such.
     */
    int resolveNoLongerSeen(Collection<FindingKind> kinds, Collection<String> stillSeenSubjects) {
        return update("""
                UPDATE reconciliation_findings SET resolved_at = clock_timestamp(), resolved_by = 'reconciliation',
                       resolution = 'no longer present'
                 WHERE resolved_at IS NULL AND kind = ANY (?) AND NOT (subject = ANY (?))""", ps -> {
            ps.setArray(1, ps.getConnection().createArrayOf("text", kinds.stream().map(FindingKind::column).toArray()));
            ps.setArray(2, ps.getConnection().createArrayOf("text", stillSeenSubjects.toArray()));
        });
    }

    List<StoredFinding> findings(boolean openOnly, int limit) {
        return query("SELECT " + FINDING_COLUMNS + " FROM reconciliation_findings " + (openOnly ? "WHERE resolved_at IS NULL " : "")
                + "ORDER BY resolved_at IS NULL DESC, first_seen DESC LIMIT ?", ps -> ps.setInt(1, limit), rs -> {
            List<StoredFinding> all = new ArrayList<>();
            while (rs.next()) {
                all.add(finding(rs));
            }
            return all;
        });
    }

    Optional<StoredFinding> finding(long id) {
        return query("SELECT " + FINDING_COLUMNS + " FROM reconciliation_findings WHERE id = ?", ps -> ps.setLong(1, id),
                rs -> rs.next() ? Optional.of(finding(rs)) : Optional.<StoredFinding>empty());
    }

    /** Open findings that concern this row. */
    List<StoredFinding> openFindingsOfRow(String rowId) {
        return query("SELECT " + FINDING_COLUMNS + " FROM reconciliation_findings WHERE resolved_at IS NULL AND row_id = ?",
                ps -> ps.setString(1, rowId), rs -> {
                    List<StoredFinding> all = new ArrayList<>();
                    while (rs.next()) {
                        all.add(finding(rs));
                    }
                    return all;
                });
    }

    /** Every finding that concerns this row, open or resolved, oldest first: part of its story. */
    List<StoredFinding> findingsOfRow(String rowId) {
        return query("SELECT " + FINDING_COLUMNS + " FROM reconciliation_findings WHERE row_id = ? ORDER BY first_seen LIMIT 200",
                ps -> ps.setString(1, rowId), rs -> {
                    List<StoredFinding> all = new ArrayList<>();
                    while (rs.next()) {
                        all.add(finding(rs));
                    }
                    return all;
                });
    }

    /** Resolves an open finding; false when it was resolved already. */
    boolean resolve(long findingId, String by, String resolution) {
        return update("UPDATE reconciliation_findings SET resolved_at = clock_timestamp(), resolved_by = ?, resolution = ? "
                + "WHERE id = ? AND resolved_at IS NULL", ps -> {
            ps.setString(1, by);
            ps.setString(2, resolution);
            ps.setLong(3, findingId);
        }) == 1;
    }

    /** Resolves the open findings about a row an operator just ended. */
    int resolveFindingsOfRow(String rowId, String by, String resolution) {
        return update("UPDATE reconciliation_findings SET resolved_at = clock_timestamp(), resolved_by = ?, resolution = ? "
                + "WHERE row_id = ? AND resolved_at IS NULL", ps -> {
            ps.setString(1, by);
            ps.setString(2, resolution);
            ps.setString(3, rowId);
        });
    }

    /** Open findings by kind (every kind present, 0 for none): the gauges. */
    Map<FindingKind, Long> openByKind() {
        Map<FindingKind, Long> counts = new LinkedHashMap<>();
        for (FindingKind kind : FindingKind.values()) {
            counts.put(kind, 0L);
        }
        query("SELECT kind, count(*) FROM reconciliation_findings WHERE resolved_at IS NULL GROUP BY kind", ps -> {
        }, rs -> {
            while (rs.next()) {
                counts.put(FindingKind.valueOf(rs.getString(1).toUpperCase(java.util.Locale.ROOT)), rs.getLong(2));
            }
            return null;
        });
        return counts;
    }

    // ---- the operators' audit trail --------------------------------------------------------------------------------

    /** One action, as recorded. */
    public record AuditEntry(long id, Instant at, String operator, String action, String operation, String rowId, Long findingId,
                             Integer leaseGeneration, String reason, String outcome, String detail) {
    }

    void audit(String operator, String action, String operation, String rowId, Long findingId, Integer leaseGeneration,
               String reason, String outcome, String detail) {
        update("""
                INSERT INTO operator_actions (operator, action, operation, row_id, finding_id, lease_gen, reason, outcome, detail)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""", ps -> {
            ps.setString(1, operator);
            ps.setString(2, action);
            ps.setString(3, operation);
            ps.setString(4, rowId);
            ps.setObject(5, findingId);
            ps.setObject(6, leaseGeneration);
            ps.setString(7, reason);
            ps.setString(8, outcome);
            ps.setString(9, detail);
        });
    }

    List<AuditEntry> auditTrail(String rowId, int limit) {
        return query("SELECT id, at, operator, action, operation, row_id, finding_id, lease_gen, reason, outcome, detail "
                + "FROM operator_actions " + (rowId == null ? "" : "WHERE row_id = ? ") + "ORDER BY id DESC LIMIT ?", ps -> {
            int i = 1;
            if (rowId != null) {
                ps.setString(i++, rowId);
            }
            ps.setInt(i, limit);
        }, rs -> {
            List<AuditEntry> all = new ArrayList<>();
            while (rs.next()) {
                long finding = rs.getLong("finding_id");
                Long findingId = rs.wasNull() ? null : finding;
                int gen = rs.getInt("lease_gen");
                Integer leaseGen = rs.wasNull() ? null : gen;
                all.add(new AuditEntry(rs.getLong("id"), instant(rs, "at"), rs.getString("operator"), rs.getString("action"),
                        rs.getString("operation"), rs.getString("row_id"), findingId, leaseGen, rs.getString("reason"),
                        rs.getString("outcome"), rs.getString("detail")));
            }
            return all;
        });
    }

    // ---- plumbing ----------------------------------------------------------------------------------------------------

    @FunctionalInterface
    private interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    @FunctionalInterface
    private interface Reader<T> {
        T read(ResultSet rs) throws SQLException;
    }

    private <T> T query(String sql, Binder binder, Reader<T> reader) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
                return reader.read(rs);
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    private int update(String sql, Binder binder) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    private <T> T inTransaction(Transactions.Work<T> work) {
        return Transactions.inTransaction(primary, work);
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}

package dev.chargeonce.idempotency;

import static dev.chargeonce.idempotency.StatementCatalog.byOperation;
import static dev.chargeonce.idempotency.StatementCatalog.sql;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jboss.logging.Logger;

/**
 * The rows' upkeep, apart from any request: retention, the operators' gauges over processing rows, and the key-hash
 * versions the rows have. Retention deletes only finished rows older than the age it is given (the retention job
 * gives the longer of the retention and the refund window, and refuses to start with a retention shorter than
 * Stripe's key window plus the lease): never a processing row, never one whose Stripe object is still followed, and
 * never a charge that still has refunds. The key-hash versions are read at start-up
 * ({@code KeyVersionsCheck}): an instance must look up every version its rows were written under.
 */
@ApplicationScoped
public class Upkeep {

    private static final Logger LOG = Logger.getLogger(Upkeep.class);

    private final AgroalDataSource primary;

    Upkeep(@Default AgroalDataSource primary) {
        this.primary = primary;
    }

    /**
     * Counts for the operators' gauges, over the processing rows: whose lease expired more than
     * {@code expiredFor} ago, parked for reconciliation, older than {@code overdueAfter} since the claim (driven
     * again and again without an end counts here, whatever its lease), the oldest one's age and the most drives
     * (lease generations) any of them had.
     */
    public RowCounts countAttentionRows(Operation op, Duration expiredFor, Duration overdueAfter) {
        RowCounts[] counts = new RowCounts[1];
        Jdbc.run(primary, sql(op).countAttention(), ps -> {
            ps.setLong(1, expiredFor.toMillis());
            ps.setLong(2, overdueAfter.toMillis());
        }, rs -> {
            if (rs.next()) {
                counts[0] = new RowCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getDouble(4), rs.getLong(5));
            }
        });
        return counts[0];
    }

    public record RowCounts(long expiredProcessing, long parkedForReconciliation, long overdueProcessing,
                            double oldestProcessingAgeSeconds, long maxDrives) {
    }

    /**
     * Deletes up to {@code batch} finished rows older than {@code retention}: a read of candidates without locks, then
     * one short statement per client that deletes its candidates that still qualify under their locks (SKIP LOCKED
     * keeps locks short and leaves a row someone works on); processing rows are never deleted, whatever their age.
     */
    public int deleteFinishedBefore(Operation op, Duration retention, int batch) {
        Map<String, List<String>> byClient = new java.util.LinkedHashMap<>();
        Jdbc.run(primary, sql(op).finishedCandidates(), ps -> {
            ps.setLong(1, retention.toMillis());
            ps.setInt(2, batch);
        }, rs -> {
            while (rs.next()) {
                byClient.computeIfAbsent(rs.getString("client_id"), client -> new ArrayList<>()).add(rs.getString("id"));
            }
        });
        int deleted = 0;
        for (Map.Entry<String, List<String>> client : byClient.entrySet()) {
            try {
                deleted += Jdbc.update(primary, sql(op).deleteFinished(), ps -> {
                    ps.setString(1, client.getKey());
                    ps.setString(2, client.getKey());
                    ps.setArray(3, ps.getConnection().createArrayOf("text", client.getValue().toArray()));
                    ps.setLong(4, retention.toMillis());
                    if (op == Operation.CHARGE) {
                        ps.setString(5, client.getKey()); // {keep}: the client's refunds of the charge
                    }
                });
            } catch (DatabaseRefusedException e) {
                // A refund claimed on one of these charges while the statement ran: its re-check reads the refunds
                // with the statement's snapshot, so the refunds' foreign key is what keeps the charge (the whole
                // statement is refused). The next pass's candidates leave that charge out; the other clients go on.
                LOG.warnf("retention: %d candidate(s) of a client kept for now: %s", client.getValue().size(), e.getMessage());
            }
        }
        return deleted;
    }

    /**
     * The key-hash versions rows of either table have now ({@link KeyIdentities}): one indexed look for version 0
     * (identities before {@code g}), then one per keyed version found (the first identity from {@code k<n>} on, the
     * next from {@code k<n+1>}), on the unique index. A table that does not exist yet (a new database, before its
     * first migration) has none.
     */
    public java.util.SortedSet<Integer> identityVersionsInUse() {
        try (Connection c = primary.getConnection()) {
            return identityVersionsInUse(c);
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Whether the schema forbids keeping keys (V1.14.0): version 0, which keeps them, cannot be written here. */
    public boolean keysForbidden() {
        boolean[] forbidden = {false};
        Jdbc.run(primary, "SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'stripe_intents_key_kept_only_for_commands')",
                ps -> { }, rs -> forbidden[0] = rs.next() && rs.getBoolean(1));
        return forbidden[0];
    }

    // Start-up reads over every client (KeyVersionsCheck), on the unique index.
    private static final Map<Operation, String> ANY_UNKEYED_IDENTITY = byOperation(op ->
            "SELECT EXISTS (SELECT 1 FROM " + op.table() + " WHERE stripe_identity < 'g')");
    private static final Map<Operation, String> FIRST_IDENTITY_FROM = byOperation(op ->
            "SELECT stripe_identity FROM " + op.table() + " WHERE stripe_identity >= ? ORDER BY stripe_identity LIMIT 1");

    static java.util.SortedSet<Integer> identityVersionsInUse(Connection c) throws SQLException {
        java.util.SortedSet<Integer> versions = new java.util.TreeSet<>();
        java.util.regex.Pattern keyed = java.util.regex.Pattern.compile("^k(\\d{3})-");
        for (Operation op : Operation.values()) {
            try (PreparedStatement exists = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
                exists.setString(1, op.table());
                try (ResultSet rs = exists.executeQuery()) {
                    if (!rs.next() || !rs.getBoolean(1)) {
                        continue;
                    }
                }
            }
            try (PreparedStatement unkeyed = c.prepareStatement(ANY_UNKEYED_IDENTITY.get(op));
                 ResultSet rs = unkeyed.executeQuery()) {
                if (rs.next() && rs.getBoolean(1)) {
                    versions.add(KeyIdentities.UNKEYED);
                }
            }
            try (PreparedStatement first = c.prepareStatement(FIRST_IDENTITY_FROM.get(op))) {
                String from = "k";
                while (true) {
                    first.setString(1, from);
                    String found;
                    try (ResultSet rs = first.executeQuery()) {
                        found = rs.next() ? rs.getString(1) : null;
                    }
                    java.util.regex.Matcher m = found == null ? null : keyed.matcher(found);
                    if (m == null || !m.find()) {
                        break;
                    }
                    int version = Integer.parseInt(m.group(1));
                    versions.add(version);
                    if (version >= KeyIdentities.MAX_VERSION) {
                        break;
                    }
                    from = "k" + String.format("%03d", version + 1);
                }
            }
        }
        return versions;
    }
}

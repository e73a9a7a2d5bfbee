package dev.chargeonce.idempotency;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * What a client reads: its charges and refunds for the read endpoints (one by id, the newest, a page by cursor), and
 * what its key holds for the key status endpoint. Reads only, each one statement; a read by id or by the client's
 * index. The charges and refunds are read from the data source the caller names (the primary, or a replica that is
 * recent enough: {@code dev.chargeonce.charge.ChargeQueries}); the key's status from the primary, by the key's
 * identity, as a retry's claim reads it. A replay itself is the claim's read ({@link Claims#claim}).
 */
@ApplicationScoped
public class Reads {

    /**
     * A charge's columns for the read endpoints, with what its refunds gave back (two indexed sums: its refunds, and
     * those made outside the service, in Stripe's Dashboard). Its first two parameters are the client of the charge's
     * refunds and of its outside refunds: the same as the charge's, bound so that on Citus the sums read the charge's
     * own shard ({@link #bindRefundClients}).
     */
    static final String CHARGE_COLUMNS =
            "id, status, charge_status, amount, currency, payment_intent_id, request, response_status, created_at, "
            + "(SELECT coalesce(sum(r.amount), 0) FROM stripe_refunds r WHERE r.charge_id = stripe_intents.id "
            + "AND r.client_id = ? AND r.refund_status = 'succeeded') "
            + "+ " + Held.OUTSIDE_SUM + " AS amount_refunded";

    /** The outside refunds' sum of {@link #CHARGE_COLUMNS}, and what stands for it while the schema is held. */
    private static final class Held {
        static final String OUTSIDE_SUM = "(SELECT coalesce(sum(o.amount), 0) FROM outside_refunds o WHERE "
                + "o.charge_id = stripe_intents.id AND o.client_id = ? AND o.status = 'succeeded')";
        static final String OUTSIDE_SUM_HELD = "(SELECT 0 WHERE ?::text IS NOT NULL)";
    }

    /**
     * A statement of {@link #CHARGE_COLUMNS} as this instance runs it: without the outside refunds while it holds the
     * schema at V1.13.0 ({@link KeyIdentities#schemaHeldBeforeKeysErased}: their table may not exist yet), with the
     * same parameters.
     */
    static String chargeColumnsIn(String statement, KeyIdentities identities) {
        return identities.schemaHeldBeforeKeysErased() ? statement.replace(Held.OUTSIDE_SUM, Held.OUTSIDE_SUM_HELD) : statement;
    }

    /** The clients of {@link #CHARGE_COLUMNS}' sums, its first parameters; returns the next parameter's index. */
    static int bindRefundClients(java.sql.PreparedStatement ps, String clientId) throws SQLException {
        ps.setString(1, clientId);
        ps.setString(2, clientId);
        return 3;
    }

    /**
     * A refund's columns for the read endpoints. Refunds Stripe refused without making one (a stored 400) are not
     * refunds and are not shown.
     */
    private static final String REFUND_COLUMNS = "id, charge_id, status, refund_status, stripe_refund_id, request, created_at";
    private static final String SHOWN_REFUNDS = "NOT (status = 'failed' AND stripe_refund_id IS NULL)";

    private static final String FIND_CHARGE = "SELECT " + CHARGE_COLUMNS + " FROM stripe_intents WHERE id = ? AND client_id = ?";
    private static final String NEWEST_CHARGES = "SELECT " + CHARGE_COLUMNS
            + " FROM stripe_intents WHERE client_id = ? ORDER BY created_at DESC, id DESC LIMIT ?";
    /** A page of charges: what follows {@code WHERE client_id = ?} is ANDed to it (listCharges), never ORed. */
    private static final String CHARGE_PAGE = "SELECT " + CHARGE_COLUMNS + " FROM stripe_intents WHERE client_id = ?";
    private static final String CHARGES_CREATED_AFTER = "SELECT " + CHARGE_COLUMNS
            + " FROM stripe_intents WHERE client_id = ? AND created_at > ? ORDER BY created_at DESC, id DESC LIMIT ?";

    private final AgroalDataSource primary;
    private final KeyIdentities identities;

    Reads(@Default AgroalDataSource primary, KeyIdentities identities) {
        this.primary = primary;
        this.identities = identities;
    }

    /** The data source of the idempotency path, for callers that read charges from the primary. */
    public AgroalDataSource primary() {
        return primary;
    }

    /** One of the client's charges, by id; another client's id is not found. */
    public Optional<ChargeRecord> findCharge(AgroalDataSource source, String clientId, String chargeId) {
        return Jdbc.first(source, chargeColumnsIn(FIND_CHARGE, identities), ps -> {
            int next = bindRefundClients(ps, clientId);
            ps.setString(next, chargeId);
            ps.setString(next + 1, clientId);
        }, Reads::chargeRecord);
    }

    /** The client's newest charges. */
    public List<ChargeRecord> listCharges(AgroalDataSource source, String clientId, int limit) {
        return Jdbc.all(source, chargeColumnsIn(NEWEST_CHARGES, identities), ps -> {
            int next = bindRefundClients(ps, clientId);
            ps.setString(next, clientId);
            ps.setInt(next + 1, limit);
        }, Reads::chargeRecord);
    }

    /** The state a charge shows (as GET does), in SQL: Stripe's once known, else by the key's answer. */
    private static final String SHOWN_CHARGE_STATUS = "coalesce(charge_status, CASE status WHEN 'completed' THEN 'succeeded' "
            + "WHEN 'failed' THEN 'failed' ELSE 'processing' END)";

    /**
     * A page of the client's charges (cursors, creation bounds, status), newest first, at most {@code limit + 1}
     * rows (the one more says whether there is more). Rides on the client's (client_id, created_at, id) index.
     */
    public List<ChargeRecord> listCharges(AgroalDataSource source, String clientId, ChargePage page) {
        StringBuilder where = new StringBuilder();
        List<Object> args = new ArrayList<>();
        args.add(clientId); // the refunds' client (CHARGE_COLUMNS)
        args.add(clientId); // the outside refunds' client (CHARGE_COLUMNS)
        args.add(clientId);
        if (page.startingAfter() != null) {
            where.append(" AND (created_at, id) < (?, ?)");
            args.add(OffsetDateTime.ofInstant(page.startingAfter().created(), ZoneOffset.UTC));
            args.add(page.startingAfter().id());
        }
        if (page.endingBefore() != null) {
            where.append(" AND (created_at, id) > (?, ?)");
            args.add(OffsetDateTime.ofInstant(page.endingBefore().created(), ZoneOffset.UTC));
            args.add(page.endingBefore().id());
        }
        if (page.createdGte() != null) {
            where.append(" AND created_at >= ?");
            args.add(OffsetDateTime.ofInstant(page.createdGte(), ZoneOffset.UTC));
        }
        if (page.createdLte() != null) {
            where.append(" AND created_at < ?");
            args.add(OffsetDateTime.ofInstant(page.createdLte().plusSeconds(1), ZoneOffset.UTC)); // the whole second
        }
        if (page.status() != null) {
            where.append(" AND ").append(SHOWN_CHARGE_STATUS).append(" = ?");
            args.add(page.status());
        }
        // Before a cursor means the nearest newer ones: read upwards, then turn the page around.
        boolean upwards = page.endingBefore() != null;
        String sql = chargeColumnsIn(CHARGE_PAGE, identities) + where
                + (upwards ? " ORDER BY created_at ASC, id ASC" : " ORDER BY created_at DESC, id DESC") + " LIMIT ?";
        args.add(page.limit() + 1);
        List<ChargeRecord> found = Jdbc.all(source, sql, ps -> {
            for (int i = 0; i < args.size(); i++) {
                ps.setObject(i + 1, args.get(i));
            }
        }, Reads::chargeRecord);
        if (upwards) {
            Collections.reverse(found); // newest first; the row past the page (if any) is now the first
        }
        return found;
    }

    /**
     * The client's newest charges created after {@code after}, newest first: what a lagging replica may not have
     * yet (see {@code dev.chargeonce.charge.ChargeQueries#list}). Bounded by the client's index, so it reads only
     * the recent rows.
     */
    public List<ChargeRecord> listChargesCreatedAfter(AgroalDataSource source, String clientId, Instant after, int limit) {
        return Jdbc.all(source, chargeColumnsIn(CHARGES_CREATED_AFTER, identities), ps -> {
            int next = bindRefundClients(ps, clientId);
            ps.setString(next, clientId);
            ps.setObject(next + 1, OffsetDateTime.ofInstant(after, ZoneOffset.UTC));
            ps.setInt(next + 2, limit);
        }, Reads::chargeRecord);
    }

    private static final String FIND_REFUND = "SELECT " + REFUND_COLUMNS
            + " FROM stripe_refunds WHERE id = ? AND client_id = ? AND " + SHOWN_REFUNDS;
    private static final String NEWEST_REFUNDS = "SELECT " + REFUND_COLUMNS + " FROM stripe_refunds WHERE charge_id = ?"
            + " AND client_id = ? AND " + SHOWN_REFUNDS + " ORDER BY created_at DESC, id DESC LIMIT ?";

    /** One of the client's refunds, by id; another client's is not found. */
    public Optional<RefundRecord> findRefund(AgroalDataSource source, String clientId, String refundId) {
        return Jdbc.first(source, FIND_REFUND, ps -> {
            ps.setString(1, refundId);
            ps.setString(2, clientId);
        }, Reads::refundRecord);
    }

    /** A charge's refunds, newest first (at most {@code limit}). */
    public List<RefundRecord> listRefunds(AgroalDataSource source, String clientId, String chargeId, int limit) {
        return Jdbc.all(source, NEWEST_REFUNDS, ps -> {
            ps.setString(1, chargeId);
            ps.setString(2, clientId);
            ps.setInt(3, limit);
        }, Reads::refundRecord);
    }

    private static RefundRecord refundRecord(ResultSet rs) throws SQLException {
        return new RefundRecord(rs.getString("id"), rs.getString("charge_id"), IntentStatus.fromColumn(rs.getString("status")),
                rs.getString("refund_status"), rs.getString("stripe_refund_id"), rs.getString("request"),
                rs.getTimestamp("created_at").toInstant());
    }

    static ChargeRecord chargeRecord(ResultSet rs) throws SQLException {
        int responseStatus = rs.getInt("response_status");
        return new ChargeRecord(rs.getString("id"), IntentStatus.fromColumn(rs.getString("status")),
                ChargeStatus.fromColumn(rs.getString("charge_status")), rs.getLong("amount"),
                rs.getString("currency"), rs.getString("payment_intent_id"), rs.getString("request"),
                rs.wasNull() ? null : responseStatus, rs.getTimestamp("created_at").toInstant(), rs.getLong("amount_refunded"));
    }

    /** What a client's key holds now, for the key status endpoint: its row, read by the unique index. */
    public record KeyStatus(String rowId, IntentStatus status, boolean parked, Instant firstSeen, Instant finishedAt,
                            long leaseLeftMillis, int stripeAttempt) {
    }

    public Optional<KeyStatus> keyStatus(Operation op, String clientId, IdempotencyKey key, Duration keyHorizon) {
        List<String> lookup = identities.lookup(op, clientId, key);
        return Jdbc.onConnection(primary, c -> Row.ofKey(c, op, clientId, lookup, keyHorizon)).map(row -> new KeyStatus(
                row.id(), row.status(), row.needsReconciliation(), row.createdAt().toInstant(),
                row.finishedAt() == null ? null : row.finishedAt().toInstant(), row.leaseLeftMillis(), row.stripeAttempt()));
    }
}

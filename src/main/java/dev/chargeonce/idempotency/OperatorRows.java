package dev.chargeonce.idempotency;

import static dev.chargeonce.idempotency.StatementCatalog.bindRelease;
import static dev.chargeonce.idempotency.StatementCatalog.byOperation;
import static dev.chargeonce.idempotency.StatementCatalog.sql;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Reconciliation's and the operators' rows: reads without a lease (a row by id, the rows that need an operator, the
 * rows of some Stripe objects, the rows finished in a window), which decide nothing, and the operators' actions on a
 * processing row, fenced like a driver's writes: each carries the lease generation the operator saw and moves it on
 * (a driver that still held the row is fenced out, and an operator who saw an older generation changes nothing).
 * "Nothing was made" is written only once no try of the key can still reach Stripe ({@link #abandonByOperator}).
 * What an operator sees and does is audited by {@code dev.chargeonce.reconcile}, which holds no SQL on these tables.
 */
@ApplicationScoped
public class OperatorRows {

    private final AgroalDataSource primary;
    private final IdempotencyConfig config;

    OperatorRows(@Default AgroalDataSource primary, IdempotencyConfig config) {
        this.primary = primary;
        this.config = config;
    }

    /** The columns of a {@link RowView}, for either table (a charge has no charge_id, a refund no reservation). */
    private static String viewColumns(Operation op) {
        return "id, client_id, status, " + op.stateColumn() + " AS state, " + op.objectIdColumn() + " AS object_id, stripe_identity, "
                + "amount, currency, lease_gen, stripe_attempt, needs_reconciliation, reconciliation_reason, last_stripe_error, "
                + "response_status, created_at, updated_at, finished_at, stripe_key_first_sent, stripe_key_last_sent, lease_until, "
                + (op == Operation.REFUND ? "charge_id, 0::bigint AS amount_reserved" : "NULL::text AS charge_id, amount_reserved");
    }

    private static RowView view(Operation op, ResultSet rs) throws SQLException {
        int responseStatus = rs.getInt("response_status");
        Integer response = rs.wasNull() ? null : responseStatus;
        return new RowView(op, rs.getString("id"), rs.getString("client_id"), IntentStatus.fromColumn(rs.getString("status")),
                rs.getString("state"), rs.getString("object_id"), rs.getString("stripe_identity"), rs.getLong("amount"),
                rs.getString("currency"), rs.getInt("lease_gen"), rs.getInt("stripe_attempt"), rs.getBoolean("needs_reconciliation"),
                rs.getString("reconciliation_reason"), rs.getString("last_stripe_error"), response, instant(rs, "created_at"),
                instant(rs, "updated_at"), instant(rs, "finished_at"), instant(rs, "stripe_key_first_sent"),
                instant(rs, "stripe_key_last_sent"), instant(rs, "lease_until"), rs.getString("charge_id"), rs.getLong("amount_reserved"));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    // Reconciliation's and the console's reads over every client (reads that decide nothing: on Citus, each runs on
    // every shard), and those of one client's rows.
    private static final Map<Operation, String> VIEW_BY_ID = byOperation(op ->
            "SELECT " + viewColumns(op) + " FROM " + op.table() + " WHERE id = ?");
    private static final Map<Operation, String> ATTENTION_ROWS = byOperation(op ->
            "SELECT " + viewColumns(op) + " FROM " + op.table() + " WHERE status = 'processing' AND (needs_reconciliation"
            + " OR created_at < statement_timestamp() - ? * interval '1 millisecond') ORDER BY created_at LIMIT ?");
    private static final Map<Operation, String> VIEWS_OF = byOperation(op ->
            "SELECT " + viewColumns(op) + " FROM " + op.table() + " WHERE " + op.objectIdColumn() + " = ANY (?) OR stripe_identity = ANY (?)");
    private static final Map<Operation, String> FINISHED_BETWEEN = byOperation(op ->
            "SELECT " + viewColumns(op) + " FROM " + op.table() + " WHERE status <> 'processing' AND finished_at >= ?"
            + " AND finished_at < ? AND (finished_at, id) > (?, ?) ORDER BY finished_at, id LIMIT ?");
    private static final String REFUNDS_OF_CHARGE = "SELECT " + viewColumns(Operation.REFUND)
            + " FROM stripe_refunds WHERE charge_id = ? AND client_id = ? ORDER BY created_at";

    // The operators' search (dev.chargeonce.reconcile.PaymentSearch): besides a row by id (VIEW_BY_ID) and by Stripe
    // object or key identity (VIEWS_OF), the charges that name a Stripe customer (over every client, through the
    // partial index of V1.17.1: only rows whose request names a customer are in it, so a charge without one costs
    // no JSON parse), and a client's latest charges (one client: one shard).
    private static final String CHARGES_OF_CUSTOMER = "SELECT " + viewColumns(Operation.CHARGE) + " FROM stripe_intents"
            + " WHERE request LIKE '%\"customer\":%' AND (request::jsonb ->> 'customer') = ? ORDER BY created_at DESC LIMIT ?";
    private static final String LATEST_CHARGES_OF_CLIENT = "SELECT " + viewColumns(Operation.CHARGE) + " FROM stripe_intents"
            + " WHERE client_id = ? ORDER BY created_at DESC, id DESC LIMIT ?";

    /** The search's own statements, by name: for the test that holds each to an index. */
    static Map<String, String> searchStatements() {
        return Map.of("CHARGES_OF_CUSTOMER", CHARGES_OF_CUSTOMER, "LATEST_CHARGES_OF_CLIENT", LATEST_CHARGES_OF_CLIENT,
                "VIEW_BY_ID.CHARGE", VIEW_BY_ID.get(Operation.CHARGE), "VIEW_BY_ID.REFUND", VIEW_BY_ID.get(Operation.REFUND),
                "VIEWS_OF.CHARGE", VIEWS_OF.get(Operation.CHARGE), "VIEWS_OF.REFUND", VIEWS_OF.get(Operation.REFUND),
                "REFUNDS_OF_CHARGE", REFUNDS_OF_CHARGE);
    }

    private List<RowView> views(Operation op, String sql, Jdbc.Binder binder) {
        return Jdbc.all(primary, sql, binder, rs -> view(op, rs));
    }

    /** One row, by id, as it is now (any client's: an operator's look; the row names its client). */
    public Optional<RowView> view(Operation op, String id) {
        return views(op, VIEW_BY_ID.get(op), ps -> ps.setString(1, id)).stream().findFirst();
    }

    /**
     * Rows an operator should look at: parked for reconciliation, or processing since longer than
     * {@code overdueAfter} (however often re-driven), oldest first.
     */
    public List<RowView> attentionRows(Operation op, Duration overdueAfter, int limit) {
        return views(op, ATTENTION_ROWS.get(op), ps -> {
            ps.setLong(1, overdueAfter.toMillis());
            ps.setInt(2, limit);
        });
    }

    /** The rows that name one of these Stripe objects, or carry one of these identities (every attempt's). */
    public List<RowView> viewsOf(Operation op, java.util.Collection<String> objectIds, java.util.Collection<String> identities) {
        if (objectIds.isEmpty() && identities.isEmpty()) {
            return List.of();
        }
        return views(op, VIEWS_OF.get(op), ps -> {
            ps.setArray(1, ps.getConnection().createArrayOf("text", objectIds.toArray()));
            ps.setArray(2, ps.getConnection().createArrayOf("text", identities.toArray()));
        });
    }

    /**
     * Answered rows finished in {@code [from, to)}, after the cursor ({@code (finished_at, id)}; null: from the
     * start), in that order: what reconciliation holds against Stripe's records, page by page.
     */
    public List<RowView> finishedBetween(Operation op, Instant from, Instant to, Instant afterFinished, String afterId, int limit) {
        return views(op, FINISHED_BETWEEN.get(op), ps -> {
            ps.setTimestamp(1, Timestamp.from(from));
            ps.setTimestamp(2, Timestamp.from(to));
            ps.setTimestamp(3, Timestamp.from(afterFinished == null ? Instant.EPOCH : afterFinished));
            ps.setString(4, afterId == null ? "" : afterId);
            ps.setInt(5, limit);
        });
    }

    /** The latest charges that name this Stripe customer, newest first (any client's: an operator's look). */
    public List<RowView> chargesOfCustomer(String customerId, int limit) {
        return views(Operation.CHARGE, CHARGES_OF_CUSTOMER, ps -> {
            ps.setString(1, customerId);
            ps.setInt(2, limit);
        });
    }

    /** A client's latest charges, newest first. */
    public List<RowView> latestChargesOf(String clientId, int limit) {
        return views(Operation.CHARGE, LATEST_CHARGES_OF_CLIENT, ps -> {
            ps.setString(1, clientId);
            ps.setInt(2, limit);
        });
    }

    /** A charge's refunds, every state (the charge's client's). */
    public List<RowView> refundsOf(String clientId, String chargeId) {
        return views(Operation.REFUND, REFUNDS_OF_CHARGE, ps -> {
            ps.setString(1, chargeId);
            ps.setString(2, clientId);
        });
    }

    private static final Map<Operation, String> INSPECT = byOperation(op -> "SELECT false AS fresh, "
            + StatementCatalog.readColumns(op) + " FROM " + op.table()
            + " x WHERE x.id = ? AND x.client_id = ? AND x.status = 'processing'");

    /**
     * A processing row as a holder would see it, without taking its lease: what an operator's action needs to ask
     * Stripe about it (its identity, its window, its request). Empty when it is not processing.
     */
    public Optional<ClaimedIntent> inspect(Operation op, String id, String clientId, Duration keyHorizon) {
        long acquired = System.nanoTime();
        return Jdbc.first(primary, INSPECT.get(op), ps -> {
            ps.setLong(1, keyHorizon.toMillis());
            ps.setString(2, id);
            ps.setString(3, clientId);
        }, rs -> Row.read(rs, acquired)).map(row -> row.intent(op));
    }

    /**
     * An operator ends a processing row (parked or not) with the answer Stripe's object proves: fenced by the
     * generation the operator saw, which it moves on (a driver that still held the row is fenced out), and the
     * row leaves reconciliation. A refund that refunded nothing gives its amount back in the same statement.
     */
    public boolean finishByOperator(Operation op, String id, String clientId, int seenLeaseGeneration, Finishes.Final answer) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql(op).finishByOperator())) {
            int next = answer.bind(ps, 1);
            ps.setString(next, id);
            ps.setString(next + 1, clientId);
            ps.setInt(next + 2, seenLeaseGeneration);
            bindRelease(ps, next + 3, op, clientId);
            return Jdbc.countOf(ps) == 1;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /**
     * {@link #finishByOperator} with "nothing was made" ({@code answer}), refused (false) while a try of the key may
     * still reach Stripe: unless {@code requestMaxDuration} has passed since the latest it may have been sent, and the
     * lease and that duration since the row was created.
     */
    public boolean abandonByOperator(Operation op, String id, String clientId, int seenLeaseGeneration, Finishes.Final answer,
                                     Duration requestMaxDuration) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql(op).abandonByOperator())) {
            int next = answer.bind(ps, 1);
            ps.setString(next, id);
            ps.setString(next + 1, clientId);
            ps.setInt(next + 2, seenLeaseGeneration);
            ps.setLong(next + 3, requestMaxDuration.toMillis());
            ps.setLong(next + 4, config.lease().plus(requestMaxDuration).toMillis());
            bindRelease(ps, next + 5, op, clientId);
            return Jdbc.countOf(ps) == 1;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /**
     * When no try of a processing row's key can still reach Stripe, by the database's clock (the latest it may have
     * been sent, its last report or its holder's send bound, plus {@code requestMaxDuration}; at the earliest the
     * lease and that duration after the row was created), and that clock now;
     * empty when the row is not processing.
     */
    public Optional<KeySettling> keySettling(Operation op, String id, String clientId, Duration requestMaxDuration) {
        return Jdbc.first(primary, KEY_SETTLING.get(op), ps -> {
            ps.setLong(1, requestMaxDuration.toMillis());
            ps.setLong(2, config.lease().plus(requestMaxDuration).toMillis());
            ps.setString(3, id);
            ps.setString(4, clientId);
        }, rs -> {
            Timestamp settles = rs.getTimestamp(1);
            return new KeySettling(settles == null ? Instant.MIN : settles.toInstant(), rs.getTimestamp(2).toInstant());
        });
    }

    private static final Map<Operation, String> KEY_SETTLING = byOperation(op ->
            "SELECT greatest(coalesce(greatest(stripe_key_last_sent, stripe_sending_until), '-infinity') + ? * interval '1 millisecond',"
            + " created_at + ? * interval '1 millisecond'), statement_timestamp() FROM " + op.table()
            + " WHERE id = ? AND client_id = ? AND status = 'processing'");

    /** When no try of a key can still reach Stripe, and the database's clock when that was read. */
    public record KeySettling(Instant settlesAt, Instant databaseNow) {
        public boolean settled() {
            return !databaseNow.isBefore(settlesAt);
        }
    }

    /**
     * An operator hands a parked (or stuck) row back to the drivers: out of reconciliation, its lease expired, so
     * that the next retry or the recovery worker takes it over with a new generation. Nothing is sent by this; a
     * driver re-sends only what the protocol allows (past the key horizon it parks the row again).
     */
    public boolean requeue(Operation op, String id, String clientId, int seenLeaseGeneration) {
        return Jdbc.update(primary, REQUEUE.get(op), ps -> {
            ps.setString(1, id);
            ps.setInt(2, seenLeaseGeneration);
            ps.setString(3, clientId);
        }) == 1;
    }

    private static final Map<Operation, String> REQUEUE = byOperation(op -> "UPDATE " + op.table()
            + " SET needs_reconciliation = false, reconciliation_reason = NULL, lease_gen = lease_gen + 1,"
            + " lease_until = statement_timestamp(), recheck_at = NULL, updated_at = statement_timestamp()"
            + " WHERE id = ? AND lease_gen = ? AND status = 'processing' AND client_id = ?");
}

package dev.chargeonce.idempotency;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A row of {@code stripe_intents} or {@code stripe_refunds} as a claim, a takeover or a read hands it over
 * ({@link StatementCatalog#ROW_COLUMNS}), with what the database's clock says of it; {@link #intent} is what its
 * holder is given.
 */
record Row(boolean fresh, String id, String clientId, String fingerprint, String request, long amount,
           String currency, IntentStatus status, int leaseGeneration, int stripeAttempt,
           String lastStripeError, boolean needsReconciliation, int responseStatus, String responseBody,
           Timestamp createdAt, Timestamp finishedAt, Timestamp stripeKeyFirstSent, Timestamp stripeKeyLastSent, String objectId,
           int pendingChecks, String stripeIdentity, Timestamp databaseNow, boolean beyondHorizon, long leaseLeftMillis, long acquired) {

    /**
     * A row the claim just inserted: what the database chose (lease generation, clocks) from the statement, the
     * rest as inserted. Its lease is whole: the configured lease from when the statement started.
     */
    static Row inserted(ResultSet rs, String id, NewIntent intent, String identity, long acquired) throws SQLException {
        Timestamp created = rs.getTimestamp("created_at");
        return new Row(true, id, intent.clientId(), null, intent.requestJson(), intent.amount(),
                intent.currency(), IntentStatus.PROCESSING, rs.getInt("lease_gen"), 1, null, false, 0, null, created, null,
                rs.getTimestamp("stripe_key_first_sent"), null, null, 0, identity, created, false, Long.MAX_VALUE,
                acquired);
    }

    /**
     * A row a statement just leased to this holder ({@link StatementCatalog#HELD_COLUMNS}): the statement set {@code lease_until}
     * to its clock plus {@code lease}, which gives that clock back, and with it whether the key is past the
     * horizon; the lease is whole from the holder's point of view ({@code acquired}).
     */
    static Row held(ResultSet rs, long acquired, Duration lease, Duration keyHorizon) throws SQLException {
        // the lease as bound (whole milliseconds), not as configured
        Timestamp granted = Timestamp.from(rs.getTimestamp("lease_until").toInstant().minusMillis(lease.toMillis()));
        Timestamp firstSent = rs.getTimestamp("stripe_key_first_sent");
        boolean beyondHorizon = java.time.Duration.between(firstSent.toInstant(), granted.toInstant()).compareTo(keyHorizon) > 0;
        return of(rs, granted, beyondHorizon, Long.MAX_VALUE, acquired);
    }

    static Row read(ResultSet rs, long acquired) throws SQLException {
        return of(rs, rs.getTimestamp("db_now"), rs.getBoolean("beyond_horizon"), rs.getLong("lease_left_ms"), acquired);
    }

    /** {@link StatementCatalog#ROW_COLUMNS} from the result, with what the clock says of the row. */
    private static Row of(ResultSet rs, Timestamp databaseNow, boolean beyondHorizon, long leaseLeftMillis, long acquired)
            throws SQLException {
        return new Row(rs.getBoolean("fresh"), rs.getString("id"), rs.getString("client_id"),
                rs.getString("fingerprint"), rs.getString("request"), rs.getLong("amount"), rs.getString("currency"),
                IntentStatus.fromColumn(rs.getString("status")), rs.getInt("lease_gen"), rs.getInt("stripe_attempt"),
                rs.getString("last_stripe_error"), rs.getBoolean("needs_reconciliation"),
                rs.getInt("response_status"), rs.getString("response_body"), rs.getTimestamp("created_at"),
                rs.getTimestamp("finished_at"), rs.getTimestamp("stripe_key_first_sent"), rs.getTimestamp("stripe_key_last_sent"),
                rs.getString("object_id"), rs.getInt("pending_checks"), rs.getString("stripe_identity"), databaseNow,
                beyondHorizon, leaseLeftMillis, acquired);
    }

    ClaimedIntent intent(Operation op) {
        return new ClaimedIntent(op, id, clientId, request, amount, currency, leaseGeneration,
                acquired, stripeAttempt, lastStripeError, beyondHorizon, createdAt.toInstant(), stripeKeyFirstSent.toInstant(),
                stripeKeyLastSent == null ? null : stripeKeyLastSent.toInstant(), objectId, pendingChecks,
                databaseNow.toInstant(), stripeIdentity);
    }

    /**
     * The key's row, read by the unique index under every identity it may have ({@link KeyIdentities}: one identity
     * as itself, the statement of the hot path; several as one array, its dual-read form).
     */
    static Optional<Row> ofKey(Connection c, Operation op, String clientId, List<String> lookup, Duration keyHorizon)
            throws SQLException {
        long acquired = System.nanoTime();
        try (PreparedStatement ps = c.prepareStatement(lookup.size() == 1
                ? StatementCatalog.sql(op).peek() : StatementCatalog.peekAny(op))) {
            ps.setLong(1, keyHorizon.toMillis());
            if (lookup.size() == 1) {
                ps.setString(2, lookup.get(0));
            } else {
                ps.setArray(2, c.createArrayOf("text", lookup.toArray()));
            }
            ps.setString(3, clientId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(read(rs, acquired)) : Optional.empty();
            }
        }
    }
}

package dev.chargeonce.idempotency;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;

/**
 * The charges a Kafka command waits on: a command whose key already has a row makes that row publish its result
 * ({@link #adoptForResults}), and a charge answered {@code 202} has each later state queued
 * ({@link #queueLaterState}). Every statement that finishes a charge queues the result of a row a command claimed
 * in the same statement ({@link ResultOutbox#QUEUE_FINISHED}, in {@link StatementCatalog}), so a result is queued in
 * the transaction that stores the answer, or not at all.
 */
@ApplicationScoped
public class CommandResults {

    private final AgroalDataSource primary;
    private final KeyIdentities identities;

    CommandResults(@Default AgroalDataSource primary, KeyIdentities identities) {
        this.primary = primary;
        this.identities = identities;
    }

    /**
     * A Kafka command met a charge that already had a row (a redelivery, the producer sent the event twice, or the
     * key was first claimed over HTTP): the row is made to publish its result too. A row without an origin takes
     * the command's (so that whoever finishes it queues the result), and one already answered has its answer queued
     * now, in this statement (the row is locked first, so a finish running meanwhile is either seen or sees the
     * origin). A row that has an origin is only read: its finish queues, or queued, the result.
     *
     * <p>A row answered {@code 202} whose state moved before the command met it had nobody to tell then: its state
     * now is queued too, in the same transaction ({@code render}: the charge as {@code GET /v1/charges/{id}} shows
     * it), as the state it moves to later will be (the row is locked: a move waits, then sees the origin).
     *
     * @return the row's origin before this statement (null: an HTTP claim) and whether it is still processing; empty
     *         when the key has no row
     */
    public Optional<KeyOrigin> adoptForResults(String clientId, IdempotencyKey key, String origin,
                                               java.util.function.Function<ChargeRecord, String> render) {
        return Transactions.inTransaction(primary, tx -> {
            KeyOrigin found = null;
            try (PreparedStatement ps = tx.prepareStatement(ADOPT_FOR_RESULTS)) {
                ps.setArray(1, tx.createArrayOf("text", identities.lookup(Operation.CHARGE, clientId, key).toArray()));
                ps.setString(2, clientId);
                // An HTTP row has no key stored; a command's row keeps its event id: the key of its result records.
                ps.setString(3, origin);
                ps.setString(4, key.value());
                ps.setString(5, clientId);
                ps.setString(6, key.value());
                ps.setString(7, origin);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        found = new KeyOrigin(rs.getString("id"), rs.getString("origin"),
                                IntentStatus.fromColumn(rs.getString("status")) == IntentStatus.PROCESSING);
                    }
                }
            }
            if (found != null && found.origin() == null && !found.processing()) {
                queueLaterState(tx, found.id(), clientId, render); // only a 202 with a known state queues anything
            }
            return Optional.ofNullable(found);
        });
    }

    /** @param origin the row's origin before the command met it (null: claimed over HTTP) */
    public record KeyOrigin(String id, String origin, boolean processing) {
    }

    private static final String ADOPT_FOR_RESULTS = """
            WITH before AS (
                SELECT id, client_id, idempotency_key, origin, status, response_status, response_body
                  FROM stripe_intents WHERE stripe_identity = ANY (?) AND client_id = ?
                 ORDER BY created_at LIMIT 1
                   FOR UPDATE),
            adopted AS (
                UPDATE stripe_intents x SET origin = ?, idempotency_key = ?, updated_at = statement_timestamp()
                  FROM before b WHERE x.id = b.id AND x.client_id = ? AND b.origin IS NULL
                RETURNING x.id),
            done AS (
                SELECT id, client_id, ?::text AS idempotency_key, ?::text AS origin, response_status, response_body
                  FROM before WHERE origin IS NULL AND status <> 'processing')
            %s
            SELECT id, origin, status FROM before
            """.formatted(ResultOutbox.QUEUE_FINISHED);

    /**
     * Queues the later state of a charge answered {@code 202} that a Kafka command claimed, in the caller's
     * transaction (the one that stored the state): status 200 and {@code render}'s body, once per state
     * ({@code charge:<id>:<state>}). Nothing for a charge claimed over HTTP or answered otherwise.
     *
     * @return whether a result was queued
     */
    public boolean queueLaterState(Connection tx, String chargeId, String clientId,
                                   java.util.function.Function<ChargeRecord, String> render) throws SQLException {
        ChargeRecord record = null;
        try (PreparedStatement ps = tx.prepareStatement(Reads.chargeColumnsIn(AWAITED_LATER_STATE, identities))) {
            int next = Reads.bindRefundClients(ps, clientId);
            ps.setString(next, chargeId);
            ps.setString(next + 1, clientId);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    record = Reads.chargeRecord(rs);
                }
            }
        }
        if (record == null) {
            return false;
        }
        try (PreparedStatement ps = tx.prepareStatement(ResultOutbox.QUEUE_LATER_STATE)) {
            ps.setString(1, render.apply(record));
            ps.setString(2, chargeId);
            ps.setString(3, clientId);
            return ps.executeUpdate() == 1;
        }
    }

    /** A charge a Kafka command waits on whose answer was a 202, with its Stripe state known. */
    private static final String AWAITED_LATER_STATE = "SELECT " + Reads.CHARGE_COLUMNS
            + " FROM stripe_intents WHERE id = ? AND client_id = ? AND origin IS NOT NULL AND response_status = 202"
            + " AND charge_status IS NOT NULL";
}

package dev.chargeonce.idempotency;

import static dev.chargeonce.idempotency.StatementCatalog.bindRelease;
import static dev.chargeonce.idempotency.StatementCatalog.sql;

import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * A row's answer and what Stripe says after it: the holder's fenced finish ({@link #finish}), what a holder that
 * lost its lease finds ({@link #stateOf}), and, inside the caller's transaction, what an event or the sync worker
 * writes: a row still processing finished from Stripe's word (with a new lease generation, which fences out its
 * holder), an answered row's Stripe state moved forward only (a higher rank, never out of a final state), and the
 * sync worker's looks at accepted rows. A finished row is final: no statement here changes its status or its stored
 * answer again, which is what every retry replays. A charge a Kafka command waits on queues its result in the very
 * statement that finishes it; a refund that ends without refunding gives its reservation back in it.
 *
 * <p>Created at start-up, so that the finish's meter exists from the start.
 */
@Startup
@ApplicationScoped
public class Finishes {

    private final AgroalDataSource primary;
    private final Timer finishLatency;

    Finishes(@Default AgroalDataSource primary, MeterRegistry metrics) {
        this.primary = primary;
        this.finishLatency = Timer.builder("chargeonce.db.statement").tag("statement", "finish")
                .publishPercentileHistogram().register(metrics);
    }

    /**
     * Stores the final answer. Returns false when the lease was lost (taken over, or already finished): then
     * nothing was written and the caller must answer what the row holds, see {@link #answerOf}.
     */
    public boolean finish(ClaimedIntent holder, IntentStatus status, StoredAnswer answer, String paymentIntentId) {
        return finish(holder, new Final(status, answer, paymentIntentId, status == IntentStatus.COMPLETED
                ? "succeeded" : paymentIntentId != null ? "failed" : null, null));
    }

    /** {@link #finish(ClaimedIntent, IntentStatus, StoredAnswer, String)} with the charge's state at Stripe. */
    public boolean finish(ClaimedIntent holder, Final answer) {
        StatementCatalog.Sql sql = sql(holder.operation());
        Jdbc.Binder binder = ps -> {
            int next = answer.bind(ps, 1);
            ps.setString(next, holder.id());
            ps.setInt(next + 1, holder.leaseGeneration());
            ps.setString(next + 2, holder.clientId());
            bindRelease(ps, next + 3, holder.operation(), holder.clientId());
        };
        // A charge: first the plain UPDATE, which matches unless a Kafka command waits for the row's result (or the
        // lease was lost); only then the statement that also queues the result (and matches nothing either when the
        // lease was lost).
        return finishLatency.record(() -> (sql.finishUnqueued() != null
                && Jdbc.update(primary, sql.finishUnqueued(), binder) == 1)
                || Jdbc.count(primary, sql.finish(), binder) == 1);
    }

    /**
     * A key's final answer and what follows it.
     *
     * @param objectId     the Stripe object the operation made (PaymentIntent, refund), when Stripe named one
     * @param state        that object's state at Stripe (null when there is none)
     * @param recheckAfter for an accepted operation, when the sync worker first looks at its Stripe object
     */
    public record Final(IntentStatus status, StoredAnswer answer, String objectId, String state,
                        java.time.Duration recheckAfter) {
        public Final {
            if (status == IntentStatus.PROCESSING) {
                throw new IllegalArgumentException("finish needs a final status");
            }
        }

        int bind(PreparedStatement ps, int from) throws SQLException {
            ps.setString(from, status.column());
            ps.setInt(from + 1, answer.status());
            ps.setString(from + 2, answer.body());
            ps.setString(from + 3, objectId);
            ps.setString(from + 4, state);
            ps.setObject(from + 5, recheckAfter == null ? null : recheckAfter.toMillis(), java.sql.Types.BIGINT);
            return from + 6;
        }
    }

    /** What the row holds now: its final answer, or empty while it is still processing. */
    public Optional<StoredAnswer> answerOf(Operation op, String clientId, String intentId) {
        return stateOf(op, clientId, intentId).answer();
    }

    /** What a holder that lost its lease finds: the final answer, or that the row is parked, or still processing. */
    public RowState stateOf(Operation op, String clientId, String intentId) {
        return Jdbc.first(primary, sql(op).answerOf(), ps -> {
            ps.setString(1, intentId);
            ps.setString(2, clientId);
        }, rs -> "processing".equals(rs.getString("status"))
                ? new RowState(Optional.empty(), rs.getBoolean("needs_reconciliation"))
                : new RowState(Optional.of(new StoredAnswer(rs.getInt("response_status"), rs.getString("response_body"))), false))
                .orElse(new RowState(Optional.empty(), false));
    }

    public record RowState(Optional<StoredAnswer> answer, boolean parked) {
    }

    // ---- what Stripe says after the answer: events and the sync worker, inside the caller's transaction --------

    /** The row a Stripe object belongs to, as an event's transaction sees it (locked until it ends). */
    public record ObjectOwner(Operation operation, String id, String clientId, IntentStatus status, String state,
                              String requestJson, Instant createdAt, String objectId) {
    }

    /**
     * Locks the row of a Stripe object (by its id, else by the operation's identity, its {@code chargeonce_key}
     * metadata); empty when no row has it.
     *
     * @param clientId the client the object names ({@code chargeonce_client_id} metadata, which this service writes
     *                 on everything it sends); null when it names none: then the row's client is read first
     */
    public Optional<ObjectOwner> lockOwner(Connection tx, Operation op, String objectId, String stripeIdentity, String clientId)
            throws SQLException {
        String client = clientId;
        if (client == null) {
            try (PreparedStatement ps = tx.prepareStatement(sql(op).objectClient())) {
                ps.setString(1, objectId);
                ps.setString(2, stripeIdentity);
                ps.setString(3, objectId);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    client = rs.getString(1);
                }
            }
        }
        try (PreparedStatement ps = tx.prepareStatement(sql(op).lockForObject())) {
            ps.setString(1, client);
            ps.setString(2, objectId);
            ps.setString(3, stripeIdentity);
            ps.setString(4, objectId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(new ObjectOwner(op, rs.getString("id"), rs.getString("client_id"),
                        IntentStatus.fromColumn(rs.getString("status")), rs.getString("state"),
                        rs.getString("request"), rs.getTimestamp("created_at").toInstant(), rs.getString("object_id")));
            }
        }
    }

    /** Finishes a row still processing from what Stripe said (fencing out its holder); false if it was not. */
    public boolean finishFromStripe(Connection tx, Operation op, String id, String clientId, Final answer) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(sql(op).finishFromStripe())) {
            int next = answer.bind(ps, 1);
            ps.setString(next, id);
            ps.setString(next + 1, clientId);
            bindRelease(ps, next + 2, op, clientId);
            return Jdbc.countOf(ps) == 1;
        }
    }

    /**
     * Moves an answered operation's Stripe state forward to {@code next}; false when that would be backwards (a
     * lower rank) or out of a final state.
     */
    public boolean advanceState(Connection tx, Operation op, String id, String clientId, String next, String objectId)
            throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(sql(op).advanceState())) {
            ps.setString(1, next);
            ps.setString(2, objectId);
            ps.setString(3, next);
            ps.setString(4, id);
            ps.setString(5, clientId);
            ps.setInt(6, op.rank(next)); // the rank of the next state (Operation#rank), as {rank_now} ranks the row's
            bindRelease(ps, 7, op, clientId);
            return Jdbc.countOf(ps) == 1;
        }
    }

    /** An accepted operation the sync worker looks at. */
    public record AcceptedRow(Operation operation, String id, String clientId, String state, String objectId,
                              int checks, Instant answeredAt, Instant databaseNow) {
    }

    /**
     * Takes up to {@code limit} accepted charges whose next look is due, pushing their next look {@code hold} away
     * (so that another instance does not take them meanwhile; the worker sets the real next look after it).
     */
    public List<AcceptedRow> takeDueAccepted(Operation op, int limit, java.time.Duration hold) {
        return Jdbc.takeEach(primary, sql(op).dueAcceptedCandidates(), limit, rs -> 0, candidate ->
                Jdbc.first(primary, sql(op).takeDueAccepted(), ps -> {
                    ps.setLong(1, hold.toMillis());
                    ps.setString(2, candidate.id());
                    ps.setString(3, candidate.clientId());
                }, rs -> new AcceptedRow(op, rs.getString("id"), rs.getString("client_id"),
                        rs.getString("state"), rs.getString("object_id"),
                        rs.getInt("pending_checks"), rs.getTimestamp("finished_at").toInstant(),
                        // the statement set the next look to its clock plus the hold: that clock, read without a
                        // clock in RETURNING
                        rs.getTimestamp("recheck_at").toInstant().minusMillis(hold.toMillis()))));
    }

    /** When the sync worker looks at an accepted charge next (null: never, it is final). */
    public void scheduleRecheck(Connection tx, Operation op, String id, String clientId, java.time.Duration after)
            throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(sql(op).scheduleRecheck())) {
            ps.setObject(1, after == null ? null : after.toMillis(), java.sql.Types.BIGINT);
            ps.setString(2, id);
            ps.setString(3, clientId);
            ps.executeUpdate();
        }
    }

    /** The data source of the idempotency path: a transaction in which the sync worker applies what it saw. */
    public AgroalDataSource primary() {
        return primary;
    }
}

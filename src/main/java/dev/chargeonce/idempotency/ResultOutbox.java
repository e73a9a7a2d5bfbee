package dev.chargeonce.idempotency;

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

/**
 * Every statement on {@code kafka_outbox}: the results of Kafka commands waiting for the relay. The one statement
 * that queues a charge's result, {@link #QUEUE_FINISHED}, is part of every statement of the store
 * ({@link StatementCatalog}) that finishes a charge (the driver's fenced finish, a finish from Stripe's word, an operator's), so a result is
 * queued in the very transaction that stores the answer, or not at all. The Kafka package publishes what this
 * class hands it and owns no SQL.
 *
 * <p>Each result is queued once (unique {@code dedup}: the charge, or the refused record) and may be published
 * more than once (a relay that dies between the send and marking it sent): it carries the charge id for that. A
 * charge answered {@code 202} (its payment still processing) has more results: each later state Stripe reports
 * ({@link #QUEUE_LATER_STATE}, status 200, queued in the transaction that stores the state).
 */
@ApplicationScoped
public class ResultOutbox {

    /**
     * Queues the result of every row in {@code done} that a Kafka command claimed (its origin is set). {@code done}
     * has the charge's {@code id, client_id, idempotency_key, origin, response_status, response_body}. A CTE that
     * follows the finishing {@code UPDATE} in the same statement.
     */
    static final String QUEUE_FINISHED = """
            , outboxed AS (
                INSERT INTO kafka_outbox (dedup, charge_id, client_id, event_id, origin, status, body)
                SELECT 'charge:' || d.id, d.id, d.client_id, d.idempotency_key, d.origin, d.response_status, d.response_body
                  FROM done d
                 WHERE d.origin IS NOT NULL
                ON CONFLICT (dedup) DO NOTHING
                RETURNING id)""";

    /**
     * The later state of a charge answered {@code 202} ({@link CommandResults#queueLaterState}): the charge as
     * {@code GET /v1/charges/{id}} shows it, queued once per state.
     */
    static final String QUEUE_LATER_STATE = """
            INSERT INTO kafka_outbox (dedup, charge_id, client_id, event_id, origin, status, body)
            SELECT 'charge:' || id || ':' || charge_status, id, client_id, idempotency_key, origin, 200, ?
              FROM stripe_intents
             WHERE id = ? AND client_id = ? AND origin IS NOT NULL
            ON CONFLICT (dedup) DO NOTHING
            """;

    private static final String QUEUE_REFUSED = """
            INSERT INTO kafka_outbox (dedup, charge_id, client_id, event_id, origin, status, body)
            VALUES ('record:' || ?, NULL, ?, ?, ?, ?, ?)
            ON CONFLICT (dedup) DO NOTHING
            """;

    /**
     * Unsent results in the order they were queued, but none while an earlier result of its charge is unsent (taken
     * by another relay, or not acknowledged by the broker): a charge's results reach the topic in the order they were
     * queued (its answer, then each later state), so the latest record under a command's event id is its latest word,
     * also after a relay died between a send and its commit. The earlier ones are found by their dedup (the unique
     * index): {@code charge:<id>} and {@code charge:<id>:<state>} for each state. A refusal waits for nothing.
     */
    private static final String TAKE_UNSENT = """
            SELECT k.id, k.charge_id, k.client_id, k.event_id, k.origin, k.status, k.body FROM kafka_outbox k
             WHERE k.sent_at IS NULL
               AND NOT EXISTS (
                   SELECT 1 FROM kafka_outbox e
                    WHERE e.dedup IN ('charge:' || k.charge_id%s)
                      AND e.id < k.id AND e.sent_at IS NULL)
             ORDER BY k.id
             LIMIT ?
             FOR UPDATE OF k SKIP LOCKED
            """.formatted(ChargeStatus.names().stream().map(state -> ", 'charge:' || k.charge_id || ':" + state + "'")
            .collect(java.util.stream.Collectors.joining()));

    private static final String MARK_SENT = "UPDATE kafka_outbox SET sent_at = clock_timestamp() WHERE id = ANY (?)";

    private static final String BACKLOG = """
            SELECT count(*), coalesce(extract(epoch FROM clock_timestamp() - min(created_at)), 0)
              FROM kafka_outbox WHERE sent_at IS NULL
            """;

    private static final String PURGE_SENT = """
            DELETE FROM kafka_outbox WHERE id IN (
                SELECT id FROM kafka_outbox WHERE sent_at < clock_timestamp() - ? * interval '1 millisecond'
                 ORDER BY sent_at LIMIT ? FOR UPDATE SKIP LOCKED)
            """;

    /** A result to publish. {@code chargeId} is null for a command refused before any claim (a 422). */
    public record QueuedResult(long id, String chargeId, String clientId, String eventId, String origin, int status,
                               String body) {
    }

    /** Publishes results; returns the ids it published (the others stay queued for the next pass). */
    @FunctionalInterface
    public interface Publisher {
        List<Long> publish(List<QueuedResult> results) throws Exception;
    }

    public record Backlog(long rows, double oldestAgeSeconds) {
    }

    private final AgroalDataSource primary;

    public ResultOutbox(@Default AgroalDataSource primary) {
        this.primary = primary;
    }

    /**
     * Queues the answer of a record refused without a claim of its own (its event id was first used with another
     * body: the {@code 422} of HTTP). Once per record: a redelivery of the same record queues nothing more.
     */
    public void queueRefused(String clientId, String eventId, String origin, int status, String body) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(QUEUE_REFUSED)) {
            ps.setString(1, origin);
            ps.setString(2, clientId);
            ps.setString(3, eventId);
            ps.setString(4, origin);
            ps.setInt(5, status);
            ps.setString(6, body);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /**
     * One pass of the relay: takes up to {@code limit} unsent results (locked, so that relays of other instances
     * take others), has them published, marks what was published as sent, in one transaction. A relay that dies
     * after publishing and before the commit leaves them unsent: they are published again (at least once).
     *
     * @return how many were published
     */
    public int relay(int limit, Publisher publisher) throws Exception {
        try (Connection tx = primary.getConnection()) {
            tx.setAutoCommit(false);
            try {
                List<QueuedResult> taken = new ArrayList<>();
                try (PreparedStatement ps = tx.prepareStatement(TAKE_UNSENT)) {
                    ps.setInt(1, limit);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            taken.add(new QueuedResult(rs.getLong("id"), rs.getString("charge_id"), rs.getString("client_id"),
                                    rs.getString("event_id"), rs.getString("origin"), rs.getInt("status"), rs.getString("body")));
                        }
                    }
                }
                if (taken.isEmpty()) {
                    tx.rollback();
                    return 0;
                }
                List<Long> sent = publisher.publish(taken);
                if (!sent.isEmpty()) {
                    try (PreparedStatement ps = tx.prepareStatement(MARK_SENT)) {
                        ps.setArray(1, tx.createArrayOf("bigint", sent.toArray()));
                        ps.executeUpdate();
                    }
                }
                tx.commit();
                return sent.size();
            } catch (Exception e) {
                tx.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** How many results wait for the relay, and for how long the oldest has. */
    public Backlog backlog() {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(BACKLOG);
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new Backlog(rs.getLong(1), rs.getDouble(2));
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Deletes up to {@code batch} results published longer than {@code retention} ago. */
    public int purgeSent(Duration retention, int batch) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(PURGE_SENT)) {
            ps.setLong(1, retention.toMillis());
            ps.setInt(2, batch);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }
}

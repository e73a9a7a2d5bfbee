package dev.chargeonce.webhook;

import dev.chargeonce.idempotency.DatabaseFailures;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.operation.Settlement;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.Transactions;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.web.ApiException;
import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.jboss.logging.Logger;

/**
 * The transactional inbox of Stripe's events, and every statement on {@code stripe_events}. An event is recorded
 * by an {@code INSERT … ON CONFLICT DO NOTHING} on its id <em>in the same transaction</em> as the state change it
 * causes: a redelivery (Stripe delivers at least once, for days) inserts nothing and changes nothing; a state change
 * that fails rolls its inbox row back with it, so Stripe's redelivery is processed as new. Concurrent deliveries of
 * one event wait on the id's uniqueness, and all but one find it there. The endpoint acknowledges only after commit.
 *
 * <p>No transaction waits for Stripe: an event carries its object (a PaymentIntent, a refund), which is all a state
 * change needs; what an event leaves out (a {@code charge.refunded}'s refunds, which Stripe no longer lists in the
 * charge) is read from Stripe before the transaction begins ({@link Settlement#completed}).
 */
@ApplicationScoped
public class StripeEventInbox {

    private static final Logger LOG = Logger.getLogger(StripeEventInbox.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What receiving an event did. */
    public enum Received { APPLIED, IGNORED, UNKNOWN, DUPLICATE }

    private static final String INSERT = """
            INSERT INTO stripe_events (id, type, api_version, stripe_created, object_id, payload, source, outcome)
            VALUES (?, ?, ?, ?, ?, ?, ?, 'ignored')
            ON CONFLICT (id) DO NOTHING
            """;

    private static final String RECORD_OUTCOME = """
            UPDATE stripe_events SET outcome = ?, row_id = ?, detail = ? WHERE id = ?
            """;

    private static final String RECORDED_AMONG = "SELECT id FROM stripe_events WHERE id = ANY(?)";

    private static final String DELETE_OLD = """
            DELETE FROM stripe_events WHERE id IN (
                SELECT id FROM stripe_events WHERE received_at < clock_timestamp() - ? * interval '1 millisecond'
                 ORDER BY received_at LIMIT ? FOR UPDATE SKIP LOCKED)
            """;

    private final AgroalDataSource primary;
    private final Settlement settlement;
    private final Map<Received, Counter> received = new EnumMap<>(Received.class);

    StripeEventInbox(@Default AgroalDataSource primary, Settlement settlement, MeterRegistry metrics) {
        this.primary = primary;
        this.settlement = settlement;
        for (Received r : Received.values()) {
            received.put(r, metrics.counter("chargeonce.webhooks.events", "result", r.name().toLowerCase()));
        }
    }

    /**
     * An event as Stripe sent it (the signature checked, or listed by the Events API): recorded and applied once.
     *
     * @throws StripeGateway.LookupFailedException when what the event leaves out could not be read from Stripe:
     *         nothing was recorded, the event is to be received again
     */
    public Received receive(String payload, String source) {
        Envelope event = Envelope.parse(payload);
        // Read before the transaction, so that no connection waits for Stripe. A redelivery reads it again before it
        // finds itself recorded: rare (deliveries are at least once, not usually twice), and a read, never a change.
        com.stripe.model.StripeObject object = settlement.completed(event.type(), StripeGateway.objectOfEvent(payload));
        Received result = Transactions.inTransaction(primary, tx -> receive(tx, event, payload, object, source));
        received.get(result).increment();
        return result;
    }

    private Received receive(Connection tx, Envelope event, String payload, com.stripe.model.StripeObject object, String source)
            throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(INSERT)) {
            ps.setString(1, event.id());
            ps.setString(2, event.type());
            ps.setString(3, event.apiVersion());
            ps.setTimestamp(4, Timestamp.from(event.created()));
            ps.setString(5, event.objectId());
            ps.setString(6, payload);
            ps.setString(7, source);
            if (ps.executeUpdate() == 0) {
                return Received.DUPLICATE;
            }
        }
        Settlement.Result result = settlement.applyEvent(tx, event.type(), object);
        try (PreparedStatement ps = tx.prepareStatement(RECORD_OUTCOME)) {
            ps.setString(1, result.effect().name().toLowerCase());
            ps.setString(2, result.rowId());
            ps.setString(3, result.detail());
            ps.setString(4, event.id());
            ps.executeUpdate();
        }
        if (result.effect() == Settlement.Effect.UNKNOWN) {
            LOG.warnf("event %s (%s): %s; recorded for reconciliation", event.id(), event.type(), result.detail());
        } else {
            LOG.debugf("event %s (%s): %s %s", event.id(), event.type(), result.effect(), result.detail());
        }
        return switch (result.effect()) {
            case APPLIED -> Received.APPLIED;
            case IGNORED -> Received.IGNORED;
            case UNKNOWN -> Received.UNKNOWN;
        };
    }

    /** Which of these events are recorded: the catch-up's one look per page of Stripe's list. */
    public Set<String> recordedAmong(Collection<String> eventIds) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(RECORDED_AMONG)) {
            ps.setArray(1, c.createArrayOf("text", eventIds.toArray()));
            Set<String> recorded = new HashSet<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    recorded.add(rs.getString(1));
                }
            }
            return recorded;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Deletes up to {@code batch} events received longer than {@code retention} ago. */
    public int deleteOlderThan(Duration retention, int batch) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(DELETE_OLD)) {
            ps.setLong(1, retention.toMillis());
            ps.setInt(2, batch);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** An event as the console shows it in a row's story. */
    public record RecordedEvent(String id, String type, Instant stripeCreated, Instant receivedAt, String source, String outcome,
                                String objectId, String detail) {
    }

    /** The events that concerned a row (or named its Stripe object), oldest first. */
    public java.util.List<RecordedEvent> eventsOf(String rowId, String objectId, int limit) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT id, type, stripe_created, received_at, source, outcome, object_id, detail FROM stripe_events
                 WHERE row_id = ? OR (? IS NOT NULL AND object_id = ?)
                 ORDER BY stripe_created, received_at LIMIT ?""")) {
            ps.setString(1, rowId);
            ps.setString(2, objectId);
            ps.setString(3, objectId);
            ps.setInt(4, limit);
            java.util.List<RecordedEvent> events = new java.util.ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    events.add(new RecordedEvent(rs.getString(1), rs.getString(2), rs.getTimestamp(3).toInstant(),
                            rs.getTimestamp(4).toInstant(), rs.getString(5), rs.getString(6), rs.getString(7), rs.getString(8)));
                }
            }
            return events;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Counts for the gauges: events naming no charge, and seconds since the newest event arrived (-1: none yet). */
    public long[] counts() {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                SELECT count(*) FILTER (WHERE outcome = 'unknown'),
                       coalesce(extract(epoch FROM clock_timestamp() - max(received_at)), -1)::bigint
                  FROM stripe_events"""); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new long[] {rs.getLong(1), rs.getLong(2)};
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** The envelope of an event, read from the raw JSON whatever its API version. */
    record Envelope(String id, String type, String apiVersion, Instant created, String objectId) {

        static Envelope parse(String payload) {
            JsonNode event;
            try {
                event = JSON.readTree(payload);
            } catch (java.io.IOException e) {
                throw ApiException.invalidRequest("event_invalid", "The body is not a JSON event.", null);
            }
            if (event == null || !event.path("id").isTextual() || !event.path("type").isTextual()
                    || !"event".equals(event.path("object").asText())) {
                throw ApiException.invalidRequest("event_invalid", "The body is not a Stripe event.", null);
            }
            JsonNode object = event.path("data").path("object");
            return new Envelope(event.get("id").asText(), event.get("type").asText(),
                    event.path("api_version").isTextual() ? event.get("api_version").asText() : null,
                    Instant.ofEpochSecond(event.path("created").asLong()),
                    object.path("id").isTextual() ? object.get("id").asText() : null);
        }
    }
}

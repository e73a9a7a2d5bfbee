package dev.chargeonce.webhook;

import dev.chargeonce.idempotency.DatabaseFailures;
import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Every statement on {@code event_cursors}: where the catch-up has read Stripe's events up to, and the lease that
 * lets one pass at a time move it (see V1.16.0). Each is one short autocommit statement: no connection is held while
 * Stripe is read.
 */
@ApplicationScoped
public class EventCursor {

    /** The stream of the events the webhook endpoint subscribes to. */
    public static final String STRIPE_EVENTS = "stripe_events";

    /**
     * Where every followed event is recorded up to: all created before {@code created} (epoch seconds) and, with
     * {@code eventId}, all up to and including that event in Stripe's list order.
     */
    public record Position(long created, String eventId) {
    }

    private static final String CREATE_IF_ABSENT = """
            INSERT INTO event_cursors (stream, position_created) VALUES (?, to_timestamp(?))
            ON CONFLICT (stream) DO NOTHING
            """;

    /** The lease is free (never taken, given back, expired) or already this holder's. */
    private static final String TAKE_LEASE = """
            UPDATE event_cursors SET lease_holder = ?, lease_until = statement_timestamp() + ? * interval '1 millisecond'
             WHERE stream = ? AND (lease_until IS NULL OR lease_until <= statement_timestamp() OR lease_holder = ?)
            RETURNING extract(epoch FROM position_created)::bigint, position_id
            """;

    /** Moves the place and renews the lease, only for the holder: a pass that lost its lease moves nothing. */
    private static final String MOVE = """
            UPDATE event_cursors SET position_created = to_timestamp(?), position_id = ?,
                   moved_at = CASE WHEN position_created = to_timestamp(?) AND position_id IS NOT DISTINCT FROM ?
                                   THEN moved_at ELSE statement_timestamp() END,
                   lease_until = statement_timestamp() + ? * interval '1 millisecond'
             WHERE stream = ? AND lease_holder = ?
            """;

    private static final String GIVE_BACK = """
            UPDATE event_cursors SET lease_holder = NULL, lease_until = NULL WHERE stream = ? AND lease_holder = ?
            """;

    private static final String LAG = """
            SELECT extract(epoch FROM statement_timestamp() - position_created) FROM event_cursors WHERE stream = ?
            """;

    private final AgroalDataSource primary;
    /** While the schema is held at V1.13.0 (an upgrade's first two steps), event_cursors may not exist yet. */
    private final boolean held;

    EventCursor(@Default AgroalDataSource primary, dev.chargeonce.idempotency.KeyIdentities identities) {
        this.primary = primary;
        this.held = identities.schemaHeldBeforeKeysErased();
    }

    /**
     * Takes the stream's lease for {@code lease} (creating the stream at {@code firstPosition} the first time);
     * the place to read from, or empty when another holder's lease is running.
     */
    public Optional<Position> take(String stream, String holder, Duration lease, Instant firstPosition) {
        if (held) {
            return Optional.empty(); // as if another holder read: the instances of the upgrade's step 3 catch up
        }
        try (Connection c = primary.getConnection()) {
            try (PreparedStatement ps = c.prepareStatement(CREATE_IF_ABSENT)) {
                ps.setString(1, stream);
                ps.setLong(2, firstPosition.getEpochSecond());
                ps.executeUpdate();
            }
            try (PreparedStatement ps = c.prepareStatement(TAKE_LEASE)) {
                ps.setString(1, holder);
                ps.setLong(2, lease.toMillis());
                ps.setString(3, stream);
                ps.setString(4, holder);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Optional.of(new Position(rs.getLong(1), rs.getString(2))) : Optional.empty();
                }
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Moves the place (or keeps it) and renews the lease; false when the lease is no longer the holder's. */
    public boolean move(String stream, String holder, Position to, Duration lease) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(MOVE)) {
            ps.setLong(1, to.created());
            ps.setString(2, to.eventId());
            ps.setLong(3, to.created());
            ps.setString(4, to.eventId());
            ps.setLong(5, lease.toMillis());
            ps.setString(6, stream);
            ps.setString(7, holder);
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Gives the lease back (the next pass, on any instance, may take it at once). */
    public void giveBack(String stream, String holder) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(GIVE_BACK)) {
            ps.setString(1, stream);
            ps.setString(2, holder);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Seconds between the place and now: how far behind the catch-up's guarantee is; empty before its first pass. */
    public Optional<Double> lagSeconds(String stream) {
        if (held) {
            return Optional.empty();
        }
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(LAG)) {
            ps.setString(1, stream);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(rs.getDouble(1)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }
}

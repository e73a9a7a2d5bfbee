package dev.chargeonce.ratebudget;

import dev.chargeonce.idempotency.DatabaseFailures;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Every statement on {@code stripe_rate_budget} (see V1.18.0): the schedules the instances book Stripe permits from.
 * Each is one short autocommit statement on the primary; no connection is held while a permit is waited for. "Now"
 * is the statement's start ({@code statement_timestamp()}: Citus refuses volatile functions in writes, and one clock
 * for the whole statement).
 */
final class Schedule {

    /** A schedule's identity: the Stripe account, the endpoint, the traffic class. */
    record Key(String account, Endpoint endpoint, TrafficClass trafficClass) {
    }

    /**
     * What a booking found: {@code granted} permits were booked from {@code aheadMicros} after the database's now,
     * spaced by {@code intervalMicros}; when not granted, {@code aheadMicros} is how far the schedule is booked.
     */
    record Booking(boolean granted, long aheadMicros, long intervalMicros, double rate) {
    }

    private static final String ENSURE = """
            INSERT INTO stripe_rate_budget (account, endpoint, traffic_class, configured_rate) VALUES (?, ?, ?, ?)
            ON CONFLICT (account, endpoint, traffic_class) DO UPDATE SET configured_rate = excluded.configured_rate
            """;

    /** The rate now: the configured one, or the one after the last decrease plus what it has climbed back since. */
    private static final String RATE_NOW = """
            CASE WHEN b.decreased_rate IS NULL THEN b.configured_rate
                 ELSE least(b.configured_rate, b.decreased_rate + ? * (clock.now_us - b.decreased_us) / 1e6) END""";

    /**
     * Books k permits when the first would be at most max_ahead_us after now, and answers how far ahead the schedule
     * was booked either way (the row is locked first, so concurrent bookings see each other's).
     */
    private static final String BOOK = """
            WITH clock AS (SELECT (extract(epoch FROM statement_timestamp()) * 1e6)::bigint AS now_us),
                 current AS (
                   SELECT b.account, b.endpoint, b.traffic_class, clock.now_us,
                          greatest(b.booked_until_us, clock.now_us) AS start_us,
                          greatest(1, (1e6 / %s)::bigint) AS interval_us,
                          %s AS rate
                     FROM stripe_rate_budget b, clock
                    WHERE b.account = ? AND b.endpoint = ? AND b.traffic_class = ?
                      FOR UPDATE OF b)
            UPDATE stripe_rate_budget b
               SET booked_until_us = CASE WHEN c.start_us - c.now_us <= ? THEN c.start_us + ? * c.interval_us
                                          ELSE b.booked_until_us END
              FROM current c
             WHERE b.account = c.account AND b.endpoint = c.endpoint AND b.traffic_class = c.traffic_class
            RETURNING c.start_us - c.now_us <= ?, c.start_us - c.now_us, c.interval_us, c.rate
            """.formatted(RATE_NOW, RATE_NOW);

    /**
     * Borrows one permit from the endpoint's other class whose schedule is free soonest (another class than
     * {@code borrower}), when that is within {@code maxAheadMicros} and within the lender's own interval or
     * {@code toleranceMicros}, whichever is longer: far enough to reach an idle lender's next slot (so a class alone
     * has the whole rate), never further. A lender whose own requests wait in line is booked further ahead than that
     * and lends nothing; one whose own demand is light lends at most its next slot, so its next request waits at most
     * one interval more. Answers the lender's rate and class.
     */
    private static final String BORROW = """
            WITH clock AS (SELECT (extract(epoch FROM statement_timestamp()) * 1e6)::bigint AS now_us),
                 lender AS (
                   SELECT b.account, b.endpoint, b.traffic_class, clock.now_us,
                          greatest(b.booked_until_us, clock.now_us) AS start_us,
                          greatest(1, (1e6 / %s)::bigint) AS interval_us,
                          %s AS rate
                     FROM stripe_rate_budget b, clock
                    WHERE b.account = ? AND b.endpoint = ? AND b.traffic_class <> ?
                    ORDER BY greatest(b.booked_until_us, clock.now_us)
                    LIMIT 1
                      FOR UPDATE OF b),
                 reach AS (SELECT l.*, l.start_us - l.now_us <= least(?, greatest(?, l.interval_us)) AS granted FROM lender l)
            UPDATE stripe_rate_budget b
               SET booked_until_us = CASE WHEN r.granted THEN r.start_us + r.interval_us ELSE b.booked_until_us END
              FROM reach r
             WHERE b.account = r.account AND b.endpoint = r.endpoint AND b.traffic_class = r.traffic_class
            RETURNING r.granted, r.start_us - r.now_us, r.interval_us, r.rate, r.traffic_class
            """.formatted(RATE_NOW, RATE_NOW);

    /** What a borrowing found: the booking, on the schedule of {@code lender}. */
    record Borrowing(Booking booking, TrafficClass lender) {
    }

    /**
     * Stripe answered 429: every class of the endpoint drops to {@code factor} of its rate now (not below
     * {@code floor}), at most once per cooldown (one burst of 429s is one signal, not twenty).
     */
    private static final String DECREASE = """
            WITH clock AS (SELECT (extract(epoch FROM statement_timestamp()) * 1e6)::bigint AS now_us)
            UPDATE stripe_rate_budget b
               SET decreased_rate = greatest(?, ? * %s), decreased_us = clock.now_us
              FROM clock
             WHERE b.account = ? AND b.endpoint = ? AND (b.decreased_us IS NULL OR clock.now_us - b.decreased_us >= ?)
            """.formatted(RATE_NOW);

    private static final String STANDINGS = """
            WITH clock AS (SELECT (extract(epoch FROM statement_timestamp()) * 1e6)::bigint AS now_us)
            SELECT b.endpoint, b.traffic_class, b.configured_rate, %s, greatest(0, b.booked_until_us - clock.now_us)
              FROM stripe_rate_budget b, clock
             WHERE b.account = ?
             ORDER BY b.endpoint, b.traffic_class
            """.formatted(RATE_NOW);

    private final DataSource primary;
    /** How fast a lowered rate climbs back, in permits per second, each second. */
    private final double increasePerSecond;

    Schedule(DataSource primary, double increasePerSecond) {
        this.primary = primary;
        this.increasePerSecond = increasePerSecond;
    }

    /** Creates the schedule, or sets its configured rate (the last instance to start says what it is). */
    void ensure(Key key, double configuredRate) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(ENSURE)) {
            ps.setString(1, key.account());
            ps.setString(2, key.endpoint().id());
            ps.setString(3, key.trafficClass().id());
            ps.setDouble(4, configuredRate);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Books {@code count} permits if the first is at most {@code maxAheadMicros} away. */
    Booking book(Key key, int count, long maxAheadMicros) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(BOOK)) {
            ps.setDouble(1, increasePerSecond);
            ps.setDouble(2, increasePerSecond);
            ps.setString(3, key.account());
            ps.setString(4, key.endpoint().id());
            ps.setString(5, key.trafficClass().id());
            ps.setLong(6, maxAheadMicros);
            ps.setInt(7, count);
            ps.setLong(8, maxAheadMicros);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new IllegalStateException("no rate schedule " + key + " (it is created at start-up)");
                }
                return new Booking(rs.getBoolean(1), rs.getLong(2), rs.getLong(3), rs.getDouble(4));
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Borrows one permit for {@code borrower} from the other class of its endpoint whose schedule is free soonest. */
    Borrowing borrow(Key borrower, long maxAheadMicros, long toleranceMicros) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(BORROW)) {
            ps.setDouble(1, increasePerSecond);
            ps.setDouble(2, increasePerSecond);
            ps.setString(3, borrower.account());
            ps.setString(4, borrower.endpoint().id());
            ps.setString(5, borrower.trafficClass().id());
            ps.setLong(6, maxAheadMicros);
            ps.setLong(7, toleranceMicros);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new IllegalStateException("no rate schedule to borrow from for " + borrower + " (created at start-up)");
                }
                return new Borrowing(new Booking(rs.getBoolean(1), rs.getLong(2), rs.getLong(3), rs.getDouble(4)),
                        TrafficClass.byId(rs.getString(5)));
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Lowers every class of the endpoint; false when another instance lowered it within the cooldown. */
    boolean decrease(String account, Endpoint endpoint, double factor, double floor, long cooldownMicros) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(DECREASE)) {
            ps.setDouble(1, floor);
            ps.setDouble(2, factor);
            ps.setDouble(3, increasePerSecond);
            ps.setString(4, account);
            ps.setString(5, endpoint.id());
            ps.setLong(6, cooldownMicros);
            return ps.executeUpdate() > 0;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    List<Standing> standings(String account) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(STANDINGS)) {
            ps.setDouble(1, increasePerSecond);
            ps.setString(2, account);
            List<Standing> all = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    Endpoint endpoint = Endpoint.byId(rs.getString(1));
                    TrafficClass trafficClass = TrafficClass.byId(rs.getString(2));
                    if (endpoint != null && trafficClass != null) {
                        all.add(new Standing(endpoint.id(), trafficClass.id(), rs.getDouble(3), rs.getDouble(4), rs.getLong(5) / 1e6));
                    }
                }
            }
            return all;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }
}

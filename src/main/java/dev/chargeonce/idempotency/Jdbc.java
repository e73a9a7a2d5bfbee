package dev.chargeonce.idempotency;

import io.agroal.api.AgroalDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * How the store's classes run a statement: each on a connection of its own, in its own committed transaction
 * (autocommit) unless a caller's transaction is named, so that no connection is held between statements (and none
 * while Stripe is called). A database failure comes out as {@link DatabaseFailures#of}: unavailable or refused.
 */
final class Jdbc {

    private Jdbc() {
    }

    @FunctionalInterface
    interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    @FunctionalInterface
    interface Reader {
        void read(ResultSet rs) throws SQLException;
    }

    @FunctionalInterface
    interface RowValue<T> {
        T read(ResultSet rs) throws SQLException;
    }

    static void run(AgroalDataSource source, String sql, Binder binder, Reader reader) {
        try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
                reader.read(rs);
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** The first row of a statement as {@code reader} makes it; empty when there is none. */
    static <T> Optional<T> first(AgroalDataSource source, String sql, Binder binder, RowValue<T> reader) {
        List<T> row = new ArrayList<>(1);
        run(source, sql, binder, rs -> {
            if (rs.next()) {
                row.add(reader.read(rs));
            }
        });
        return row.stream().findFirst();
    }

    /** Every row of a statement as {@code reader} makes it, in the statement's order (a list the caller may change). */
    static <T> List<T> all(AgroalDataSource source, String sql, Binder binder, RowValue<T> reader) {
        List<T> rows = new ArrayList<>();
        run(source, sql, binder, rs -> {
            while (rs.next()) {
                rows.add(reader.read(rs));
            }
        });
        return rows;
    }

    static int update(AgroalDataSource source, String sql, Binder binder) {
        try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** A statement whose result is one count (the {@code SELECT count(*) FROM done} of a CTE that writes). */
    static long count(AgroalDataSource source, String sql, Binder binder) {
        try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            return countOf(ps);
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    static long countOf(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Work on one connection, each statement its own transaction. */
    static <T> T onConnection(AgroalDataSource source, Transactions.Work<T> work) {
        try (Connection c = source.getConnection()) {
            return work.run(c);
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Class 0x6b657973 ("keys") of advisory locks: a key's claim while writers differ (nothing else takes one). */
    static void lockKey(Connection tx, int lockName) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("SELECT pg_advisory_xact_lock(1801812339, ?)")) {
            ps.setInt(1, lockName);
            ps.executeQuery().close();
        }
    }

    /** How many candidates a background scan reads per row it may take: see {@link #takeEach}. */
    private static final int CANDIDATES_PER_TAKE = 4;

    /** A row a lock-free scan found, with the generation its fenced statement must still see (0: not leased). */
    record Candidate(String id, String clientId, int leaseGeneration) {
    }

    /**
     * A background worker's pass: candidates read without locks by {@code scan} (its one parameter: how many), then
     * each tried by {@code take}, a fenced single-shard statement (empty: another worker took it first), until
     * {@code limit} are taken. It reads more candidates than it takes, in its own order: instances that scan at once
     * then mostly try different rows (every instance reads the same oldest ones). A failure after some are taken
     * returns those (the caller acts on them; the rest stay due for the next pass); before any, it is thrown.
     *
     * @param generation the lease generation a candidate's statement must still see (read from the scan's row)
     */
    static <T> List<T> takeEach(AgroalDataSource source, String scan, int limit, RowValue<Integer> generation,
                                java.util.function.Function<Candidate, Optional<T>> take) {
        List<Candidate> candidates = new ArrayList<>();
        run(source, scan, ps -> ps.setInt(1, limit * CANDIDATES_PER_TAKE), rs -> {
            while (rs.next()) {
                candidates.add(new Candidate(rs.getString("id"), rs.getString("client_id"), generation.read(rs)));
            }
        });
        Collections.shuffle(candidates);
        List<T> taken = new ArrayList<>();
        for (Candidate candidate : candidates) {
            if (taken.size() == limit) {
                break;
            }
            try {
                take.apply(candidate).ifPresent(taken::add);
            } catch (RuntimeException e) {
                if (taken.isEmpty()) {
                    throw e;
                }
                return taken;
            }
        }
        return taken;
    }
}

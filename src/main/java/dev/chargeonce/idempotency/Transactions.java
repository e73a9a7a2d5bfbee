package dev.chargeonce.idempotency;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/** One transaction on a data source, the same way for every store: committed when the work returns, rolled back when it throws. */
public final class Transactions {

    private Transactions() {
    }

    @FunctionalInterface
    public interface Work<T> {
        T run(Connection tx) throws SQLException;
    }

    /** A database failure comes out as {@link DatabaseFailures#of}: unavailable or refused. */
    public static <T> T inTransaction(DataSource source, Work<T> work) {
        try (Connection tx = source.getConnection()) {
            tx.setAutoCommit(false);
            try {
                T result = work.run(tx);
                tx.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                tx.rollback();
                throw e;
            } finally {
                tx.setAutoCommit(true);
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }
}

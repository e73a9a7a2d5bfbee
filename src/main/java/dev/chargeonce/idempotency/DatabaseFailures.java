package dev.chargeonce.idempotency;

import java.sql.SQLException;
import java.util.Set;

/**
 * What a failed statement means. The database unreachable or unable to serve right now (no connection, pool
 * exhausted, shutting down, a failover's read-only primary, out of resources, a deadlock or a timeout) is an
 * outage: {@link DatabaseUnavailableException}, answered {@code 503} and retried. A statement the database refused
 * for what it carried (SQLSTATE class 22 data exception, 23 integrity constraint, 42 syntax or access) is no
 * outage: retrying changes nothing and paging on-call about it hides a bug. It is {@link DatabaseRefusedException},
 * answered {@code 500} and logged; the validation at the edge should have refused the input first.
 */
public final class DatabaseFailures {

    /**
     * SQLSTATE classes of unavailability: 08 connection, 53 insufficient resources, 57 operator intervention (admin
     * shutdown, query canceled by a statement timeout), 58 system error, 40 transaction rollback (serialization,
     * deadlock: try again), 55 object not in prerequisite state (lock not available), XX internal error.
     */
    private static final Set<String> UNAVAILABLE_CLASSES = Set.of("08", "53", "57", "58", "40", "55", "XX");
    /** A write on a read-only server: the primary became a standby (failover), the new primary is elsewhere. */
    private static final String READ_ONLY_TRANSACTION = "25006";

    private DatabaseFailures() {
    }

    public static RuntimeException of(SQLException e) {
        return isUnavailability(e) ? new DatabaseUnavailableException(e.getMessage(), e) : new DatabaseRefusedException(e.getMessage(), e);
    }

    static boolean isUnavailability(SQLException e) {
        String state = e.getSQLState();
        // No SQLSTATE: the pool's own failures (acquisition timeout, a closed connection), before any server answer.
        if (state == null || state.length() < 2) {
            return true;
        }
        return UNAVAILABLE_CLASSES.contains(state.substring(0, 2)) || state.equals(READ_ONLY_TRANSACTION);
    }
}

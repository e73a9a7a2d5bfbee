package dev.chargeonce.bench.passthrough;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;

/**
 * The floor's database work: the least any exactly-once charge needs, and nothing of what chargeonce adds to it. A
 * claim committed before Stripe is called (one {@code INSERT … ON CONFLICT DO NOTHING}, its own transaction), a finish
 * committed after (one {@code UPDATE … WHERE id = ?}), on the minimal pair's table ({@code bench_minimal}: a key and
 * the answer), each statement on a connection borrowed for it alone, as the service does. No leases, no fencing, no
 * fingerprint, no read first, no recovery: this is not a safe service, it is the cost below which none can go with
 * this stack (Agroal and pgjdbc on virtual threads).
 */
@ApplicationScoped
class MinimalPair {

    private final AgroalDataSource database;

    MinimalPair(AgroalDataSource database) {
        this.database = database;
    }

    /** True when this call claimed the key; false when a row for it existed already. */
    boolean claim(String id) throws SQLException {
        try (Connection c = database.getConnection();
             PreparedStatement ps = c.prepareStatement(
                     "INSERT INTO bench_minimal (id, status) VALUES (?, 'processing') ON CONFLICT DO NOTHING")) {
            ps.setString(1, id);
            return ps.executeUpdate() == 1;
        }
    }

    /** The answer stored for a claimed key, empty while its first request is still in flight. */
    Optional<String> answer(String id) throws SQLException {
        try (Connection c = database.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT body FROM bench_minimal WHERE id = ?")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.ofNullable(rs.getString(1)) : Optional.empty();
            }
        }
    }

    void finish(String id, String status, String body) throws SQLException {
        try (Connection c = database.getConnection();
             PreparedStatement ps = c.prepareStatement("UPDATE bench_minimal SET status = ?, body = ? WHERE id = ?")) {
            ps.setString(1, status);
            ps.setString(2, body);
            ps.setString(3, id);
            ps.executeUpdate();
        }
    }
}

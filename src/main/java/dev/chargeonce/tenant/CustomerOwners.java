package dev.chargeonce.tenant;

import dev.chargeonce.idempotency.DatabaseFailures;
import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;

/** Every statement on {@code customer_owners}, on the primary. */
@ApplicationScoped
class CustomerOwners {

    private final AgroalDataSource primary;

    CustomerOwners(AgroalDataSource primary) {
        this.primary = primary;
    }

    Optional<String> ownerOf(String customerId) {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT client_id FROM customer_owners WHERE customer_id = ?")) {
            ps.setString(1, customerId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Remembers an owner Stripe proved; the first proof stays (a Customer's owner never changes here). */
    void remember(String customerId, String clientId) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "INSERT INTO customer_owners (customer_id, client_id) VALUES (?, ?) ON CONFLICT (customer_id) DO NOTHING")) {
            ps.setString(1, customerId);
            ps.setString(2, clientId);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }
}

package dev.chargeonce.recovery;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.Management;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A row the recovery worker takes over every few seconds without ever finishing it has a fresh lease most of the
 * time: counting expired leases never sees it. Its age since the claim and the number of drives do.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class StuckRowsTest {

    @Inject
    AgroalDataSource primary;

    @Inject
    AttentionGauges gauges;

    @Test
    void aRowDrivenOverAndOverWithoutEndIsReportedByAgeAndDrives() throws Exception {
        String id = "chg_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                            lease_gen, lease_until, created_at, stripe_key_first_sent, stripe_identity)
                VALUES (?, 'stuck-test', ?, 'f', '{}', 1, 'usd', 'processing', 240, now() + interval '20 seconds',
                        now() - interval '40 minutes', now() - interval '40 minutes', ?)""")) {
            ps.setString(1, id);
            ps.setString(2, null);
            ps.setString(3, dev.chargeonce.testing.TestKeys.identity("stuck-test", id));
            ps.executeUpdate();
        }
        try {
            gauges.refresh();
            String metrics = Management.given().get("/q/metrics").then().statusCode(200).extract().asString();
            assertTrue(gauge(metrics, "chargeonce_processing_overdue_rows") >= 1, "a 40-minute-old processing row is overdue");
            assertTrue(gauge(metrics, "chargeonce_processing_oldest_age_seconds") >= 40 * 60, "its age is exported");
            assertTrue(gauge(metrics, "chargeonce_processing_max_drives") >= 240, "and how often it was driven");
        } finally {
            try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("DELETE FROM stripe_intents WHERE id = ?")) {
                ps.setString(1, id);
                ps.executeUpdate();
            }
        }
    }

    static double gauge(String metrics, String name) {
        return metrics.lines().filter(l -> l.startsWith(name + " ") || l.startsWith(name + "{"))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).findFirst()
                .orElseThrow(() -> new AssertionError(name + " is not exported"));
    }
}

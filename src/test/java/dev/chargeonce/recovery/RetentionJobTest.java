package dev.chargeonce.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class RetentionJobTest {

    @Inject
    RetentionJob retention;

    @Inject
    AgroalDataSource primary;

    @Test
    void aRetentionShorterThanStripesWindowPlusTheLeaseIsRefused() {
        assertThrows(IllegalStateException.class, () -> RetentionJob.validate(Duration.ofHours(24), Duration.ofSeconds(30)));
        assertThrows(IllegalStateException.class, () -> RetentionJob.validate(Duration.ofHours(1), Duration.ofSeconds(30)));
        RetentionJob.validate(Duration.ofHours(24).plusSeconds(30), Duration.ofSeconds(30));
        RetentionJob.validate(Duration.ofDays(7), Duration.ofSeconds(30));
    }

    @Test
    void deletesOnlyFinishedRowsPastTheRefundWindowAndNothingStripeStillMoves() throws Exception {
        // The refund window (180 d by default) is longer than the retention (7 d): it decides for charges and refunds.
        String prefix = "ret-" + UUID.randomUUID();
        insert(prefix + "-old-completed", "completed", null, "181 days");
        insert(prefix + "-old-failed", "failed", null, "181 days");
        insert(prefix + "-refundable", "completed", "succeeded", "179 days");
        insert(prefix + "-failed-in-window", "failed", "failed", "8 days");
        insert(prefix + "-old-processing", "processing", null, "400 days");
        insert(prefix + "-old-debit-on-its-way", "accepted", "processing", "200 days");
        insert(prefix + "-old-debit-settled", "accepted", "succeeded", "200 days");
        String refunded = insert(prefix + "-old-refunded", "completed", "succeeded", "200 days");
        insertRefund(refunded, prefix + "-old-refund", "completed", "succeeded", "190 days");
        String refundPending = insert(prefix + "-old-refund-pending", "completed", "succeeded", "200 days");
        insertRefund(refundPending, prefix + "-pending-refund", "accepted", "pending", "190 days");

        retention.pass();

        assertEquals(0, count("stripe_intents", prefix + "-old-completed"));
        assertEquals(0, count("stripe_intents", prefix + "-old-failed"));
        assertEquals(1, count("stripe_intents", prefix + "-refundable"), "inside the refund window: it can still be refunded");
        assertEquals(1, count("stripe_intents", prefix + "-failed-in-window"), "inside the windows: still replayed");
        assertEquals(1, count("stripe_intents", prefix + "-old-processing"), "never delete an unfinished charge, whatever its age");
        assertEquals(1, count("stripe_intents", prefix + "-old-debit-on-its-way"), "Stripe has not finished it: still followed");
        assertEquals(0, count("stripe_intents", prefix + "-old-debit-settled"));
        assertEquals(0, count("stripe_refunds", prefix + "-old-refund"), "an old settled refund goes...");
        assertEquals(0, count("stripe_intents", prefix + "-old-refunded"), "...and then its charge");
        assertEquals(1, count("stripe_refunds", prefix + "-pending-refund"), "a refund Stripe has not finished stays...");
        assertEquals(1, count("stripe_intents", prefix + "-old-refund-pending"), "...and so does its charge");
    }

    /** A charge row finished {@code age} ago (created then too); returns its id. */
    private String insert(String key, String status, String chargeStatus, String age) throws Exception {
        boolean finished = !"processing".equals(status);
        String id = "chg_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                    lease_until, response_status, response_body, finished_at, created_at, charge_status, payment_intent_id,
                    stripe_identity)
                VALUES (?, 'retention-test', ?, 'f', '{}', 100, 'usd', ?, ?, ?, ?, ?, now() - ?::interval, ?, ?, ?)""")) {
            ps.setString(1, id);
            ps.setString(2, null); // keys are not stored
            ps.setString(3, status);
            ps.setObject(4, finished ? null : java.sql.Timestamp.from(java.time.Instant.now().plusSeconds(3600)));
            ps.setObject(5, finished ? 201 : null);
            ps.setString(6, finished ? "{}" : null);
            ps.setObject(7, finished ? java.sql.Timestamp.from(java.time.Instant.now().minus(parseDays(age))) : null);
            ps.setString(8, age);
            ps.setString(9, chargeStatus);
            ps.setString(10, chargeStatus == null ? null : "pi_" + id.substring(4));
            ps.setString(11, dev.chargeonce.testing.TestKeys.identity("retention-test", key));
            ps.executeUpdate();
        }
        return id;
    }

    private void insertRefund(String chargeId, String key, String status, String refundStatus, String age) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_refunds (id, charge_id, client_id, idempotency_key, fingerprint, request, amount, currency,
                    status, response_status, response_body, finished_at, created_at, refund_status, stripe_refund_id,
                    stripe_identity)
                VALUES (?, ?, 'retention-test', ?, 'f', '{}', 50, 'usd', ?, 201, '{}', now() - ?::interval, now() - ?::interval,
                        ?, ?, ?)""")) {
            ps.setString(1, "rfd_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24));
            ps.setString(2, chargeId);
            ps.setString(3, null); // keys are not stored
            ps.setString(4, status);
            ps.setString(5, age);
            ps.setString(6, age);
            ps.setString(7, refundStatus);
            ps.setString(8, "re_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24));
            ps.setString(9, dev.chargeonce.testing.TestKeys.refundIdentity("retention-test", key));
            ps.executeUpdate();
        }
    }

    private static Duration parseDays(String age) {
        return Duration.ofDays(Long.parseLong(age.split(" ")[0]));
    }

    private long count(String table, String key) throws Exception {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + table + " WHERE stripe_identity = ?")) {
            ps.setString(1, table.equals("stripe_refunds") ? dev.chargeonce.testing.TestKeys.refundIdentity("retention-test", key)
                    : dev.chargeonce.testing.TestKeys.identity("retention-test", key));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}

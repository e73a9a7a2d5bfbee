package dev.chargeonce.recovery;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class RetentionJobTest {

    @Inject
    RetentionJob retention;

    @Inject
    AgroalDataSource primary;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

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

    /**
     * A charge's {@code amount_reserved} is its pending and succeeded refunds; a refund that ended without refunding
     * gave its amount back when it ended. Deleting refund rows by their age gives nothing back: a charge a younger
     * refund still keeps (it is deleted with the last of its refunds, never before) has no more left to refund
     * after the sweep than before it.
     */
    @Test
    void aDeletedRefundKeepsItsAmountReservedOnTheCharge() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String chargeId = charge("{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}");
        Response refunded = refund(chargeId, "{\"amount\": 500}");
        assertEquals(201, refunded.statusCode(), refunded.asString());
        assertEquals("succeeded", refunded.jsonPath().getString("status"));
        Response younger = refund(chargeId, "{\"amount\": 100}");
        assertEquals(201, younger.statusCode(), younger.asString());
        // A refund the bank failed: its 300 was given back when it failed (nothing of it is reserved any more).
        String failed = insertRefund(chargeId, ACME, "ret-failed-" + UUID.randomUUID(), "accepted", "failed", "190 days", 300);
        assertEquals(600, reserved(chargeId), "the two succeeded refunds");

        // The charge and its first refunds are long past the refund window; the younger refund is not.
        age("stripe_intents", chargeId, "200 days");
        age("stripe_refunds", refunded.jsonPath().getString("id"), "190 days");
        age("stripe_refunds", younger.jsonPath().getString("id"), "30 days");

        retention.pass();

        assertEquals(0, countById("stripe_refunds", refunded.jsonPath().getString("id")), "an old succeeded refund goes");
        assertEquals(0, countById("stripe_refunds", failed), "an old failed refund goes");
        assertEquals(1, countById("stripe_refunds", younger.jsonPath().getString("id")), "a refund inside the window stays...");
        assertEquals(1, countById("stripe_intents", chargeId), "...and so does its charge");
        assertEquals(600, reserved(chargeId), "deleting a refund's row gives nothing back, the failed one's neither (again)");
        retention.pass();
        assertEquals(1, countById("stripe_intents", chargeId), "the next pass keeps the charge too");
        assertEquals(600, reserved(chargeId), "the next pass gives nothing back either");

        long asked = stripe.refundCreateRequests();
        Response tooMuch = refund(chargeId, "{\"amount\": 401}");
        assertEquals(400, tooMuch.statusCode(), tooMuch.asString());
        assertEquals("amount_too_large", tooMuch.jsonPath().getString("error.code"));
        assertEquals(asked, stripe.refundCreateRequests(), "Stripe was not asked for more than is left");
        Response rest = refund(chargeId, "{}");
        assertEquals(201, rest.statusCode(), rest.asString());
        assertEquals(400, rest.jsonPath().getInt("amount"), "what is left: the charge less the refunds that refunded");
        assertEquals(1000, reserved(chargeId));
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
        insertRefund(chargeId, "retention-test", key, status, refundStatus, age, 50);
    }

    /** A refund row of the client's charge, finished {@code age} ago (created then too); returns its id. */
    private String insertRefund(String chargeId, String clientId, String key, String status, String refundStatus, String age,
                                long amount) throws Exception {
        String id = "rfd_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_refunds (id, charge_id, client_id, idempotency_key, fingerprint, request, amount, currency,
                    status, response_status, response_body, finished_at, created_at, refund_status, stripe_refund_id,
                    stripe_identity)
                VALUES (?, ?, ?, ?, 'f', '{}', ?, 'usd', ?, 201, '{}', now() - ?::interval, now() - ?::interval,
                        ?, ?, ?)""")) {
            ps.setString(1, id);
            ps.setString(2, chargeId);
            ps.setString(3, clientId);
            ps.setString(4, null); // keys are not stored
            ps.setLong(5, amount);
            ps.setString(6, status);
            ps.setString(7, age);
            ps.setString(8, age);
            ps.setString(9, refundStatus);
            ps.setString(10, "re_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24));
            ps.setString(11, dev.chargeonce.testing.TestKeys.refundIdentity(clientId, key));
            ps.executeUpdate();
        }
        return id;
    }

    /** A row made through the API, as if it had been made and answered {@code age} ago. */
    private void age(String table, String id, String age) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE " + table + " SET created_at = now() - ?::interval, finished_at = now() - ?::interval WHERE id = ?")) {
            ps.setString(1, age);
            ps.setString(2, age);
            ps.setString(3, id);
            assertEquals(1, ps.executeUpdate(), table + " " + id);
        }
    }

    private long countById(String table, String id) throws Exception {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + table + " WHERE id = ?")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private long reserved(String chargeId) throws Exception {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT amount_reserved FROM stripe_intents WHERE id = ?")) {
            ps.setString(1, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next(), "charge " + chargeId);
                return rs.getLong(1);
            }
        }
    }

    private static String charge(String body) {
        Response charged = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body(body).when().post("/v1/charges");
        assertEquals(201, charged.statusCode(), charged.asString());
        return charged.jsonPath().getString("id");
    }

    private static Response refund(String chargeId, String body) {
        return given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body(body).when().post("/v1/charges/" + chargeId + "/refunds");
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

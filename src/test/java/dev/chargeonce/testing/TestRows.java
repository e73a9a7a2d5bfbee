package dev.chargeonce.testing;

import static io.restassured.RestAssured.given;

import dev.chargeonce.charge.ChargeRequestParser;
import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.idempotency.RowIds;
import dev.chargeonce.stripe.StripeKeys;
import io.agroal.api.AgroalDataSource;
import io.restassured.http.ContentType;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/** Rows made by hand for the @QuarkusTest suites, as a crash or an outage would have left them. */
public final class TestRows {

    private TestRows() {
    }

    /**
     * A charge a crash left a day ago (claimed, never answered, lease long expired, past the key horizon), then
     * parked by the client's retry, which finds nothing at Stripe and must never re-send the key: the row an
     * operator resolves. Returns its id.
     */
    public static String parkedCharge(AgroalDataSource primary, String clientId, String apiKey, String key, String body) throws SQLException {
        String chargeId = abandonedCharge(primary, clientId, key, body);
        given().header("Authorization", "Bearer " + apiKey).header("Idempotency-Key", key).contentType(ContentType.JSON)
                .body(body).post("/v1/charges").then().statusCode(503)
                .body("error.code", org.hamcrest.Matchers.equalTo("charge_under_reconciliation"));
        return chargeId;
    }

    /**
     * A charge a crash left a day ago (claimed, never answered, lease long expired, past the key horizon): the next
     * request with its key parks it. Returns its id.
     */
    public static String abandonedCharge(AgroalDataSource primary, String clientId, String key, String body) throws SQLException {
        String chargeId = RowIds.next("chg_");
        String canonical = ChargeRequestParser.parse(body.getBytes(StandardCharsets.UTF_8)).canonicalJson();
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                            lease_until, stripe_key_first_sent, created_at, stripe_identity)
                VALUES (?, ?, ?, ?, ?, 1000, 'usd', 'processing', now() - interval '1 hour',
                        now() - interval '25 hours', now() - interval '25 hours', ?)""")) {
            ps.setString(1, chargeId);
            ps.setString(2, clientId);
            ps.setString(3, null); // keys are not stored: the identity finds the row
            ps.setString(4, Fingerprint.of("POST", "/v1/charges", canonical).stored());
            ps.setString(5, canonical);
            ps.setString(6, dev.chargeonce.testing.TestKeys.identity(clientId, key));
            ps.executeUpdate();
        }
        return chargeId;
    }
}

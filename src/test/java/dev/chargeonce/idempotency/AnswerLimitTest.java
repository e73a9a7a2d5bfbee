package dev.chargeonce.idempotency;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.charge.ChargeRequestParser;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * Stored answers are bounded (64 KiB by default): a request whose answer could exceed the bound is refused before
 * any claim, with nothing stored and nothing sent to Stripe; a key that already holds a row still replays it.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class AnswerLimitTest {

    @Inject
    AgroalDataSource primary;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    /** Metadata of {@code keys} keys, each value 500 euro signs: 1,500 bytes of UTF-8 a key. */
    static String metadata(int keys) {
        StringBuilder json = new StringBuilder("{");
        for (int i = 0; i < keys; i++) {
            json.append(i == 0 ? "" : ",").append("\"k").append(i).append("\":\"").append("€".repeat(500)).append('"');
        }
        return json.append('}').toString();
    }

    static String charge(int metadataKeys) {
        return "{\"amount\": 900, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"metadata\": "
                + metadata(metadataKeys) + "}";
    }

    static Response post(String path, String key, String body) {
        return given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(body).post(path);
    }

    long rows(String key) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT (SELECT count(*) FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?)"
                        + " + (SELECT count(*) FROM stripe_refunds WHERE client_id = ? AND stripe_identity = ?)")) {
            ps.setString(1, ACME);
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            ps.setString(3, ACME);
            ps.setString(4, dev.chargeonce.testing.TestKeys.refundIdentity(ACME, key));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    @Test
    void anAnswerThatCouldExceedTheBoundIsRefusedBeforeAnyClaim() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        // 30 keys: about 46 KB echoed, within the bound with the answer's own reserve; its answer is kept whole.
        String fits = UUID.randomUUID().toString();
        Response kept = post("/v1/charges", fits, charge(30));
        kept.then().statusCode(201);
        assertTrue(kept.asByteArray().length <= 65_536, "the stored answer is within the bound: " + kept.asByteArray().length);
        assertEquals(kept.asString(), post("/v1/charges", fits, charge(30)).then().statusCode(201).extract().asString());

        // 40 keys: about 61 KB echoed, so the answer could pass 64 KiB: refused, never truncated later.
        long creates = stripe.createRequests();
        String tooLarge = UUID.randomUUID().toString();
        post("/v1/charges", tooLarge, charge(40)).then().statusCode(400)
                .body("error.type", equalTo("invalid_request_error")).body("error.code", equalTo("answer_too_large"));
        assertEquals(0, rows(tooLarge), "nothing was claimed");
        assertEquals(creates, stripe.createRequests(), "Stripe was not called");

        // The same for a refund's metadata.
        String chargeId = kept.jsonPath().getString("id");
        String refundKey = UUID.randomUUID().toString();
        post("/v1/charges/" + chargeId + "/refunds", refundKey, "{\"amount\": 100, \"metadata\": " + metadata(40) + "}")
                .then().statusCode(400).body("error.code", equalTo("answer_too_large"));
        assertEquals(0, rows(refundKey));
        post("/v1/charges/" + chargeId + "/refunds", refundKey, "{\"amount\": 100}").then().statusCode(201);
    }

    @Test
    void aKeyThatAlreadyHoldsARowReplaysItWhateverTheBound() throws Exception {
        // A row claimed when the bound was larger (or before it existed): its retries replay, they are not refused.
        String key = UUID.randomUUID().toString();
        Response first = post("/v1/charges", key, charge(1));
        first.then().statusCode(201);
        String large = charge(40);
        String canonical = ChargeRequestParser.parse(large.getBytes(StandardCharsets.UTF_8)).canonicalJson();
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE stripe_intents SET fingerprint = ?, request = ? WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, Fingerprint.of("POST", "/v1/charges", canonical).stored());
            ps.setString(2, canonical);
            ps.setString(3, ACME);
            ps.setString(4, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            assertEquals(1, ps.executeUpdate());
        }
        Response retry = post("/v1/charges", key, large);
        retry.then().statusCode(201).header("Idempotent-Replayed", "true");
        assertEquals(first.asString(), retry.asString());
    }
}

package dev.chargeonce.idempotency;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * Fingerprints carry their version: a retry of a request claimed under an older version (by an older release, or
 * before the canonical form changed) is compared in that version, so it replays instead of becoming a 422.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class FingerprintVersionsTest {

    static final String BODY = "{\"amount\": 1300, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    @Inject
    AgroalDataSource primary;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Test
    void everyVersionIsPinned() {
        // The digests a version stands for never change: rows written years ago are compared with them.
        Fingerprint f = Fingerprint.of("POST", "/v1/charges", "{\"amount\":100}");
        assertEquals("6f867d59dbefa832df1e1ca1e012d55ea0287c12437047a65c38208d69573b99", f.stored(1));
        assertEquals("v2:810f29b358214c43fdc97aaf06d0df3e0a8317ddc628825d121e94ea6ebb809f", f.stored(2));
        assertEquals(f.stored(Fingerprint.LATEST_VERSION), f.stored());
        assertTrue(f.matches(f.stored(1)) && f.matches(f.stored(2)));
        Fingerprint other = Fingerprint.of("POST", "/v1/charges", "{\"amount\":101}");
        assertFalse(other.matches(f.stored(1)) || other.matches(f.stored(2)));
        assertThrows(Fingerprint.UnknownFingerprintVersionException.class, () -> f.matches("v3:" + "0".repeat(64)));
        assertThrows(Fingerprint.UnknownFingerprintVersionException.class, () -> f.matches("x:1"));
    }

    static Response post(String key, String body) {
        return given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(body).post("/v1/charges");
    }

    String storedFingerprint(String key) throws Exception {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT fingerprint FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, ACME);
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return rs.getString(1);
            }
        }
    }

    void rewriteFingerprint(String key, String stored) throws Exception {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("UPDATE stripe_intents SET fingerprint = ? WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, stored);
            ps.setString(2, ACME);
            ps.setString(3, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            assertEquals(1, ps.executeUpdate());
        }
    }

    @Test
    void aRowOfTheOldVersionStillReplaysItsOwnRequestAndRefusesAnother() throws Exception {
        String key = UUID.randomUUID().toString();
        Response first = post(key, BODY);
        first.then().statusCode(201);
        String canonical = "{\"amount\":1300,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}";
        String written = storedFingerprint(key);
        assertEquals(Fingerprint.of("POST", "/v1/charges", canonical).stored(1), written,
                "this release writes version 1 by default: the release before it reads nothing else (rolling deploys)");

        // As the next release (writing version 2) wrote it: this one compares it in version 2 and replays.
        rewriteFingerprint(key, Fingerprint.of("POST", "/v1/charges", canonical).stored(2));
        long creates = new SandboxControl(sandboxBase).createRequests();
        Response retry = post(key, BODY.replace("1300, ", "1300,  ")); // the same request, spelled differently
        retry.then().statusCode(201).header("Idempotent-Replayed", "true");
        assertEquals(first.asString(), retry.asString());
        post(key, BODY.replace("1300", "1301")).then().statusCode(422).body("error.code", equalTo("idempotency_key_reused"));
        assertEquals(creates, new SandboxControl(sandboxBase).createRequests(), "nothing was sent to Stripe");
    }

    @Test
    void aVersionThisReleaseCannotComputeIsNeverGuessedAt() throws Exception {
        String key = UUID.randomUUID().toString();
        post(key, BODY).then().statusCode(201);
        rewriteFingerprint(key, "v9:" + "0".repeat(64)); // written by a newer release, then rolled back
        long creates = new SandboxControl(sandboxBase).createRequests();
        Response retry = post(key, BODY);
        assertEquals(500, retry.statusCode(), "neither a replay nor a 422 can be told: " + retry.asString());
        assertEquals("api_error", retry.jsonPath().getString("error.type"));
        assertEquals(creates, new SandboxControl(sandboxBase).createRequests(), "and nothing is charged");
    }
}

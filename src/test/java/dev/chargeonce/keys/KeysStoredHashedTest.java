package dev.chargeonce.keys;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.TestClients;
import dev.chargeonce.testing.TestKeys;
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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/**
 * Keys stored hashed: what the database keeps of a client's Idempotency-Key is a keyed hash of (client, key), never
 * the key, nor a hash anybody could recompute from a guess. A dump of both tables is searched for the key and for
 * everything a guess of it gives without the secret; the key still works for replays and its status, because the
 * client presents it.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class KeysStoredHashedTest {

    @Inject
    AgroalDataSource primary;

    @Test
    void aDumpOfTheTablesTellsNothingOfAGuessableKey() throws Exception {
        // Guessable on purpose: an order number, as many clients use.
        String key = "order-" + ThreadLocalRandom.current().nextInt(1_000_000, 10_000_000);
        String refundKey = "refund-" + key;
        Response charged = IdempotencyKeysTest.charge(key);
        assertEquals(201, charged.statusCode(), charged.asString());
        String chargeId = charged.jsonPath().getString("id");
        Response refunded = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", refundKey)
                .contentType(ContentType.JSON).body("{\"amount\": 100}").post("/v1/charges/" + chargeId + "/refunds");
        assertEquals(201, refunded.statusCode(), refunded.asString());

        // The key works as before: replays, and its status.
        assertEquals("true", IdempotencyKeysTest.charge(key).header("Idempotent-Replayed"));
        assertEquals("completed", IdempotencyKeysTest.status(key).jsonPath().getString("status"));

        List<String> dump = dump(chargeId);
        assertEquals(2, dump.size(), "the charge's row and its refund's: " + dump);
        assertTrue(dump.get(0).contains(TestKeys.identity(ACME, key)), "the charge's row carries the key's keyed identity: " + dump.get(0));
        for (String guess : List.of(key, refundKey,
                // what the releases before V1.13.0 stored: the unkeyed hash of (client, key) anyone can recompute
                Fingerprint.sha256Hex(ACME + "\n" + key).substring(0, 48),
                Fingerprint.sha256Hex("refund\n" + ACME + "\n" + refundKey).substring(0, 48),
                Fingerprint.sha256Hex(key).substring(0, 16), TestClients.sha256(key).substring(0, 16))) {
            for (String row : dump) {
                assertFalse(row.contains(guess), "a row gives away '" + guess + "': " + row);
            }
        }
    }

    /** Every column of the charge's row and of its refunds' rows, as text. */
    private List<String> dump(String chargeId) throws Exception {
        List<String> rows = new ArrayList<>();
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT t::text FROM stripe_intents t WHERE id = ? UNION ALL SELECT r::text FROM stripe_refunds r WHERE charge_id = ?")) {
            ps.setString(1, chargeId);
            ps.setString(2, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(rs.getString(1));
                }
            }
        }
        return rows;
    }
}

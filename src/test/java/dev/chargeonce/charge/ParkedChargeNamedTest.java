package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.TestRows;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * A charge waiting for an operator is named in every answer about its key: the {@code 503
 * charge_under_reconciliation} (the one that parks it and every later one) and the key's status carry the charge's
 * id, which is what the client quotes to support and what the console finds the charge by.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ParkedChargeNamedTest {

    @Inject
    AgroalDataSource primary;

    @Test
    void theParkedChargesAnswersNameIt() throws Exception {
        String key = UUID.randomUUID().toString();
        String chargeId = TestRows.abandonedCharge(primary, ACME, key, ChargeApiTest.VISA);

        Response parking = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertEquals(503, parking.statusCode(), parking.asString());
        assertEquals("charge_under_reconciliation", parking.jsonPath().getString("error.code"));
        assertEquals(chargeId, parking.jsonPath().getString("error.charge"), "the answer that parks it names it: " + parking.asString());

        Response parked = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertEquals(503, parked.statusCode(), parked.asString());
        assertEquals(chargeId, parked.jsonPath().getString("error.charge"), "a later retry's answer names it: " + parked.asString());

        Response status = given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/idempotency-keys/" + key);
        assertEquals(200, status.statusCode(), status.asString());
        assertEquals("under_reconciliation", status.jsonPath().getString("status"));
        assertEquals(chargeId, status.jsonPath().getString("charge"), status.asString());
    }
}

package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.not;
import static org.hamcrest.Matchers.startsWith;

import dev.chargeonce.testing.Management;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** What an operator relies on: the metrics exist with low-cardinality tags, request ids, health. */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ObservabilityTest {

    @Test
    void chargePathMetricsAreExported() {
        String key = UUID.randomUUID().toString();
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(201);
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(201);
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA.replace("1000", "1001")).then().statusCode(422);

        Management.given().get("/q/metrics").then().statusCode(200)
                .body(containsString("chargeonce_charges_total{outcome=\"succeeded\""))
                .body(containsString("chargeonce_replays_total"))
                .body(containsString("chargeonce_mismatches_total"))
                .body(containsString("chargeonce_stripe_call_seconds_bucket"))
                .body(containsString("chargeonce_db_statement_seconds_bucket{statement=\"claim\""))
                .body(containsString("chargeonce_db_statement_seconds_bucket{statement=\"finish\""))
                .body(containsString("chargeonce_stripe_circuit_open{circuit=\"stripe-create\"}"))
                // Fault Tolerance's own meters are off (a lookup per Stripe call): the alerts use the line above
                .body(not(containsString("ft_")))
                .body(containsString("chargeonce_processing_expired_rows"))
                // never a key, a client or an amount as a tag value
                .body(not(containsString(key)))
                .body(not(containsString("client_id=")));
    }

    @Test
    void everyAnswerCarriesARequestId() {
        given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges").then().statusCode(200)
                .header("X-Request-Id", startsWith("req_"));
        given().header("Authorization", "Bearer " + ACME_KEY).header("X-Request-Id", "trace-123").get("/v1/charges")
                .then().header("X-Request-Id", equalTo("trace-123"));
        given().get("/v1/charges").then().statusCode(401).header("X-Request-Id", startsWith("req_"));
    }

    @Test
    void healthReportsTheDatabase() {
        Management.given().get("/q/health/ready").then().statusCode(200).body(containsString("Database connections health check"));
        Management.given().get("/q/health/live").then().statusCode(200);
    }
}

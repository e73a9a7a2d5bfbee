package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Stripe answers 500 for a key and replays that 500 for the key: the service must look the payment up instead
 * of re-sending, and may use a new Stripe key only once the lookup proved nothing was created.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class StripeUnknownOutcomeTest {

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
    }

    @AfterEach
    void tearDown() {
        stripe.clearFaults();
    }

    @Test
    void stripe500AfterChargingIsResolvedByLookupWithoutASecondCharge() {
        String key = UUID.randomUUID().toString();
        stripe.faults("fail_after=1");
        long creates = stripe.createRequests();
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503)
                .header("Retry-After", notNullValue())
                .body("error.code", equalTo("stripe_outcome_unknown"));
        assertEquals(creates + 1, stripe.createRequests(), "one create was sent; a 5xx is not re-sent blindly");

        Response retry = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        retry.then().statusCode(201);
        String chargeId = retry.jsonPath().getString("id");
        List<JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size(), "the payment made before the 500 is the only one");
        assertEquals(intents.get(0).get("id").asText(), retry.jsonPath().getString("payment_intent"));
        assertEquals("1", intents.get(0).get("metadata").get("chargeonce_attempt").asText(),
                "resolved by lookup: no second attempt was ever sent");
        assertEquals(retry.asString(), ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).asString());
    }

    @Test
    void stripe500BeforeChargingEndsInExactlyOnePayment() {
        String key = UUID.randomUUID().toString();
        stripe.faults("fail_before=1");
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503)
                .body("error.code", equalTo("stripe_outcome_unknown"));

        Response retry = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        retry.then().statusCode(201);
        String chargeId = retry.jsonPath().getString("id");
        List<JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size(), "exactly one payment in the end");
        assertEquals("2", intents.get(0).get("metadata").get("chargeonce_attempt").asText(),
                "the second attempt, with a new Stripe key, only after the lookup proved the first created nothing");
    }

    @Test
    void rateLimitedByStripeIsSentAgainByTheServiceWithinTheRequestsWait() {
        String key = UUID.randomUUID().toString();
        long before = stripe.createRequests();
        stripe.faults("rate_limit=1");
        // Stripe's 429 is never executed: the service sends the same key again once its budget allows.
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(201);
        assertEquals(1, stripe.intentsFor(ACME, key).size());
        assertEquals(2, stripe.createRequests() - before, "the refused create and the one sent again");
    }

    @Test
    void rateLimitedByStripeForLongerThanTheWaitIsNotChargedAndTheNextRetryProceedsAtOnce() {
        String key = UUID.randomUUID().toString();
        stripe.faults("rate_limit=100000");
        try {
            ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503)
                    .header("Retry-After", org.hamcrest.Matchers.notNullValue())
                    .body("error.code", equalTo("stripe_rate_limited"))
                    .body("error.message", org.hamcrest.Matchers.containsString("nothing was charged"));
        } finally {
            stripe.clearFaults();
        }
        // The lease was released because Stripe provably did not execute: no 409, no waiting for the lease.
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(201);
        assertEquals(1, stripe.intentsFor(ACME, key).size());
    }
}

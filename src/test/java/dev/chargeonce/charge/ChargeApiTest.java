package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static dev.chargeonce.testing.TestClients.GLOBEX;
import static dev.chargeonce.testing.TestClients.GLOBEX_KEY;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.path.json.JsonPath;
import io.restassured.response.Response;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ChargeApiTest {

    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", "
            + "\"metadata\": {\"order_id\": \"O-123\"}}";

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
    }

    /**
     * Retries as a client would while the answer says "retry later" (409, or 503 other than
     * {@code charge_under_reconciliation}, which no retry changes), at most {@code tries} times.
     */
    static Response retryWhileNotFinal(String key, String body, int tries) throws InterruptedException {
        Response answer = null;
        for (int i = 0; i < tries; i++) {
            answer = post(ACME_KEY, key, body);
            boolean retryLater = answer.statusCode() == 409 || (answer.statusCode() == 503
                    && !"charge_under_reconciliation".equals(answer.jsonPath().getString("error.code")));
            if (!retryLater) {
                return answer;
            }
            Thread.sleep(100);
        }
        return answer;
    }

    static Response post(String apiKey, String key, String body) {
        return given().header("Authorization", "Bearer " + apiKey).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(body)
                .when().post("/v1/charges");
    }

    @Test
    void chargeIsCreatedOnceAndEveryRetryIsTheIdenticalReplay() {
        String key = UUID.randomUUID().toString();
        Response first = post(ACME_KEY, key, VISA);
        first.then().statusCode(201)
                .header("Idempotent-Replayed", nullValue())
                .body("status", equalTo("succeeded"))
                .body("amount", equalTo(1000))
                .body("currency", equalTo("usd"))
                .body("metadata.order_id", equalTo("O-123"));
        String chargeId = first.jsonPath().getString("id");
        String paymentIntent = first.jsonPath().getString("payment_intent");
        long createsAfterFirst = stripe.createRequests();

        for (int i = 0; i < 3; i++) {
            Response retry = post(ACME_KEY, key, VISA);
            assertEquals(201, retry.statusCode());
            assertEquals("true", retry.header("Idempotent-Replayed"));
            assertEquals(first.asString(), retry.asString(), "a replay is byte for byte the first answer");
        }
        // Key order in the body does not make it another request.
        Response reordered = post(ACME_KEY, key,
                "{\"metadata\": {\"order_id\": \"O-123\"}, \"payment_method\": \"pm_card_visa\", \"currency\": \"usd\", \"amount\": 1000}");
        assertEquals(first.asString(), reordered.asString());

        assertEquals(createsAfterFirst, stripe.createRequests(), "replays never reach Stripe");
        List<?> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size());
        assertEquals(paymentIntent, stripe.intentsFor(ACME, key).get(0).get("id").asText());
    }

    @Test
    void sameKeyWithAnotherAmountIs422AndChargesNothingMore() {
        String key = UUID.randomUUID().toString();
        String chargeId = post(ACME_KEY, key, VISA).then().statusCode(201).extract().path("id");
        long creates = stripe.createRequests();

        post(ACME_KEY, key, VISA.replace("1000", "2000")).then().statusCode(422)
                .body("error.type", equalTo("idempotency_error"))
                .body("error.code", equalTo("idempotency_key_reused"))
                .body("error.param", equalTo("Idempotency-Key"));

        assertEquals(creates, stripe.createRequests());
        assertEquals(1, stripe.intentsFor(ACME, key).size());
        // The original answer is still the one replayed.
        post(ACME_KEY, key, VISA).then().statusCode(201).header("Idempotent-Replayed", "true").body("id", equalTo(chargeId));
    }

    @Test
    void declineIs402AndIsReplayedWithoutCallingStripeAgain() {
        String key = UUID.randomUUID().toString();
        String body = VISA.replace("pm_card_visa", "pm_card_chargeDeclined");
        Response first = post(ACME_KEY, key, body);
        first.then().statusCode(402)
                .body("error.type", equalTo("card_error"))
                .body("error.code", equalTo("card_declined"))
                .body("error.decline_code", equalTo("generic_decline"));
        long creates = stripe.createRequests();

        Response retry = post(ACME_KEY, key, body);
        assertEquals(402, retry.statusCode());
        assertEquals("true", retry.header("Idempotent-Replayed"));
        assertEquals(first.asString(), retry.asString());
        assertEquals(creates, stripe.createRequests(), "a cached decline does not call Stripe");
    }

    @Test
    void insufficientFundsCarriesItsDeclineCode() {
        post(ACME_KEY, UUID.randomUUID().toString(), VISA.replace("pm_card_visa", "pm_card_visa_chargeDeclinedInsufficientFunds"))
                .then().statusCode(402).body("error.decline_code", equalTo("insufficient_funds"));
    }

    @Test
    void authenticationRequiredIs202WithWhatTheFrontEndNeedsAndIsReplayed() {
        String key = UUID.randomUUID().toString();
        String body = VISA.replace("pm_card_visa", "pm_card_authenticationRequired");
        Response first = post(ACME_KEY, key, body);
        first.then().statusCode(202).body("status", equalTo("requires_action"))
                .body("client_secret", org.hamcrest.Matchers.notNullValue())
                .body("next_action.type", equalTo("use_stripe_sdk"));
        assertEquals(first.asString(), post(ACME_KEY, key, body).asString());
    }

    @Test
    void twoClientsWithTheSameKeyGetTwoIndependentCharges() {
        String key = "order-" + UUID.randomUUID();
        Response acme = post(ACME_KEY, key, VISA);
        Response globex = post(GLOBEX_KEY, key, VISA.replace("1000", "7777"));
        acme.then().statusCode(201);
        globex.then().statusCode(201).body("amount", equalTo(7777));
        String acmeId = acme.jsonPath().getString("id");
        String globexId = globex.jsonPath().getString("id");
        assertNotEquals(acmeId, globexId);
        assertNotEquals(acme.jsonPath().getString("payment_intent"), globex.jsonPath().getString("payment_intent"));
        assertEquals(1, stripe.intentsFor(ACME, key).size());
        assertEquals(1, stripe.intentsFor(GLOBEX, key).size());

        // Each replay is the client's own answer.
        assertEquals(acme.asString(), post(ACME_KEY, key, VISA).asString());
        assertEquals(globex.asString(), post(GLOBEX_KEY, key, VISA.replace("1000", "7777")).asString());

        // And each client sees only its own charges.
        given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + acmeId).then().statusCode(200)
                .body("id", equalTo(acmeId)).body("amount", equalTo(1000));
        given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + globexId).then().statusCode(404)
                .body("error.code", equalTo("resource_missing"));
        given().header("Authorization", "Bearer " + GLOBEX_KEY).get("/v1/charges/" + acmeId).then().statusCode(404);
        JsonPath acmeList = given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges?limit=100")
                .then().statusCode(200).extract().jsonPath();
        assertEquals(List.of(), acmeList.getList("data.findAll { it.id == '" + globexId + "' }"));
    }

    @Test
    void listIsNewestFirstAndLimited() {
        String older = post(ACME_KEY, UUID.randomUUID().toString(), VISA).then().statusCode(201).extract().path("id");
        String newer = post(ACME_KEY, UUID.randomUUID().toString(), VISA).then().statusCode(201).extract().path("id");
        JsonPath page = given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges?limit=2")
                .then().statusCode(200).body("object", equalTo("list")).extract().jsonPath();
        assertEquals(List.of(newer, older), page.getList("data.id"));
        given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges?limit=0").then().statusCode(400)
                .body("error.param", equalTo("limit"));
    }

    @Test
    void stripeDroppingTheConnectionAfterChargingEndsInOneCharge() {
        String key = UUID.randomUUID().toString();
        // Stripe charges on the first try and every answer is lost on the way back: all three tries of the call
        // (the first and two fault-tolerance retries, the JDK's silent re-send being off) die without an answer.
        stripe.plan("drop", "drop", "drop");
        long creates = stripe.createRequests();
        Response first = post(ACME_KEY, key, VISA);
        assertEquals(503, first.statusCode(), "an unknown outcome is a 503, never a final answer: " + first.asString());
        assertEquals("stripe_outcome_unknown", first.jsonPath().getString("error.code"));
        assertNotEquals(null, first.header("Retry-After"));
        assertEquals(1, stripe.intentsFor(ACME, key).size(), "the first try did charge");
        assertEquals(creates + 3, stripe.createRequests(), "three tries were sent, each its own request");

        // The retry the 503 asks for re-sends the same Stripe key, and Stripe answers with the payment it made.
        Response retry = post(ACME_KEY, key, VISA);
        assertEquals(201, retry.statusCode(), retry.asString());
        List<com.fasterxml.jackson.databind.JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size(), "one PaymentIntent, whatever the retries: a retry never gets a fresh Stripe key");
        assertEquals(intents.get(0).get("id").asText(), retry.jsonPath().getString("payment_intent"));
        assertEquals(intents.get(0).get("sandbox_idempotency_key").asText(),
                dev.chargeonce.stripe.StripeKeys.ofIdentity(false, dev.chargeonce.testing.TestKeys.identity(ACME, key), 1),
                "the Stripe key is derived from (client, key, attempt), nothing else");
        assertEquals(retry.asString(), post(ACME_KEY, key, VISA).asString());
    }

    @Test
    void getShowsTheChargeAsReplaysDo() {
        Response created = post(ACME_KEY, UUID.randomUUID().toString(), VISA);
        String id = created.jsonPath().getString("id");
        Response got = given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + id);
        got.then().statusCode(200);
        assertEquals(created.asString(), got.asString(), "GET of a succeeded charge shows what the POST answered");
        assertNull(got.header("Idempotent-Replayed"));
    }
}

package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.specification.RequestSpecification;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Every 4xx of the contract, in the one error shape, and none of them writes anything to Stripe. */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class RejectedRequestsTest {

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    SandboxControl stripe;
    long stripeRequestsBefore;

    @BeforeEach
    void countStripeRequests() {
        stripe = new SandboxControl(sandboxBase);
        stripeRequestsBefore = stripe.apiRequests();
    }

    @AfterEach
    void nothingReachedStripe() {
        assertEquals(stripeRequestsBefore, stripe.apiRequests(), "a rejected request must not reach Stripe");
    }

    static RequestSpecification authed() {
        return given().header("Authorization", "Bearer " + ACME_KEY);
    }

    static RequestSpecification withKey() {
        return authed().header("Idempotency-Key", UUID.randomUUID().toString());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "decimal amount            | {\"amount\": 10.5, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}        | amount",
            "string amount             | {\"amount\": \"100\", \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}     | amount",
            "exponent amount           | {\"amount\": 1e3, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}         | amount",
            "integral float amount     | {\"amount\": 1000.0, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}      | amount",
            "zero amount               | {\"amount\": 0, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}           | amount",
            "negative amount           | {\"amount\": -5, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}          | amount",
            "amount over Stripe's max  | {\"amount\": 100000000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}   | amount",
            "huge amount               | {\"amount\": 99999999999999999999999, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"} | amount",
            "missing amount            | {\"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}                          | amount",
            "uppercase currency        | {\"amount\": 100, \"currency\": \"USD\", \"payment_method\": \"pm_card_visa\"}         | currency",
            "long currency             | {\"amount\": 100, \"currency\": \"usdd\", \"payment_method\": \"pm_card_visa\"}        | currency",
            "missing currency          | {\"amount\": 100, \"payment_method\": \"pm_card_visa\"}                                | currency",
            "missing payment_method    | {\"amount\": 100, \"currency\": \"usd\"}                                               | payment_method",
            "numeric payment_method    | {\"amount\": 100, \"currency\": \"usd\", \"payment_method\": 42}                       | payment_method",
            "unknown field             | {\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"amout\": 1} | amout",
            "metadata not an object    | {\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"metadata\": [1]} | metadata",
            "metadata number value     | {\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"metadata\": {\"a\": 1}} | metadata[a]",
            "metadata reserved key     | {\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"metadata\": {\"chargeonce_charge_id\": \"x\"}} | metadata[chargeonce_charge_id]",
    })
    void invalidBodyIs400NamingTheField(String name, String body, String param) {
        withKey().contentType(ContentType.JSON).body(body).post("/v1/charges").then().statusCode(400)
                .body("error.type", equalTo("invalid_request_error"))
                .body("error.param", equalTo(param))
                .body("error.message", notNullValue());
    }

    @Test
    void tooManyMetadataKeysIs400() {
        StringBuilder metadata = new StringBuilder("{");
        // Stripe allows 50 keys and the service adds 3 of its own: 48 client keys would be a Stripe error later.
        for (int i = 0; i < 48; i++) {
            metadata.append(i == 0 ? "" : ",").append("\"k").append(i).append("\":\"v\"");
        }
        withKey().contentType(ContentType.JSON)
                .body("{\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"metadata\": " + metadata + "}}")
                .post("/v1/charges").then().statusCode(400).body("error.param", equalTo("metadata"));
    }

    @Test
    void lengthsCountCharactersNotUtf16Units() {
        // 40 emoji are 40 characters (80 UTF-16 units): a valid key by Stripe's count.
        String key = "\uD83D\uDCB3".repeat(40);
        authed().header("Idempotency-Key", UUID.randomUUID().toString()).contentType(ContentType.JSON)
                .body("{\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"metadata\": {\""
                        + key + "\": \"v\"}}")
                .post("/v1/charges").then().statusCode(201);
        stripeRequestsBefore = stripe.apiRequests();
    }

    @Test
    void metadataValueOverStripesLimitIs400() {
        withKey().contentType(ContentType.JSON)
                .body("{\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"metadata\": {\"k\": \""
                        + "v".repeat(501) + "\"}}")
                .post("/v1/charges").then().statusCode(400).body("error.param", equalTo("metadata[k]"));
    }

    @Test
    void malformedJsonAndDuplicateFieldsAre400() {
        withKey().contentType(ContentType.JSON).body("{\"amount\": 100,").post("/v1/charges").then().statusCode(400)
                .body("error.code", equalTo("body_not_json"));
        withKey().contentType(ContentType.JSON)
                .body("{\"amount\": 100, \"amount\": 200, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}")
                .post("/v1/charges").then().statusCode(400);
        withKey().contentType(ContentType.JSON).body("[1,2]").post("/v1/charges").then().statusCode(400)
                .body("error.code", equalTo("body_not_object"));
    }

    @Test
    void missingEmptyLongAndNonAsciiKeysAre400() {
        String body = ChargeApiTest.VISA;
        authed().contentType(ContentType.JSON).body(body).post("/v1/charges").then().statusCode(400)
                .body("error.code", equalTo("idempotency_key_missing")).body("error.param", equalTo("Idempotency-Key"));
        // An empty header reaches the service as no header at all; either way it is refused.
        authed().header("Idempotency-Key", "").contentType(ContentType.JSON).body(body).post("/v1/charges").then()
                .statusCode(400).body("error.param", equalTo("Idempotency-Key"));
        authed().header("Idempotency-Key", "k".repeat(256)).contentType(ContentType.JSON).body(body).post("/v1/charges")
                .then().statusCode(400).body("error.code", equalTo("idempotency_key_invalid"));
        authed().header("Idempotency-Key", "clé-ü").contentType(ContentType.JSON).body(body).post("/v1/charges").then()
                .statusCode(400).body("error.code", equalTo("idempotency_key_invalid"));
        authed().header("Idempotency-Key", "tab\there").contentType(ContentType.JSON).body(body).post("/v1/charges").then()
                .statusCode(400).body("error.code", equalTo("idempotency_key_invalid"));
    }

    @Test
    void keyOf255CharactersIsAccepted() {
        // The boundary itself is valid. It charges, so it resets the "nothing reached Stripe" baseline after.
        authed().header("Idempotency-Key", "k".repeat(255)).contentType(ContentType.JSON)
                .body(ChargeApiTest.VISA.replace("1000", "255")).post("/v1/charges").then().statusCode(201);
        stripeRequestsBefore = stripe.apiRequests();
    }

    @Test
    void missingOrWrongApiKeyIs401() {
        given().header("Idempotency-Key", "k1").contentType(ContentType.JSON).body(ChargeApiTest.VISA).post("/v1/charges")
                .then().statusCode(401).body("error.type", equalTo("authentication_error"));
        given().header("Authorization", "Bearer sk_wrong").header("Idempotency-Key", "k1").contentType(ContentType.JSON)
                .body(ChargeApiTest.VISA).post("/v1/charges").then().statusCode(401);
        given().header("Authorization", "Basic " + ACME_KEY).header("Idempotency-Key", "k1").contentType(ContentType.JSON)
                .body(ChargeApiTest.VISA).post("/v1/charges").then().statusCode(401);
        given().get("/v1/charges").then().statusCode(401).body("error.code", equalTo("invalid_api_key"));
    }

    @Test
    void nonJsonBodyIs415() {
        withKey().contentType(ContentType.TEXT).body("amount=100").post("/v1/charges").then().statusCode(415)
                .body("error.code", equalTo("unsupported_media_type"));
        withKey().contentType("application/x-www-form-urlencoded").body("amount=100").post("/v1/charges").then().statusCode(415);
    }

    @Test
    void bodyOver64KiBIs413() {
        String big = "{\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", \"description\": \""
                + "x".repeat(70 * 1024) + "\"}";
        withKey().contentType(ContentType.JSON).body(big).post("/v1/charges").then().statusCode(413)
                .body("error.code", equalTo("body_too_large"));
    }
}

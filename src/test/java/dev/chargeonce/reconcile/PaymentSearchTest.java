package dev.chargeonce.reconcile;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static dev.chargeonce.testing.TestClients.GLOBEX;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.idempotency.KeyIdentities;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import dev.chargeonce.testing.TestRows;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The operators' search, through the admin API and the console's search page: a charge and its refund found by
 * every name they have (their ids, their Idempotency-Keys, the PaymentIntent, the Stripe refund, the customer, the
 * client), a key narrowed to its client or not, a key hashed under version 0, nothing found for what names nothing,
 * and the pages' amounts and times as operators read them.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class PaymentSearchTest {

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Inject
    AgroalDataSource primary;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
    }

    static Response post(String path, String key, String body) {
        return given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(body).post(path);
    }

    static List<Map<String, Object>> search(String q, String client) {
        var request = ReconciliationTest.operator().queryParam("q", q);
        if (client != null) {
            request.queryParam("client", client);
        }
        return request.get("/admin/v1/search").then().statusCode(200).extract().jsonPath().getList("data");
    }

    /** The hit of {@code id} in a search's answer, and how it matched; fails when the search did not find it. */
    static String matchedBy(List<Map<String, Object>> hits, String id) {
        return hits.stream().filter(h -> id.equals(h.get("id"))).map(h -> (String) h.get("matched_by")).findFirst()
                .orElseThrow(() -> new AssertionError(id + " not found in " + hits));
    }

    @Test
    void aChargeAndItsRefundAreFoundByEveryNameTheyHave() {
        String customer = "cus_search" + UUID.randomUUID().toString().replace("-", "");
        stripe.customer(customer, ACME);
        String key = "order-" + UUID.randomUUID();
        Response charged = post("/v1/charges", key, "{\"amount\": 7232, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\","
                + " \"customer\": \"" + customer + "\"}");
        assertEquals(201, charged.statusCode(), charged.asString());
        String chargeId = charged.jsonPath().getString("id");
        String paymentIntent = charged.jsonPath().getString("payment_intent");
        String refundKey = "refund-" + UUID.randomUUID();
        Response refunded = post("/v1/charges/" + chargeId + "/refunds", refundKey, "{\"amount\": 1000}");
        assertTrue(refunded.statusCode() == 201 || refunded.statusCode() == 202, refunded.asString());
        String refundId = refunded.jsonPath().getString("id");
        String stripeRefund = refunded.jsonPath().getString("stripe_refund");

        assertEquals("id", matchedBy(search(chargeId, null), chargeId));
        assertEquals("id", matchedBy(search(refundId, null), refundId));
        assertEquals("idempotency_key", matchedBy(search(key, null), chargeId), "a key, hashed for every client");
        assertEquals("idempotency_key", matchedBy(search(key, ACME), chargeId), "a key, hashed for its client");
        assertTrue(search(key, GLOBEX).isEmpty(), "the key is acme's, not globex's");
        assertEquals("idempotency_key", matchedBy(search(refundKey, null), refundId), "a refund's key");
        assertEquals("payment_intent", matchedBy(search(paymentIntent, null), chargeId));
        assertEquals("stripe_refund", matchedBy(search(stripeRefund, null), refundId));
        assertEquals("customer", matchedBy(search(customer, null), chargeId));
        assertEquals("client", matchedBy(search(ACME, null), chargeId), "a client's latest charges");
        assertTrue(search("no-such-thing-" + UUID.randomUUID(), null).isEmpty());

        // the console: the search page links the charge, whose page tells its story with readable amounts and times
        String page = ReconciliationTest.operator().queryParam("q", key).get("/console/search").then().statusCode(200).extract().asString();
        assertTrue(page.contains("href=\"/console/rows/charge/" + chargeId + "\""), page);
        assertTrue(page.contains("$72.32"), page);
        assertEquals(1, page.split(Pattern.quote(key), -1).length - 1, "the key shows only in the search box: " + page);
        String story = ReconciliationTest.operator().get("/console/rows/charge/" + chargeId).then().statusCode(200).extract().asString();
        assertTrue(story.contains("$72.32") && story.contains("$10.00"), "the charge's and its refund's amounts: " + story);
        assertTrue(story.contains("href=\"/console/rows/refund/" + refundId + "\""), "its refund is linked");
        int claimed = story.indexOf("charge claimed");
        int answered = story.indexOf("answered 201");
        int refundClaimed = story.indexOf("refund " + refundId + " claimed");
        assertTrue(claimed > 0 && claimed < answered && answered < refundClaimed, "the story in time order: " + story);
        assertTrue(Pattern.compile("\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC").matcher(story).find(), "times to the second, in UTC");
        assertFalse(Pattern.compile("\\d\\d:\\d\\d:\\d\\d\\.\\d+Z?").matcher(story).find(), "no fractions of a second: " + story);
    }

    @Test
    void aZeroDecimalChargeIsShownInWholeUnits() {
        Response charged = post("/v1/charges", UUID.randomUUID().toString(),
                "{\"amount\": 7232, \"currency\": \"jpy\", \"payment_method\": \"pm_card_visa\"}");
        assertEquals(201, charged.statusCode(), charged.asString());
        String story = ReconciliationTest.operator().get("/console/rows/charge/" + charged.jsonPath().getString("id")).then()
                .statusCode(200).extract().asString();
        assertTrue(story.contains("¥7232"), story);
    }

    @Test
    void aParkedChargeIsFoundByTheIdItsAnswerNamedAndByItsKey() throws Exception {
        String key = UUID.randomUUID().toString();
        String chargeId = TestRows.parkedCharge(primary, ACME, ACME_KEY, key, ReconciliationTest.VISA);
        assertEquals("id", matchedBy(search(chargeId, null), chargeId));
        assertEquals("idempotency_key", matchedBy(search(key, null), chargeId));
    }

    @Test
    void aKeyHashedBeforeKeysHadSecretsIsFoundToo() throws Exception {
        // a row a release before keyed hashes wrote: its identity is the key's unkeyed hash (version 0)
        String key = UUID.randomUUID().toString();
        String chargeId = TestRows.abandonedCharge(primary, ACME, key, ReconciliationTest.VISA);
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE stripe_intents SET stripe_identity = ? WHERE id = ?")) {
            ps.setString(1, KeyIdentities.compute(KeyIdentities.UNKEYED, null, Operation.CHARGE, ACME, key));
            ps.setString(2, chargeId);
            assertEquals(1, ps.executeUpdate());
        }
        assertEquals("idempotency_key", matchedBy(search(key, null), chargeId));
    }

    @Test
    void theSearchIsForOperatorsOnlyAndNeedsAText() {
        given().queryParam("q", "chg_x").get("/admin/v1/search").then().statusCode(401);
        given().header("Authorization", "Bearer " + ACME_KEY).queryParam("q", "chg_x").get("/admin/v1/search").then().statusCode(401);
        ReconciliationTest.operator().get("/admin/v1/search").then().statusCode(400);
        ReconciliationTest.operator().queryParam("q", "x").queryParam("client", "nobody").get("/admin/v1/search").then().statusCode(400);
    }
}

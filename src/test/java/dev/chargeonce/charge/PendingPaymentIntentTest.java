package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * PaymentIntents that are not final yet are followed by id until they are, never re-sent as creates (Stripe would
 * only replay the stale answer): a bank debit {@code processing} is a {@code 202} the sync worker follows; a
 * {@code requires_payment_method} with no error is no decline.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class PendingPaymentIntentTest {

    static final String PROCESSING = ChargeApiTest.VISA.replace("pm_card_visa", "pm_sandbox_processing");

    @Inject
    AgroalDataSource primary;

    @Inject
    dev.chargeonce.recovery.PaymentSyncWorker sync;

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
        stripe.forgetSeeded();
    }

    @Test
    void aProcessingPaymentIsA202FollowedByIdNeverRecreated() throws Exception {
        String key = UUID.randomUUID().toString();
        Response first = ChargeApiTest.post(ACME_KEY, key, PROCESSING);
        assertEquals(202, first.statusCode(), first.asString());
        assertEquals("processing", first.jsonPath().getString("status"));
        String paymentIntent = stripe.intentsFor(ACME, key).get(0).get("id").asText();
        assertEquals(paymentIntent, rowPaymentIntent(key), "the PaymentIntent id is stored as soon as Stripe names it");
        long creates = stripe.createRequests();

        Response replay = ChargeApiTest.post(ACME_KEY, key, PROCESSING);
        assertEquals(first.asString(), replay.asString(), "the 202 is the key's answer, replayed");

        // No webhook here (none configured): the sync worker looks at the PaymentIntent by id when its time comes.
        stripe.settle(paymentIntent, "succeeded");
        makeDue(key);
        sync.syncOnce();
        given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + first.jsonPath().getString("id"))
                .then().statusCode(200).body("status", org.hamcrest.Matchers.equalTo("succeeded"))
                .body("payment_intent", org.hamcrest.Matchers.equalTo(paymentIntent));
        assertEquals(creates, stripe.createRequests(), "followed by retrieving the PaymentIntent, never by another create");
        assertEquals(1, stripe.intentsFor(ACME, key).size());
        assertEquals(first.asString(), ChargeApiTest.post(ACME_KEY, key, PROCESSING).asString());
    }

    @Test
    void aProcessingPaymentThatFailsShowsFailed() throws Exception {
        String key = UUID.randomUUID().toString();
        Response first = ChargeApiTest.post(ACME_KEY, key, PROCESSING);
        assertEquals(202, first.statusCode());
        stripe.settle(stripe.intentsFor(ACME, key).get(0).get("id").asText(), "requires_payment_method");
        makeDue(key);
        sync.syncOnce();
        given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + first.jsonPath().getString("id"))
                .then().statusCode(200).body("status", org.hamcrest.Matchers.equalTo("failed"));
    }

    private void makeDue(String key) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE stripe_intents SET recheck_at = now() - interval '1 second' WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, ACME);
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            assertEquals(1, ps.executeUpdate());
        }
    }

    @Test
    void aFoundPaymentIntentWaitingForAPaymentMethodWithoutAnErrorIsNotADecline() throws Exception {
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_before");
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503);
        // What a lookup may find: a PaymentIntent of this key that has no payment error (yet).
        long now = System.currentTimeMillis() / 1000;
        String found = stripe.seed("count=1&created_from=" + now + "&created_to=" + now + "&status=requires_payment_method"
                + "&metadata[chargeonce_key]=" + dev.chargeonce.testing.TestKeys.identity(ACME, key) + "&metadata[chargeonce_client_id]=" + ACME
                + "&metadata[chargeonce_attempt]=1&metadata[chargeonce_charge_id]=" + rowId(key)).get("last").asText();

        Response retry = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertNotEquals(402, retry.statusCode(), "no payment error, so no decline: " + retry.asString());
        assertEquals(503, retry.statusCode(), retry.asString());

        stripe.settle(found, "succeeded");
        Response done = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertEquals(201, done.statusCode(), done.asString());
        assertEquals(found, done.jsonPath().getString("payment_intent"));
        assertEquals(1, stripe.intentsFor(ACME, key).size());
    }

    private String rowPaymentIntent(String key) throws Exception {
        return rowColumn(key, "payment_intent_id");
    }

    private String rowId(String key) throws Exception {
        return rowColumn(key, "id");
    }

    private String rowColumn(String key, String column) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT " + column + " FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, ACME);
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }
}

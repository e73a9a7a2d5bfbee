package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The database loses the row after Stripe charged (a failover to an asynchronous standby, a point-in-time restore,
 * an operator's mistake): the PaymentIntent exists, the row does not. A retry of the same key claims a new row. It
 * must recover the original PaymentIntent or park the row for an operator; it must never make a second one.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class LostRowTest {

    @Inject
    AgroalDataSource primary;

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
    void aRetryAfterTheRowWasLostAnswersTheOriginalPaymentIntentUnderTheFirstChargeId() throws Exception {
        String key = UUID.randomUUID().toString();
        Response first = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        first.then().statusCode(201);
        String original = first.jsonPath().getString("payment_intent");
        String chargeId = first.jsonPath().getString("id");

        loseRow(key);
        Response after = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);

        assertEquals(201, after.statusCode(), after.asString());
        assertEquals(original, after.jsonPath().getString("payment_intent"), "the original PaymentIntent, recovered from Stripe");
        assertEquals(chargeId, after.jsonPath().getString("id"), "the charge id the first answer gave");
        assertChargeReadable(chargeId, original);
        assertOnlyPaymentIntent(key, original);
    }

    @Test
    void aLostRowWhoseKeyGotA500AfterChargingIsFoundNotChargedAgain() throws Exception {
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_after");
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503);
        Response resolved = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);
        assertEquals(201, resolved.statusCode(), resolved.asString());
        String original = resolved.jsonPath().getString("payment_intent");

        // Stripe now replays that 500 for the key, to anyone: a new row cannot tell what happened from the key alone.
        loseRow(key);
        Response after = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);

        // Found by the key's identity, searched back over the lost-history lookback.
        assertEquals(201, after.statusCode(), after.asString());
        assertFinalIsOriginalOrParked(after, original);
        assertOnlyPaymentIntent(key, original);
    }

    @Test
    void aLostRowThatHadMovedToASecondStripeAttemptIsRecovered() throws Exception {
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_before");
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503);
        Response resolved = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);
        assertEquals(201, resolved.statusCode(), resolved.asString());
        String original = resolved.jsonPath().getString("payment_intent");
        assertEquals("2", stripe.intentsFor(ACME, key).get(0).get("metadata").get("chargeonce_attempt").asText());

        loseRow(key);
        Response after = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);

        // Attempt 1's stored 500 sends the new row searching: the identity finds attempt 2's PaymentIntent.
        assertEquals(201, after.statusCode(), after.asString());
        assertFinalIsOriginalOrParked(after, original);
        assertOnlyPaymentIntent(key, original);
    }

    /**
     * The row is lost; the next request with the key carries another body (a client reusing its key by mistake):
     * Stripe refuses it (the key was first used with other parameters), the key's PaymentIntent says which request
     * came first, and the row takes that request on again. The other body is told 422; the original's retry gets
     * its 201 with the first charge id, and the charge is read under it.
     */
    @Test
    void aLostRowRetriedWithAnotherBodyFirstIsRefusedAndTheOriginalGetsItsAnswerBack() throws Exception {
        String key = UUID.randomUUID().toString();
        Response first = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        first.then().statusCode(201);
        String original = first.jsonPath().getString("payment_intent");
        String chargeId = first.jsonPath().getString("id");

        loseRow(key);
        Response other = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA.replace("1000", "2500"), 8);
        assertEquals(422, other.statusCode(), other.asString());
        assertEquals("idempotency_key_reused", other.jsonPath().getString("error.code"));

        Response again = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);
        assertEquals(201, again.statusCode(), again.asString());
        assertEquals(chargeId, again.jsonPath().getString("id"), "the first answer's charge id");
        assertEquals(original, again.jsonPath().getString("payment_intent"));
        assertEquals(1000, again.jsonPath().getInt("amount"));
        assertEquals(422, ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA.replace("1000", "2500")).statusCode(),
                "the other body stays refused");
        assertChargeReadable(chargeId, original);
        assertOnlyPaymentIntent(key, original);
    }

    /**
     * The row is lost; the next request with the key carries another body, and Stripe's edge fails its create (the
     * row stays in flight, its outcome unknown). Then the original PaymentIntent's event arrives (a redelivery, the
     * catch-up): it must not finish that row, since the PaymentIntent was made by the earlier request, not by this
     * one. The other body is told 422; the original's retry gets its 201 with the first charge id and amount.
     */
    @Test
    void anEventOfTheEarlierRequestsPaymentIntentDoesNotFinishTheRowOfAnotherBody() throws Exception {
        String key = UUID.randomUUID().toString();
        Response first = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        first.then().statusCode(201);
        String original = first.jsonPath().getString("payment_intent");
        String chargeId = first.jsonPath().getString("id");
        loseRow(key);

        String otherBody = ChargeApiTest.VISA.replace("1000", "2500");
        stripe.plan("edge", "edge", "edge", "edge", "edge", "edge");
        Response unknown = ChargeApiTest.post(ACME_KEY, key, otherBody);
        assertEquals(503, unknown.statusCode(), unknown.asString());
        stripe.clearFaults();

        String event = paymentIntentEvent("payment_intent.succeeded", stripe.paymentIntent(original));
        Response delivered = io.restassured.RestAssured.given().contentType("application/json; charset=utf-8").body(event)
                .header("Stripe-Signature", dev.chargeonce.sandbox.SandboxWebhooks.signatureHeader(event,
                        PostgresAndSandbox.WEBHOOK_SECRET, System.currentTimeMillis() / 1000))
                .post("/v1/webhooks/stripe");
        assertEquals(200, delivered.statusCode(), delivered.asString());

        Response other = ChargeApiTest.retryWhileNotFinal(key, otherBody, 8);
        assertEquals(422, other.statusCode(), other.asString());
        assertEquals("idempotency_key_reused", other.jsonPath().getString("error.code"));
        Response again = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);
        assertEquals(201, again.statusCode(), again.asString());
        assertEquals(chargeId, again.jsonPath().getString("id"), "the first answer's charge id");
        assertEquals(original, again.jsonPath().getString("payment_intent"));
        assertEquals(1000, again.jsonPath().getInt("amount"));
        assertOnlyPaymentIntent(key, original);
    }

    private static String paymentIntentEvent(String type, JsonNode paymentIntent) throws Exception {
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        com.fasterxml.jackson.databind.node.ObjectNode event = json.createObjectNode();
        event.put("id", "evt_lost" + UUID.randomUUID().toString().replace("-", "").substring(0, 20));
        event.put("object", "event");
        event.put("api_version", dev.chargeonce.sandbox.SandboxWebhooks.DEFAULT_API_VERSION);
        event.put("created", System.currentTimeMillis() / 1000);
        event.putObject("data").set("object", paymentIntent);
        event.put("livemode", false);
        event.put("type", type);
        return json.writeValueAsString(event);
    }

    private static void assertChargeReadable(String chargeId, String paymentIntent) {
        Response read = io.restassured.RestAssured.given().header("Authorization", "Bearer " + ACME_KEY)
                .get("/v1/charges/" + chargeId);
        assertEquals(200, read.statusCode(), read.asString());
        assertEquals(paymentIntent, read.jsonPath().getString("payment_intent"));
    }

    /**
     * The original row charged and got Stripe's stored 500, then was lost; the client comes back minutes later (the
     * original PaymentIntent is older than the new row's lookup window). The new row's first try of the key gets no
     * answer, the fault-tolerance retry gets the replayed 500: the row has sent the key, yet the 500 is not its own.
     */
    @Test
    void aLostRowWhoseNewFirstTryGotNoAnswerIsNotChargedAgain() throws Exception {
        String key = UUID.randomUUID().toString();
        String original = chargedWithStored500ThenLost(key);
        stripe.plan("drop");
        Response after = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);
        assertEquals(201, after.statusCode(), after.asString());
        assertFinalIsOriginalOrParked(after, original);
        assertOnlyPaymentIntent(key, original);
    }

    /** As above, but the new row's first holder died (kill -9) before it sent anything or reported anything. */
    @Test
    void aLostRowWhoseNewHolderCrashedBeforeSendingIsNotChargedAgain() throws Exception {
        String key = UUID.randomUUID().toString();
        String original = chargedWithStored500ThenLost(key);
        // Exactly what the claim leaves behind when its holder dies at once: the lease, run out.
        String canonical = ChargeRequestParser.parse(ChargeApiTest.VISA.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .canonicalJson();
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                            lease_until, stripe_sending_until, stripe_key_first_sent, created_at, stripe_identity)
                VALUES (?, ?, ?, ?, ?, 1000, 'usd', 'processing', now() - interval '1 second',
                        now() - interval '1 second', now() - interval '31 seconds', now() - interval '31 seconds', ?)""")) {
            ps.setString(1, dev.chargeonce.idempotency.RowIds.ofIdentity("chg_", dev.chargeonce.testing.TestKeys.identity(ACME, key)));
            ps.setString(2, ACME);
            ps.setString(3, null); // keys are not stored: the identity finds the row
            ps.setString(4, dev.chargeonce.idempotency.Fingerprint.of("POST", "/v1/charges", canonical).stored());
            ps.setString(5, canonical);
            ps.setString(6, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            assertEquals(1, ps.executeUpdate());
        }
        Response after = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);
        assertEquals(201, after.statusCode(), after.asString());
        assertFinalIsOriginalOrParked(after, original);
        assertOnlyPaymentIntent(key, original);
    }

    /**
     * A row is found by its identity (a hash of the client and the key) and every Stripe key it sends is derived from
     * the identity it stores: the raw key column plays no part in either (the step that lets the key itself leave
     * the table). A row whose key column holds something else entirely is still the key's row: the retry takes it
     * over and sends the Stripe key of the stored identity, and no second row is made.
     */
    @Test
    void aRowIsFoundByItsIdentityAndSendsTheStripeKeyOfIt() throws Exception {
        String key = UUID.randomUUID().toString();
        String identity = dev.chargeonce.testing.TestKeys.identity(ACME, key);
        String canonical = ChargeRequestParser.parse(ChargeApiTest.VISA.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .canonicalJson();
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                            lease_until, stripe_key_first_sent, created_at, stripe_identity)
                VALUES (?, ?, ?, ?, ?, 1000, 'usd', 'processing', now() - interval '1 second', now() - interval '31 seconds',
                        now() - interval '31 seconds', ?)""")) {
            ps.setString(1, dev.chargeonce.idempotency.RowIds.ofIdentity("chg_", dev.chargeonce.testing.TestKeys.identity(ACME, key)));
            ps.setString(2, ACME);
            ps.setString(3, null);
            ps.setString(4, dev.chargeonce.idempotency.Fingerprint.of("POST", "/v1/charges", canonical).stored());
            ps.setString(5, canonical);
            ps.setString(6, identity);
            assertEquals(1, ps.executeUpdate());
        }
        Response after = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 8);
        assertEquals(201, after.statusCode(), after.asString());
        List<JsonNode> sent = new ArrayList<>();
        stripe.ledger("key=" + identity).forEach(sent::add);
        assertEquals(1, sent.size(), "one PaymentIntent, under the stored identity");
        assertEquals(dev.chargeonce.stripe.StripeKeys.ofIdentity(false, identity, 1), sent.get(0).get("sandbox_idempotency_key").asText());
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, ACME);
            ps.setString(2, identity);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertEquals(1, rs.getInt(1), "the retry made no second row");
            }
        }
    }

    /** Charges under {@code key} with Stripe's stored 500 (charged first), loses the row, ages the payment 10 min. */
    private String chargedWithStored500ThenLost(String key) throws Exception {
        stripe.plan("fail_after");
        Response first = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA);
        assertEquals(503, first.statusCode(), first.asString());
        List<JsonNode> made = stripe.intentsFor(ACME, key);
        assertEquals(1, made.size(), "the original row charged");
        String original = made.get(0).get("id").asText();
        loseRow(key);
        stripe.backdate(original, java.time.Duration.ofMinutes(10));
        return original;
    }

    private void assertFinalIsOriginalOrParked(Response after, String original) {
        if (after.statusCode() == 201) {
            assertEquals(original, after.jsonPath().getString("payment_intent"), "the original PaymentIntent");
        } else {
            assertEquals(503, after.statusCode(), after.asString());
            assertEquals("charge_under_reconciliation", after.jsonPath().getString("error.code"), after.asString());
        }
    }

    private void assertOnlyPaymentIntent(String key, String original) {
        stripe.awaitIdle(java.time.Duration.ofSeconds(10));
        List<JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size(), "one PaymentIntent for the key, whatever the database forgot: " + intents);
        assertEquals(original, intents.get(0).get("id").asText());
        assertTrue(intents.get(0).get("status").asText().equals("succeeded"));
    }

    /** What a failover to an asynchronous standby does to the last commits. */
    private void loseRow(String key) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "DELETE FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, ACME);
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            assertEquals(1, ps.executeUpdate());
        }
    }
}

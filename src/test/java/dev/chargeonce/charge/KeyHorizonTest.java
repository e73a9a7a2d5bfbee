package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * Stripe forgets idempotency keys after 24 hours: a processing row whose Stripe key is older than the key horizon
 * (23 h) must never be re-sent as a create. Here such a row is made by hand (as a crash a day ago would leave it).
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class KeyHorizonTest {

    @Inject
    AgroalDataSource primary;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Test
    void aRowPastTheHorizonIsNeverResentAsACreate() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String key = UUID.randomUUID().toString();
        String chargeId = insertAbandonedRow(key, "25 hours");
        long creates = stripe.createRequests();

        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503)
                .body("error.code", equalTo("charge_under_reconciliation"));
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503)
                .body("error.code", equalTo("charge_under_reconciliation"));

        assertEquals(creates, stripe.createRequests(), "no create with a key Stripe may have forgotten");
        assertEquals(0, stripe.intentsFor(ACME, key).size());
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT status, needs_reconciliation FROM stripe_intents WHERE id = ?")) {
            ps.setString(1, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                assertEquals("processing", rs.getString(1), "not final: an operator reconciles it");
                assertTrue(rs.getBoolean(2), "parked for reconciliation");
            }
        }
    }

    @Test
    void aRowPastTheHorizonWhosePaymentExistsIsCompletedByLookup() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String key = UUID.randomUUID().toString();
        String chargeId = insertAbandonedRow(key, "25 hours");
        // The payment the crashed attempt made, a day ago, as Stripe still lists it.
        createAtStripeDirectly(key, chargeId, java.time.Instant.now().minusSeconds(25 * 3600 - 5));
        long creates = stripe.createRequests();

        String paymentIntent = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(201)
                .body("id", equalTo(chargeId)).extract().path("payment_intent");
        assertEquals(creates, stripe.createRequests(), "found by lookup, not re-created");
        assertEquals(stripe.intentsFor(ACME, key).get(0).get("id").asText(), paymentIntent);
    }

    @Test
    void aPaymentMadeByALateResendOfTheSameKeyIsFoundBeforeANewKeyIsUsed() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String key = UUID.randomUUID().toString();
        // The key was first sent two hours ago (that request was lost before reaching Stripe); re-sent just now,
        // Stripe charged and then answered 500. The PaymentIntent is two hours younger than the key's first send:
        // the lookup's window runs from the first send to the last one, not from the first send plus a little.
        stripe.plan("fail_after");
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503);
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE stripe_intents SET stripe_key_first_sent = stripe_key_first_sent - interval '2 hours',"
                        + " created_at = created_at - interval '2 hours' WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, ACME);
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            assertEquals(1, ps.executeUpdate());
        }

        String paymentIntent = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(201)
                .extract().path("payment_intent");
        assertEquals(1, stripe.intentsFor(ACME, key).size(), "found by lookup: no second attempt with a new Stripe key");
        assertEquals(stripe.intentsFor(ACME, key).get(0).get("id").asText(), paymentIntent);
        assertEquals("1", stripe.intentsFor(ACME, key).get(0).get("metadata").get("chargeonce_attempt").asText());
    }

    @Test
    void aRowBetweenTheHorizonAndStripesDayIsNeverResentAsACreate() throws Exception {
        // 23 h 30 min: past our horizon (23 h), before Stripe's 24 h. Stripe still knows the key, but the service no
        // longer trusts that it does.
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String key = UUID.randomUUID().toString();
        String chargeId = insertAbandonedRow(key, "23 hours 30 minutes");
        long creates = stripe.createRequests();

        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503)
                .body("error.code", equalTo("charge_under_reconciliation"));
        assertEquals(creates, stripe.createRequests(), "no create with a key past the horizon");
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT needs_reconciliation FROM stripe_intents WHERE id = ?")) {
            ps.setString(1, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                assertTrue(rs.getBoolean(1), "parked for reconciliation");
            }
        }
    }

    @Test
    void aRowJustInsideTheHorizonIsStillDrivenWithItsKey() throws Exception {
        // 22 h 50 min: inside the horizon, the same key is re-sent (and Stripe, which still knows it, would replay).
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String key = UUID.randomUUID().toString();
        insertAbandonedRow(key, "22 hours 50 minutes");
        String paymentIntent = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(201)
                .extract().path("payment_intent");
        assertEquals(1, stripe.intentsFor(ACME, key).size());
        assertEquals(paymentIntent, stripe.intentsFor(ACME, key).get(0).get("id").asText());
        assertEquals("1", stripe.intentsFor(ACME, key).get(0).get("metadata").get("chargeonce_attempt").asText());
    }

    /**
     * Past the horizon the key's payment is looked up only once no try of it can still run at Stripe: a try its
     * last holder may have sent until a moment ago may not be listed yet, and the row would be parked for an operator
     * while its payment is on its way. Until then the retry is told to come back, and nothing is sent.
     */
    @Test
    void aRowPastTheHorizonWhoseLastTryMayStillRunIsNotLookedUpYet() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String key = UUID.randomUUID().toString();
        String chargeId = insertAbandonedRow(key, "25 hours");
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE stripe_intents SET stripe_sending_until = now() - interval '1 second' WHERE id = ?")) {
            ps.setString(1, chargeId); // its last holder could send until a second ago
            assertEquals(1, ps.executeUpdate());
        }
        long creates = stripe.createRequests();

        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503)
                .body("error.code", equalTo("stripe_outcome_unknown"));
        assertEquals(creates, stripe.createRequests(), "no create with a key past the horizon");
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT status, needs_reconciliation FROM stripe_intents WHERE id = ?")) {
            ps.setString(1, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                assertEquals("processing", rs.getString(1));
                assertFalse(rs.getBoolean(2), "not parked before the lookup could tell");
            }
        }
    }

    private String insertAbandonedRow(String key, String age) throws Exception {
        return insertAbandonedRow(key, age, null);
    }

    private String insertAbandonedRow(String key, String age, String lastStripeError) throws Exception {
        String chargeId = dev.chargeonce.idempotency.RowIds.next("chg_");
        String canonical = ChargeRequestParser.parse(ChargeApiTest.VISA.getBytes(StandardCharsets.UTF_8)).canonicalJson();
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                            lease_until, stripe_key_first_sent, created_at, last_stripe_error, stripe_identity)
                VALUES (?, ?, ?, ?, ?, 1000, 'usd', 'processing', now() - interval '1 hour',
                        now() - ?::interval, now() - ?::interval, ?, ?)""")) {
            ps.setString(1, chargeId);
            ps.setString(2, ACME);
            ps.setString(3, null); // keys are not stored: the identity finds the row
            ps.setString(4, Fingerprint.of("POST", "/v1/charges", canonical).stored());
            ps.setString(5, canonical);
            ps.setString(6, age);
            ps.setString(7, age);
            ps.setString(8, lastStripeError);
            ps.setString(9, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            ps.executeUpdate();
        }
        return chargeId;
    }

    private void createAtStripeDirectly(String key, String chargeId, java.time.Instant created) throws Exception {
        java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create(sandboxBase + "/v1/payment_intents"))
                        .header("Authorization", "Bearer sk_test_sandbox")
                        .header("Content-Type", "application/x-www-form-urlencoded")
                        .header("Sandbox-Created", Long.toString(created.getEpochSecond()))
                        .POST(java.net.http.HttpRequest.BodyPublishers.ofString(
                                "amount=1000&currency=usd&payment_method=pm_card_visa&confirm=true&metadata[chargeonce_key]="
                                        + dev.chargeonce.testing.TestKeys.identity(ACME, key) + "&metadata[chargeonce_attempt]=1"))
                        .build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
    }
}

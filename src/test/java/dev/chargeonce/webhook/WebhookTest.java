package dev.chargeonce.webhook;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.chargeonce.recovery.PaymentSyncWorker;
import dev.chargeonce.sandbox.SandboxWebhooks;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.net.URI;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.function.Supplier;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Stripe's events through the inbox, and the asynchronous outcomes they carry: 3-D Secure and bank debits answer
 * {@code 202}, replayed as such, while the charge's state follows Stripe's events (or the sync worker's look).
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class WebhookTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final String THREE_DS = "{\"amount\": 1500, \"currency\": \"eur\", \"payment_method\": \"pm_card_authenticationRequired\"}";
    static final String DEBIT = "{\"amount\": 2500, \"currency\": \"eur\", \"payment_method\": \"pm_sandbox_processing\"}";

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @TestHTTPResource("/v1/webhooks/stripe")
    URI webhookUrl;

    @Inject
    AgroalDataSource primary;

    @Inject
    PaymentSyncWorker sync;

    @Inject
    EventCatchUp catchUp;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        stripe.webhooks("url=" + webhookUrl + "&duplicates=1&reorder=false&lose=false&delay_ms=0");
    }

    @AfterEach
    void tearDown() {
        stripe.webhooks("url=&duplicates=1&reorder=false&lose=false&delay_ms=0");
    }

    static Response post(String key, String body) {
        return given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(body).when().post("/v1/charges");
    }

    static Response get(String chargeId) {
        return given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + chargeId);
    }

    // ---- 3-D Secure and bank debits ------------------------------------------------------------------------------

    @Test
    void threeDSecureIs202ThenTheCustomerCompletesItAndTheWebhookSettlesTheCharge() throws Exception {
        String key = UUID.randomUUID().toString();
        Response first = post(key, THREE_DS);
        assertEquals(202, first.statusCode(), first.asString());
        assertEquals("requires_action", first.jsonPath().getString("status"));
        String pi = first.jsonPath().getString("payment_intent");
        assertNotNull(first.jsonPath().getString("client_secret"), "the front end needs the client secret for Stripe.js");
        assertEquals("use_stripe_sdk", first.jsonPath().getString("next_action.type"));
        String chargeId = first.jsonPath().getString("id");

        Response replay = post(key, THREE_DS);
        assertEquals(202, replay.statusCode());
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.asString(), replay.asString(), "the 202 is what retries replay");

        stripe.authenticate(pi, "succeeded");
        awaitStatus(chargeId, "succeeded");
        assertEquals(first.asString(), post(key, THREE_DS).asString(), "the POST still replays its 202");
        assertEquals(1, stripe.intentsFor(ACME, key).size());
    }

    @Test
    void aFailedAuthenticationFailsTheCharge() throws Exception {
        Response first = post(UUID.randomUUID().toString(), THREE_DS);
        assertEquals(202, first.statusCode());
        stripe.authenticate(first.jsonPath().getString("payment_intent"), "failed");
        awaitStatus(first.jsonPath().getString("id"), "failed");
    }

    @Test
    void aBankDebitIs202ProcessingUntilItsWebhook() throws Exception {
        String key = UUID.randomUUID().toString();
        Response first = post(key, DEBIT);
        assertEquals(202, first.statusCode(), first.asString());
        assertEquals("processing", first.jsonPath().getString("status"));
        String chargeId = first.jsonPath().getString("id");
        assertEquals("processing", get(chargeId).jsonPath().getString("status"));
        stripe.settle(first.jsonPath().getString("payment_intent"), "succeeded");
        awaitStatus(chargeId, "succeeded");
    }

    // ---- the inbox -----------------------------------------------------------------------------------------------

    @Test
    void oneEventDeliveredTenTimesAtOnceChangesTheChargeOnce() throws Exception {
        Response first = post(UUID.randomUUID().toString(), DEBIT);
        String pi = first.jsonPath().getString("payment_intent");
        long delivered = stripe.webhooks("").get("delivered").asLong();
        long failed = stripe.webhooks("").get("failed_deliveries").asLong();
        stripe.webhooks("duplicates=10");
        stripe.settle(pi, "succeeded");
        awaitStatus(first.jsonPath().getString("id"), "succeeded");
        // The settle made one event, delivered ten times concurrently: ten 2xx, one row in the inbox, one change.
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (stripe.webhooks("").get("delivered").asLong() < delivered + 10 && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        // (at least: the charge's own earlier events may still have been on their way when counting began)
        assertTrue(stripe.webhooks("").get("delivered").asLong() >= delivered + 10, "ten deliveries, each acknowledged");
        assertEquals(failed, stripe.webhooks("").get("failed_deliveries").asLong(), "none refused");
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*), min(outcome) FROM stripe_events WHERE object_id = ? AND type = 'payment_intent.succeeded'")) {
            ps.setString(1, pi);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertEquals(1, rs.getInt(1), "the event is recorded once");
                assertEquals("applied", rs.getString(2));
            }
        }
    }

    @Test
    void eventsOutOfOrderNeverMoveAChargeBackwards() throws Exception {
        stripe.webhooks("url=");  // this test delivers by hand, in the order it wants
        Response first = post(UUID.randomUUID().toString(), THREE_DS);
        String chargeId = first.jsonPath().getString("id");
        JsonNode pi = stripe.paymentIntent(first.jsonPath().getString("payment_intent"));

        assertEquals(200, deliver(event("payment_intent.succeeded", withStatus(pi, "succeeded"))).statusCode());
        assertEquals("succeeded", get(chargeId).jsonPath().getString("status"));
        // Older news, delivered late: recorded and acknowledged, but the charge stays succeeded.
        assertEquals(200, deliver(event("payment_intent.requires_action", pi)).statusCode());
        assertEquals(200, deliver(event("payment_intent.payment_failed", failed(pi))).statusCode());
        assertEquals(200, deliver(event("payment_intent.canceled", withStatus(pi, "canceled"))).statusCode());
        assertEquals("succeeded", get(chargeId).jsonPath().getString("status"));
    }

    @Test
    void anEventRenderedInAnotherApiVersionIsAppliedNotDropped() throws Exception {
        stripe.webhooks("url=");
        Response first = post(UUID.randomUUID().toString(), THREE_DS);
        JsonNode pi = stripe.paymentIntent(first.jsonPath().getString("payment_intent"));
        // The account is pinned to an old version: the SDK's getObject() would answer empty for it.
        ObjectNode event = (ObjectNode) JSON.readTree(event("payment_intent.succeeded", withStatus(pi, "succeeded")));
        event.put("api_version", "2019-02-19");
        String body = JSON.writeValueAsString(event);
        assertEquals(200, deliver(body).statusCode());
        assertEquals("applied", outcomeOf(event.get("id").asText()));
        assertEquals("succeeded", get(first.jsonPath().getString("id")).jsonPath().getString("status"));
    }

    /**
     * An event finds its row among the rows of the client the object names ({@code chargeonce_client_id}, which the
     * service writes on everything it sends): one shard on Citus. An object that names none (its metadata edited by
     * hand, say) still finds its row: its client is read first, without a lock.
     */
    @Test
    void anEventWhoseObjectNamesNoClientStillFindsItsCharge() throws Exception {
        stripe.webhooks("url=");
        Response first = post(UUID.randomUUID().toString(), THREE_DS);
        String chargeId = first.jsonPath().getString("id");
        ObjectNode pi = (ObjectNode) withStatus(stripe.paymentIntent(first.jsonPath().getString("payment_intent")), "succeeded");
        assertEquals(ACME, pi.get("metadata").get("chargeonce_client_id").asText(), "the service names the client");
        ((ObjectNode) pi.get("metadata")).remove("chargeonce_client_id");
        String event = event("payment_intent.succeeded", pi);
        assertEquals(200, deliver(event).statusCode());
        assertEquals("applied", outcomeOf(JSON.readTree(event).get("id").asText()));
        assertEquals("succeeded", get(chargeId).jsonPath().getString("status"));
    }

    @Test
    void anEventForAPaymentIntentNoChargeHasIsRecordedAndAcknowledged() throws Exception {
        ObjectNode stranger = (ObjectNode) JSON.readTree("{\"id\":\"pi_stranger" + UUID.randomUUID().toString().substring(0, 8)
                + "\",\"object\":\"payment_intent\",\"status\":\"succeeded\",\"amount\":100,\"currency\":\"usd\",\"metadata\":{}}");
        String event = event("payment_intent.succeeded", stranger);
        Response answer = deliver(event);
        assertEquals(200, answer.statusCode(), answer.asString());
        assertEquals("unknown", outcomeOf(JSON.readTree(event).get("id").asText()), "kept for reconciliation, never dropped");
    }

    @Test
    void aStateChangeThatFailsTakesItsInboxRowWithItAndTheRedeliveryAppliesIt() throws Exception {
        stripe.webhooks("url=");
        Response first = post(UUID.randomUUID().toString(), DEBIT);
        String chargeId = first.jsonPath().getString("id");
        JsonNode pi = stripe.paymentIntent(first.jsonPath().getString("payment_intent"));
        String event = event("payment_intent.succeeded", withStatus(pi, "succeeded"));
        String eventId = JSON.readTree(event).get("id").asText();

        // A fault inside the state change itself: the database refuses the charge's update.
        try (Connection c = primary.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE OR REPLACE FUNCTION webhook_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    + "IF NEW.id = '" + chargeId + "' THEN RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW; END $$");
            s.execute("CREATE TRIGGER webhook_test_refuse BEFORE UPDATE ON stripe_intents FOR EACH ROW EXECUTE FUNCTION webhook_test_refuse()");
        }
        try {
            Response refused = deliver(event);
            assertTrue(refused.statusCode() >= 500, "not acknowledged, so Stripe redelivers: " + refused.statusCode());
            assertEquals(null, outcomeOf(eventId), "the inbox row rolled back with the failed change");
            assertEquals("processing", get(chargeId).jsonPath().getString("status"));
        } finally {
            try (Connection c = primary.getConnection(); Statement s = c.createStatement()) {
                s.execute("DROP TRIGGER webhook_test_refuse ON stripe_intents");
            }
        }
        assertEquals(200, deliver(event).statusCode(), "the redelivery");
        assertEquals("applied", outcomeOf(eventId));
        assertEquals("succeeded", get(chargeId).jsonPath().getString("status"));
        Response again = deliver(event);
        assertEquals(200, again.statusCode());
        assertTrue(again.asString().contains("\"duplicate\":true"), again.asString());
    }

    @Test
    void aWebhookFinishesARowLeftProcessingByAnUnknownOutcome() throws Exception {
        String key = UUID.randomUUID().toString();
        // Stripe charged, then answered 500; the client went away. The event of the payment names the
        // PaymentIntent the row never heard of, and its metadata carries the charge's identity.
        stripe.plan("fail_after");
        stripe.webhooks("delay_ms=1000"); // the event arrives after the 503, as it would from Stripe
        Response first = post(key, "{\"amount\": 700, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}");
        assertEquals(503, first.statusCode(), first.asString());
        String pi = stripe.intentsFor(ACME, key).get(0).get("id").asText();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        String status = null;
        while (System.nanoTime() < deadline && !"completed".equals(status)) {
            status = rowStatus(key);
            Thread.sleep(50);
        }
        assertEquals("completed", status, "finished by the webhook with the answer a driver would give");
        long creates = stripe.createRequests();
        Response retry = post(key, "{\"amount\": 700, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}");
        assertEquals(201, retry.statusCode());
        assertEquals("true", retry.header("Idempotent-Replayed"));
        assertEquals(pi, retry.jsonPath().getString("payment_intent"));
        assertEquals(creates, stripe.createRequests(), "no Stripe call for the retry");
    }

    // ---- nothing hangs when events are lost ------------------------------------------------------------------------

    @Test
    void whenTheWebhookNeverComesTheSyncWorkerSettlesTheCharge() throws Exception {
        stripe.webhooks("lose=true");
        Response first = post(UUID.randomUUID().toString(), THREE_DS);
        String chargeId = first.jsonPath().getString("id");
        stripe.authenticate(first.jsonPath().getString("payment_intent"), "succeeded");
        dueNow(chargeId, "0 minutes");
        sync.syncOnce();
        assertEquals("succeeded", get(chargeId).jsonPath().getString("status"));
    }

    @Test
    void anAbandonedThreeDSecureIsCanceledAtStripeAfterItsExpiry() throws Exception {
        stripe.webhooks("lose=true");
        Response first = post(UUID.randomUUID().toString(), THREE_DS);
        String chargeId = first.jsonPath().getString("id");
        String pi = first.jsonPath().getString("payment_intent");
        dueNow(chargeId, "61 minutes");
        sync.syncOnce();
        assertEquals("canceled", stripe.paymentIntent(pi).get("status").asText(), "canceled at Stripe: it can never complete");
        assertEquals("canceled", get(chargeId).jsonPath().getString("status"));
    }

    @Test
    void eventsLostWhileTheEndpointWasDownAreCaughtUpFromTheEventsApi() throws Exception {
        stripe.webhooks("lose=true");
        Response first = post(UUID.randomUUID().toString(), DEBIT);
        String chargeId = first.jsonPath().getString("id");
        stripe.settle(first.jsonPath().getString("payment_intent"), "succeeded");
        assertEquals("processing", get(chargeId).jsonPath().getString("status"), "the event was lost");
        assertTrue(catchUp.catchUpOnce() >= 1);
        assertEquals("succeeded", get(chargeId).jsonPath().getString("status"));
        assertEquals(0, catchUp.catchUpOnce(), "a second pass finds nothing new");
    }

    // ---- retention -----------------------------------------------------------------------------------------------

    @Inject
    StripeEventInbox inbox;

    @Test
    void eventsAreKeptLongerThanStripeRedeliversThemThenDeleted() throws Exception {
        String old = "evt_old" + UUID.randomUUID().toString().substring(0, 8);
        String recent = "evt_recent" + UUID.randomUUID().toString().substring(0, 8);
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_events (id, type, stripe_created, payload, source, outcome, received_at)
                VALUES (?, 'payment_intent.succeeded', now(), '{}', 'webhook', 'ignored', now() - ?::interval)""")) {
            ps.setString(1, old);
            ps.setString(2, "8 days");
            ps.executeUpdate();
            ps.setString(1, recent);
            ps.setString(2, "3 days 23 hours");
            ps.executeUpdate();
        }
        while (inbox.deleteOlderThan(Duration.ofDays(7), 500) == 500) {
            // batch after batch
        }
        assertEquals(null, outcomeOf(old), "older than the retention: deleted");
        assertEquals("ignored", outcomeOf(recent), "within Stripe's redelivery window and the retention: kept");
    }

    // ---- signatures ----------------------------------------------------------------------------------------------

    @Test
    void onlyAFreshSignatureByAConfiguredSecretOverTheExactBodyIsAccepted() throws Exception {
        ObjectNode stranger = (ObjectNode) JSON.readTree("{\"id\":\"pi_sig" + UUID.randomUUID().toString().substring(0, 8)
                + "\",\"object\":\"payment_intent\",\"status\":\"succeeded\",\"metadata\":{}}");
        String event = event("payment_intent.succeeded", stranger);
        String id = JSON.readTree(event).get("id").asText();
        long now = System.currentTimeMillis() / 1000;
        assertRefused(event, null, "signature_missing");
        assertRefused(event, "v1=abc", "signature_invalid");
        assertRefused(event, SandboxWebhooks.signatureHeader(event, "whsec_wrong", now), "signature_invalid");
        assertRefused(event, SandboxWebhooks.signatureHeader(event, PostgresAndSandbox.WEBHOOK_SECRET, now - 600), "signature_timestamp_invalid");
        assertRefused(event, SandboxWebhooks.signatureHeader(event, PostgresAndSandbox.WEBHOOK_SECRET, now + 600), "signature_timestamp_invalid");
        assertRefused(event.replace("\"succeeded\"", "\"canceled\""),
                SandboxWebhooks.signatureHeader(event, PostgresAndSandbox.WEBHOOK_SECRET, now), "signature_invalid");
        assertEquals(null, outcomeOf(id), "nothing recorded");
        // Either secret of a rotation.
        assertEquals(200, deliver(event, SandboxWebhooks.signatureHeader(event, PostgresAndSandbox.WEBHOOK_SECRET_ROTATED, now)).statusCode());
        assertEquals("unknown", outcomeOf(id));
    }

    private void assertRefused(String body, String signature, String code) {
        Response answer = deliver(body, signature);
        assertEquals(400, answer.statusCode(), answer.asString());
        assertEquals(code, answer.jsonPath().getString("error.code"));
        assertEquals("invalid_request_error", answer.jsonPath().getString("error.type"));
    }

    // ---- helpers -------------------------------------------------------------------------------------------------

    private Response deliver(String event) {
        return deliver(event, SandboxWebhooks.signatureHeader(event, PostgresAndSandbox.WEBHOOK_SECRET, System.currentTimeMillis() / 1000));
    }

    private Response deliver(String event, String signature) {
        var request = given().contentType("application/json; charset=utf-8").body(event);
        if (signature != null) {
            request = request.header("Stripe-Signature", signature);
        }
        return request.when().post("/v1/webhooks/stripe");
    }

    static String event(String type, JsonNode paymentIntent) throws Exception {
        ObjectNode event = JSON.createObjectNode();
        event.put("id", "evt_test" + UUID.randomUUID().toString().replace("-", "").substring(0, 20));
        event.put("object", "event");
        event.put("api_version", SandboxWebhooks.DEFAULT_API_VERSION);
        event.put("created", System.currentTimeMillis() / 1000);
        event.putObject("data").set("object", paymentIntent);
        event.put("livemode", false);
        event.put("type", type);
        return JSON.writeValueAsString(event);
    }

    private static JsonNode withStatus(JsonNode pi, String status) {
        ObjectNode copy = pi.deepCopy();
        copy.put("status", status);
        copy.remove("next_action");
        return copy;
    }

    private static JsonNode failed(JsonNode pi) throws Exception {
        ObjectNode copy = (ObjectNode) withStatus(pi, "requires_payment_method");
        copy.set("last_payment_error", JSON.readTree("{\"type\":\"card_error\",\"code\":\"payment_intent_authentication_failure\","
                + "\"message\":\"The customer failed to authenticate.\"}"));
        return copy;
    }

    private String outcomeOf(String eventId) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT outcome FROM stripe_events WHERE id = ?")) {
            ps.setString(1, eventId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private String rowStatus(String key) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT status FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, ACME);
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    /** Makes the sync worker's next look due now, as if the charge had been answered {@code age} ago. */
    private void dueNow(String chargeId, String age) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE stripe_intents SET recheck_at = now() - interval '1 second', finished_at = now() - ?::interval WHERE id = ?")) {
            ps.setString(1, age);
            ps.setString(2, chargeId);
            assertEquals(1, ps.executeUpdate());
        }
    }

    private void awaitStatus(String chargeId, String status) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        Supplier<String> current = () -> get(chargeId).jsonPath().getString("status");
        String seen = current.get();
        while (!status.equals(seen) && System.nanoTime() < deadline) {
            Thread.sleep(50);
            seen = current.get();
        }
        assertEquals(status, seen, "the charge's state after the event");
    }
}

package dev.chargeonce.refund;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static dev.chargeonce.testing.TestClients.GLOBEX_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Supplier;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Refunds on the charges' idempotency core, against the real service, PostgreSQL and the Stripe sandbox: one refund
 * per key whatever the retries, concurrency and Stripe 5xx; never more refunded than was paid; refusals before
 * Stripe is asked; states that follow Stripe's events and give a failed refund's amount back.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class RefundApiTest {

    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";
    static final String DEBIT = "{\"amount\": 2500, \"currency\": \"eur\", \"payment_method\": \"pm_sandbox_processing\"}";

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @TestHTTPResource("/v1/webhooks/stripe")
    URI webhookUrl;

    @Inject
    AgroalDataSource primary;

    @Inject
    dev.chargeonce.webhook.EventCatchUp catchUp;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
    }

    @AfterEach
    void tearDown() {
        stripe.webhooks("url=&duplicates=1&reorder=false&lose=false&delay_ms=0");
    }

    static String charge(String body) {
        Response charged = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body(body).when().post("/v1/charges");
        assertTrue(charged.statusCode() == 201 || charged.statusCode() == 202, charged.asString());
        return charged.jsonPath().getString("id");
    }

    static Response refund(String apiKey, String chargeId, String key, String body) {
        return given().header("Authorization", "Bearer " + apiKey).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(body).when().post("/v1/charges/" + chargeId + "/refunds");
    }

    static Response get(String path) {
        return given().header("Authorization", "Bearer " + ACME_KEY).when().get(path);
    }

    @Test
    void aFullRefundIsMadeOnceAndEveryRetryIsTheIdenticalReplay() {
        String chargeId = charge(VISA);
        String key = UUID.randomUUID().toString();
        Response first = refund(ACME_KEY, chargeId, key, "{\"reason\": \"requested_by_customer\", \"metadata\": {\"ticket\": \"T-9\"}}");
        assertEquals(201, first.statusCode(), first.asString());
        assertNull(first.header("Idempotent-Replayed"));
        assertEquals("succeeded", first.jsonPath().getString("status"));
        assertEquals(1000, first.jsonPath().getInt("amount"), "the amount defaults to what is left");
        assertEquals(chargeId, first.jsonPath().getString("charge"));
        assertEquals("T-9", first.jsonPath().getString("metadata.ticket"));
        for (int i = 0; i < 3; i++) {
            Response again = refund(ACME_KEY, chargeId, key, "{\"metadata\": {\"ticket\": \"T-9\"}, \"reason\": \"requested_by_customer\"}");
            assertEquals(201, again.statusCode());
            assertEquals("true", again.header("Idempotent-Replayed"));
            assertEquals(first.asString(), again.asString(), "a replay is byte for byte the first answer");
        }
        List<JsonNode> atStripe = stripe.refundsFor(ACME, key);
        assertEquals(1, atStripe.size(), "one refund at Stripe for the key");
        assertEquals(first.jsonPath().getString("stripe_refund"), atStripe.get(0).get("id").asText());

        Response charge = get("/v1/charges/" + chargeId);
        assertEquals(1000, charge.jsonPath().getInt("amount_refunded"));
        assertTrue(charge.jsonPath().getBoolean("refunded"));
        Response byId = get("/v1/refunds/" + first.jsonPath().getString("id"));
        assertEquals(200, byId.statusCode());
        assertEquals("succeeded", byId.jsonPath().getString("status"));
        Response list = get("/v1/charges/" + chargeId + "/refunds");
        assertEquals(List.of(first.jsonPath().getString("id")), list.jsonPath().getList("data.id"));
    }

    @Test
    void partialRefundsAddUpToTheChargeAndMoreIsRefusedBeforeStripeIsAsked() {
        String chargeId = charge(VISA);
        assertEquals(201, refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "{\"amount\": 300}").statusCode());
        assertEquals(201, refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "{\"amount\": 600}").statusCode());
        long asked = stripe.refundCreateRequests();
        String tooMuchKey = UUID.randomUUID().toString();
        Response tooMuch = refund(ACME_KEY, chargeId, tooMuchKey, "{\"amount\": 101}");
        assertEquals(400, tooMuch.statusCode(), tooMuch.asString());
        assertEquals("amount_too_large", tooMuch.jsonPath().getString("error.code"));
        assertEquals("amount", tooMuch.jsonPath().getString("error.param"));
        assertEquals(asked, stripe.refundCreateRequests(), "Stripe was not asked for a refund over what is left");
        // Not stored: the same key may ask for what is left.
        Response rest = refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "{}");
        assertEquals(201, rest.statusCode(), rest.asString());
        assertEquals(100, rest.jsonPath().getInt("amount"));
        Response nothingLeft = refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "");
        assertEquals(400, nothingLeft.statusCode());
        assertEquals("amount_too_large", nothingLeft.jsonPath().getString("error.code"));
        assertEquals(1000, get("/v1/charges/" + chargeId).jsonPath().getInt("amount_refunded"));
        assertEquals(3, get("/v1/charges/" + chargeId + "/refunds").jsonPath().getList("data").size());
    }

    @Test
    void aKeyReusedWithAnotherBodyOrChargeIs422() {
        String chargeId = charge(VISA);
        String other = charge(VISA);
        String key = UUID.randomUUID().toString();
        assertEquals(201, refund(ACME_KEY, chargeId, key, "{\"amount\": 100}").statusCode());
        Response otherAmount = refund(ACME_KEY, chargeId, key, "{\"amount\": 200}");
        assertEquals(422, otherAmount.statusCode());
        assertEquals("idempotency_key_reused", otherAmount.jsonPath().getString("error.code"));
        assertEquals(422, refund(ACME_KEY, other, key, "{\"amount\": 100}").statusCode());
        assertEquals(1, stripe.refundsFor(ACME, key).size());
    }

    @Test
    void anotherClientsChargeIsNotFoundExactlyLikeAnUnknownOne() {
        String chargeId = charge(VISA);
        Response foreign = refund(GLOBEX_KEY, chargeId, UUID.randomUUID().toString(), "{}");
        Response unknown = refund(GLOBEX_KEY, "chg_doesnotexist00000000000", UUID.randomUUID().toString(), "{}");
        assertEquals(404, foreign.statusCode());
        assertEquals(404, unknown.statusCode());
        assertEquals(unknown.asString().replace("chg_doesnotexist00000000000", chargeId), foreign.asString());
        Response foreignList = given().header("Authorization", "Bearer " + GLOBEX_KEY).get("/v1/charges/" + chargeId + "/refunds");
        assertEquals(404, foreignList.statusCode());
        assertEquals(foreign.asString(), foreignList.asString());
    }

    @Test
    void aChargeThatDidNotSucceedCannotBeRefunded() {
        Response declined = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body("{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_chargeDeclined\"}")
                .post("/v1/charges");
        assertEquals(402, declined.statusCode());
        String declinedId = declined.jsonPath().getString("error.charge");
        Response refused = refund(ACME_KEY, declinedId, UUID.randomUUID().toString(), "{}");
        assertEquals(400, refused.statusCode(), refused.asString());
        assertEquals("charge_not_refundable", refused.jsonPath().getString("error.code"));

    }

    /**
     * A charge that is not final yet (the bank has not answered, 3-D Secure waits, the charge's own request is in
     * flight) may still succeed: a refund of it is answered 409 with a Retry-After, never a final 400, and the same
     * refund request is made once the charge succeeded.
     */
    @Test
    void aRefundOfAChargeNotFinalYetIsToRetryAndIsMadeOnceTheChargeSucceeded() throws Exception {
        stripe.webhooks("url=" + webhookUrl + "&duplicates=1&reorder=false&lose=false&delay_ms=0");
        String processing = charge(DEBIT); // 202: the bank has not answered
        String key = UUID.randomUUID().toString();
        Response notYet = refund(ACME_KEY, processing, key, "{}");
        assertEquals(409, notYet.statusCode(), notYet.asString());
        assertEquals("charge_not_final", notYet.jsonPath().getString("error.code"));
        assertTrue(notYet.header("Retry-After") != null, "a retry-later answer says when: " + notYet.headers());

        Response read = given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + processing);
        stripe.settle(read.jsonPath().getString("payment_intent"), "succeeded");
        long deadline = System.nanoTime() + java.time.Duration.ofSeconds(20).toNanos();
        while (!"succeeded".equals(given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + processing)
                .jsonPath().getString("status")) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        Response made = refund(ACME_KEY, processing, key, "{}");
        assertEquals(201, made.statusCode(), made.asString());
    }

    @Test
    void invalidBodiesAreRefusedNamingTheField() {
        String chargeId = charge(VISA);
        for (String[] bad : new String[][] {{"{\"amount\": 0}", "amount"}, {"{\"amount\": \"10\"}", "amount"},
                {"{\"amount\": 10.5}", "amount"}, {"{\"reason\": \"because\"}", "reason"}, {"{\"refund\": 1}", "refund"},
                {"{\"metadata\": {\"chargeonce_key\": \"x\"}}", "metadata[chargeonce_key]"}}) {
            Response answer = refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), bad[0]);
            assertEquals(400, answer.statusCode(), bad[0] + ": " + answer.asString());
            assertEquals(bad[1], answer.jsonPath().getString("error.param"), bad[0]);
        }
        Response noKey = given().header("Authorization", "Bearer " + ACME_KEY).contentType(ContentType.JSON).body("{}")
                .post("/v1/charges/" + chargeId + "/refunds");
        assertEquals(400, noKey.statusCode());
        assertEquals(0, stripe.refunds().stream().filter(r -> r.get("payment_intent").asText()
                .equals(get("/v1/charges/" + chargeId).jsonPath().getString("payment_intent"))).count());
    }

    @Test
    void thirtyTwoConcurrentRequestsWithOneKeyMakeOneRefund() throws Exception {
        String chargeId = charge(VISA);
        String key = UUID.randomUUID().toString();
        stripe.faults("latency_ms=300");
        List<Response> answers = concurrently(32, () -> refund(ACME_KEY, chargeId, key, "{\"amount\": 400}"));
        stripe.faults("latency_ms=0");
        String body = null;
        for (Response answer : answers) {
            assertTrue(answer.statusCode() == 201 || answer.statusCode() == 409, answer.statusCode() + " " + answer.asString());
            if (answer.statusCode() == 201) {
                assertTrue(body == null || body.equals(answer.asString()), "every 201 is the same refund");
                body = answer.asString();
            } else {
                assertTrue(answer.header("Retry-After") != null);
            }
        }
        Response settled = refund(ACME_KEY, chargeId, key, "{\"amount\": 400}");
        assertEquals(201, settled.statusCode());
        assertEquals(1, stripe.refundsFor(ACME, key).size(), "one refund at Stripe");
        assertEquals(400, get("/v1/charges/" + chargeId).jsonPath().getInt("amount_refunded"));
        assertEquals(400, reserved(chargeId));
    }

    @Test
    void oneKeySentTwiceAtOnceIsNeverRefusedForTheAmountItReservedItself() throws Exception {
        // Found by the chaos run: the second request of a key waited on the charge's lock behind the first one's
        // claim, then read a reservation that held its own key's amount, and answered a final 400 amount_too_large
        // for a refund that was made. The whole charge, and more than half of it, are the amounts that show it.
        for (String body : List.of("{}", "{\"amount\": 700}")) {
            String chargeId = charge(VISA);
            String key = UUID.randomUUID().toString();
            stripe.faults("latency_ms=200");
            List<Response> answers = concurrently(8, () -> refund(ACME_KEY, chargeId, key, body));
            stripe.faults("latency_ms=0");
            for (Response answer : answers) {
                assertTrue(answer.statusCode() == 201 || answer.statusCode() == 409,
                        body + ": a request of the key that made the refund is never told it does not fit: "
                                + answer.statusCode() + " " + answer.asString());
            }
            assertEquals(201, retryWhileNotFinal(chargeId, key, body).statusCode());
            assertEquals(1, stripe.refundsFor(ACME, key).size(), "one refund at Stripe");
        }
    }

    @Test
    void concurrentRefundsWithDifferentKeysNeverPromiseBackMoreThanWasPaid() throws Exception {
        String chargeId = charge(VISA);
        long asked = stripe.refundCreateRequests();
        stripe.faults("latency_ms=50");
        List<Response> answers = concurrently(20, () -> refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "{\"amount\": 150}"));
        stripe.faults("latency_ms=0");
        long made = answers.stream().filter(a -> a.statusCode() == 201).count();
        long tooLarge = answers.stream().filter(a -> a.statusCode() == 400
                && "amount_too_large".equals(a.jsonPath().getString("error.code"))).count();
        assertEquals(6, made, "1000 holds six refunds of 150");
        assertEquals(14, tooLarge);
        assertEquals(asked + 6, stripe.refundCreateRequests(), "Stripe was asked only for the refunds that fit");
        assertEquals(900, get("/v1/charges/" + chargeId).jsonPath().getInt("amount_refunded"));
    }

    @Test
    void stripe500AfterRefundingIsFoundAgainNotRefundedTwice() {
        String chargeId = charge(VISA);
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_after");
        Response first = refund(ACME_KEY, chargeId, key, "{\"amount\": 250}");
        assertTrue(first.statusCode() == 201 || first.statusCode() == 503, first.asString());
        Response answer = retryWhileNotFinal(chargeId, key, "{\"amount\": 250}");
        assertEquals(201, answer.statusCode(), answer.asString());
        assertEquals(1, stripe.refundsFor(ACME, key).size(), "the refund made before the 500 is the key's only one");
        assertEquals(answer.jsonPath().getString("stripe_refund"), stripe.refundsFor(ACME, key).get(0).get("id").asText());
        assertEquals(250, reserved(chargeId));
    }

    @Test
    void stripe500BeforeRefundingIsRefundedOnce() {
        String chargeId = charge(VISA);
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_before");
        refund(ACME_KEY, chargeId, key, "{\"amount\": 250}");
        Response answer = retryWhileNotFinal(chargeId, key, "{\"amount\": 250}");
        assertEquals(201, answer.statusCode(), answer.asString());
        assertEquals(1, stripe.refundsFor(ACME, key).size());
        assertEquals(250, get("/v1/charges/" + chargeId).jsonPath().getInt("amount_refunded"));
    }

    @Test
    void aPendingRefundFollowsStripesEventsAndAFailedOneGivesItsAmountBack() throws Exception {
        stripe.webhooks("url=" + webhookUrl + "&duplicates=2&reorder=false&lose=false&delay_ms=0");
        String chargeId = charge(DEBIT);
        String pi = get("/v1/charges/" + chargeId).jsonPath().getString("payment_intent");
        stripe.settle(pi, "succeeded");
        await(() -> "succeeded".equals(get("/v1/charges/" + chargeId).jsonPath().getString("status")), "the charge succeeded by its event");

        Response pending = refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "{\"amount\": 1000}");
        assertEquals(201, pending.statusCode(), pending.asString());
        assertEquals("pending", pending.jsonPath().getString("status"));
        String refundId = pending.jsonPath().getString("id");
        String failingKey = UUID.randomUUID().toString();
        Response failing = refund(ACME_KEY, chargeId, failingKey, "{}");
        assertEquals(201, failing.statusCode(), failing.asString());
        assertEquals(1500, failing.jsonPath().getInt("amount"));
        assertEquals(2500, reserved(chargeId));
        Response nothingLeft = refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "{\"amount\": 1}");
        assertEquals("amount_too_large", nothingLeft.jsonPath().getString("error.code"), "pending refunds count");

        stripe.settleRefund(pending.jsonPath().getString("stripe_refund"), "succeeded");
        stripe.settleRefund(failing.jsonPath().getString("stripe_refund"), "failed");
        await(() -> "succeeded".equals(get("/v1/refunds/" + refundId).jsonPath().getString("status")), "pending -> succeeded");
        await(() -> "failed".equals(get("/v1/refunds/" + failing.jsonPath().getString("id")).jsonPath().getString("status")),
                "pending -> failed");
        assertEquals(1000, reserved(chargeId), "the failed refund gave its 1500 back");
        assertEquals(1000, get("/v1/charges/" + chargeId).jsonPath().getInt("amount_refunded"));
        Response again = refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "{}");
        assertEquals(201, again.statusCode(), again.asString());
        assertEquals(1500, again.jsonPath().getInt("amount"), "what the failed refund gave back can be refunded");
        // The key's answer stays what was said (pending): a replay never changes; GET tells the news.
        Response replay = refund(ACME_KEY, chargeId, failingKey, "{}");
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(failing.asString(), replay.asString());
    }

    @Test
    void aRefundStripeRefusesIsAStoredFinal400AndGivesItsAmountBack() {
        String chargeId = charge(VISA);
        String pi = get("/v1/charges/" + chargeId).jsonPath().getString("payment_intent");
        stripe.refundOutsideTheService(pi); // the Dashboard refunded it all: Stripe has nothing left to refund
        String key = UUID.randomUUID().toString();
        Response refused = refund(ACME_KEY, chargeId, key, "{\"amount\": 100}");
        assertEquals(400, refused.statusCode(), refused.asString());
        assertEquals("charge_already_refunded", refused.jsonPath().getString("error.code"), "Stripe's own code");
        assertNull(refused.header("Idempotent-Replayed"));
        long asked = stripe.refundCreateRequests();
        Response replay = refund(ACME_KEY, chargeId, key, "{\"amount\": 100}");
        assertEquals(400, replay.statusCode());
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(refused.asString(), replay.asString(), "Stripe's refusal is stored and replayed byte for byte");
        assertEquals(asked, stripe.refundCreateRequests(), "a replay never asks Stripe again");
        assertEquals(0, reserved(chargeId), "a refund Stripe refused reserves nothing");
        assertEquals(List.of(), get("/v1/charges/" + chargeId + "/refunds").jsonPath().getList("data"),
                "a refused refund is not a refund");
    }

    @Test
    void aRefundThatFailedBeforeItsAnswerIsAStored402AndGivesItsAmountBack() {
        // A bank debit's refund stays pending at Stripe; its create's answer is lost (500 after refunding), the bank
        // fails it before the retry finds it: the key's final answer is that failure. (The refund's events are not
        // delivered here: refund.created would have answered the key with the refund as made, pending.)
        stripe.webhooks("url=" + webhookUrl + "&duplicates=1&reorder=false&lose=false&delay_ms=0");
        String chargeId = charge(DEBIT);
        String pi = get("/v1/charges/" + chargeId).jsonPath().getString("payment_intent");
        stripe.settle(pi, "succeeded");
        await(() -> "succeeded".equals(get("/v1/charges/" + chargeId).jsonPath().getString("status")), "the charge succeeded");
        stripe.webhooks("url=&duplicates=1&reorder=false&lose=false&delay_ms=0");
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_after");
        Response first = refund(ACME_KEY, chargeId, key, "{\"amount\": 700}");
        assertEquals(503, first.statusCode(), first.asString());
        List<JsonNode> made = stripe.refundsFor(ACME, key);
        assertEquals(1, made.size());
        stripe.settleRefund(made.get(0).get("id").asText(), "failed");

        Response failed = retryWhileNotFinal(chargeId, key, "{\"amount\": 700}");
        assertEquals(402, failed.statusCode(), failed.asString());
        assertEquals("refund_error", failed.jsonPath().getString("error.type"));
        assertEquals("refund_failed", failed.jsonPath().getString("error.code"));
        assertEquals(made.get(0).get("id").asText(), failed.jsonPath().getString("error.stripe_refund"));
        Response replay = refund(ACME_KEY, chargeId, key, "{\"amount\": 700}");
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(failed.asString(), replay.asString());
        assertEquals(1, stripe.refundsFor(ACME, key).size(), "found again, never made twice");
        assertEquals(0, reserved(chargeId), "the failed refund gave its amount back");
        assertEquals("failed", get("/v1/refunds/" + failed.jsonPath().getString("error.refund")).jsonPath().getString("status"));
    }

    @Test
    void aRefundWhoseAnswerWasLostIsAnsweredByItsChargesEventsAlone() {
        // A bank debit's refund stays pending at Stripe; its create's answer is lost (500 after refunding). Only the
        // charge's events reach the service: charge.refunded (its charge does not list its refunds) answers the key,
        // charge.refund.updated tells how the refund ended.
        stripe.webhooks("url=" + webhookUrl + "&duplicates=1&reorder=false&lose=false&delay_ms=0");
        String chargeId = charge(DEBIT);
        String pi = get("/v1/charges/" + chargeId).jsonPath().getString("payment_intent");
        stripe.settle(pi, "succeeded");
        await(() -> "succeeded".equals(get("/v1/charges/" + chargeId).jsonPath().getString("status")), "the charge succeeded");
        stripe.webhooks("url=&duplicates=1&reorder=false&lose=false&delay_ms=0"); // the test delivers what it names
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_after");
        Response first = refund(ACME_KEY, chargeId, key, "{\"amount\": 700}");
        assertEquals(503, first.statusCode(), first.asString());
        List<JsonNode> made = stripe.refundsFor(ACME, key);
        assertEquals(1, made.size());
        String stripeRefund = made.get(0).get("id").asText();

        deliver(only(stripe.eventsAbout("charge.refunded", "ch_" + pi.substring("pi_".length()))));
        long asked = stripe.refundCreateRequests();
        Response answered = refund(ACME_KEY, chargeId, key, "{\"amount\": 700}");
        assertEquals(201, answered.statusCode(), answered.asString());
        assertEquals("true", answered.header("Idempotent-Replayed"), "the event answered the key before the retry came");
        assertEquals("pending", answered.jsonPath().getString("status"));
        assertEquals(stripeRefund, answered.jsonPath().getString("stripe_refund"));
        assertEquals(asked, stripe.refundCreateRequests(), "Stripe is not asked again");

        stripe.settleRefund(stripeRefund, "failed");
        deliver(only(stripe.eventsAbout("charge.refund.updated", stripeRefund)));
        assertEquals("failed", get("/v1/refunds/" + answered.jsonPath().getString("id")).jsonPath().getString("status"));
        assertEquals(0, reserved(chargeId), "the failed refund gave its amount back");
    }

    static String only(List<String> events) {
        assertEquals(1, events.size(), "one such event at Stripe: " + events);
        return events.get(0);
    }

    /** Delivers an event as Stripe does (signed now). */
    static void deliver(String event) {
        Response answer = given().header("Stripe-Signature", dev.chargeonce.sandbox.SandboxWebhooks.signatureHeader(event,
                        PostgresAndSandbox.WEBHOOK_SECRET, System.currentTimeMillis() / 1000))
                .contentType("application/json; charset=utf-8").body(event).when().post("/v1/webhooks/stripe");
        assertEquals(200, answer.statusCode(), answer.asString());
    }

    @Test
    void aRefundThatFailsWhileTheEndpointIsDownIsCaughtUpAndGivesItsAmountBack() throws Exception {
        stripe.webhooks("url=" + webhookUrl + "&duplicates=1&reorder=false&lose=false&delay_ms=0");
        String chargeId = charge(DEBIT);
        String pi = get("/v1/charges/" + chargeId).jsonPath().getString("payment_intent");
        stripe.settle(pi, "succeeded");
        await(() -> "succeeded".equals(get("/v1/charges/" + chargeId).jsonPath().getString("status")), "the charge succeeded");
        Response pending = refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "{\"amount\": 900}");
        assertEquals(201, pending.statusCode(), pending.asString());
        assertEquals("pending", pending.jsonPath().getString("status"));

        stripe.webhooks("url=&duplicates=1&reorder=false&lose=false&delay_ms=0"); // the endpoint is down
        stripe.settleRefund(pending.jsonPath().getString("stripe_refund"), "failed");
        assertEquals(900, reserved(chargeId), "nothing told the service yet");
        assertTrue(catchUp.catchUpOnce() >= 1, "the refund's events are listed from the Events API");
        assertEquals("failed", get("/v1/refunds/" + pending.jsonPath().getString("id")).jsonPath().getString("status"));
        assertEquals(0, reserved(chargeId), "the failed refund gave its amount back");
    }

    @Test
    void aPendingRefundNeverMovesBackAndOnceSucceededIsNoLongerPolled() throws Exception {
        stripe.webhooks("url=" + webhookUrl + "&duplicates=1&reorder=false&lose=false&delay_ms=0");
        String chargeId = charge(DEBIT);
        String pi = get("/v1/charges/" + chargeId).jsonPath().getString("payment_intent");
        stripe.settle(pi, "succeeded");
        await(() -> "succeeded".equals(get("/v1/charges/" + chargeId).jsonPath().getString("status")), "the charge succeeded");
        Response made = refund(ACME_KEY, chargeId, UUID.randomUUID().toString(), "{\"amount\": 100}");
        assertEquals("pending", made.jsonPath().getString("status"));
        String refundId = made.jsonPath().getString("id");
        assertTrue(recheckAt(refundId) != null, "a pending refund is followed by the sync worker");

        // requires_action comes before pending: an event saying so is late, and moves nothing.
        stripe.settleRefund(made.jsonPath().getString("stripe_refund"), "requires_action");
        stripe.settleRefund(made.jsonPath().getString("stripe_refund"), "succeeded");
        await(() -> "succeeded".equals(get("/v1/refunds/" + refundId).jsonPath().getString("status")), "pending -> succeeded");
        assertNull(recheckAt(refundId), "a succeeded refund is no longer looked at on a schedule (its events still count)");
        assertEquals(100, reserved(chargeId));
    }

    java.sql.Timestamp recheckAt(String refundId) {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT recheck_at FROM stripe_refunds WHERE id = ?")) {
            ps.setString(1, refundId);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return rs.getTimestamp(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    static Response retryWhileNotFinal(String chargeId, String key, String body) {
        Response answer = null;
        for (int i = 0; i < 200; i++) {
            answer = refund(ACME_KEY, chargeId, key, body);
            if (answer.statusCode() != 409 && answer.statusCode() != 503) {
                return answer;
            }
            sleep(100);
        }
        return answer;
    }

    long reserved(String chargeId) throws RuntimeException {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT amount_reserved FROM stripe_intents WHERE id = ?")) {
            ps.setString(1, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return rs.getLong(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    static List<Response> concurrently(int n, Callable<Response> request) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<Response>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return request.call();
                }));
            }
            start.countDown();
            List<Response> answers = new ArrayList<>();
            for (Future<Response> f : futures) {
                answers.add(f.get());
            }
            return answers;
        } finally {
            pool.shutdownNow();
        }
    }

    static void await(Supplier<Boolean> condition, String what) {
        long deadline = System.nanoTime() + java.time.Duration.ofSeconds(60).toNanos();
        while (!condition.get()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting: " + what);
            sleep(100);
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

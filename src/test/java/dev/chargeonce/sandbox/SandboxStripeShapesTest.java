package dev.chargeonce.sandbox;

import static dev.chargeonce.sandbox.SandboxApiClient.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The objects the sandbox answers have Stripe's shape (Stripe's OpenAPI spec, API version
 * {@value SandboxWebhooks#DEFAULT_API_VERSION}): fields Stripe always sends are there, fields it sends only in some
 * states are absent otherwise (not {@code null}), fields Stripe sends only when expanded are absent (a charge's
 * {@code refunds}), and its error codes are Stripe's.
 */
class SandboxStripeShapesTest {

    private static StripeSandbox stripe;
    private static SandboxApiClient api;

    @BeforeAll
    static void start() throws Exception {
        stripe = StripeSandbox.start(0);
        api = new SandboxApiClient(stripe.baseUrl());
    }

    @AfterAll
    static void stop() throws Exception {
        stripe.close();
    }

    @BeforeEach
    void fresh() {
        stripe.reset();
    }

    private static JsonNode paymentIntent(String paymentMethod) {
        HttpResponse<String> created = api.post("/v1/payment_intents",
                "amount=1000&currency=usd&confirm=true&payment_method=" + paymentMethod, null);
        assertEquals(200, created.statusCode(), created.body());
        return json(created);
    }

    // ---- refunds: failure_reason only on a failed refund ---------------------------------------------------------

    @Test
    void aRefundThatDidNotFailHasNoFailureReasonInAnyAnswerOrEvent() {
        JsonNode pi = paymentIntent("pm_card_visa");
        HttpResponse<String> created = api.post("/v1/refunds", "payment_intent=" + pi.get("id").asText() + "&amount=300", null);
        assertEquals(200, created.statusCode(), created.body());
        JsonNode refund = json(created);
        String id = refund.get("id").asText();
        assertEquals("succeeded", refund.get("status").asText());
        assertFalse(refund.has("failure_reason"), "create: " + refund);
        assertFalse(json(api.get("/v1/refunds/" + id)).has("failure_reason"), "retrieve");
        assertFalse(json(api.get("/v1/refunds?payment_intent=" + pi.get("id").asText())).at("/data/0").has("failure_reason"), "list");
        assertFalse(api.eventAbout("refund.created", id).at("/data/object").has("failure_reason"), "refund.created");
    }

    @Test
    void aFailedRefundHasItsFailureReasonAndAPendingOneThatSucceedsHasNone() {
        JsonNode pi = paymentIntent("pm_sandbox_processing");
        stripe.settle(pi.get("id").asText(), "succeeded");
        JsonNode failing = json(api.post("/v1/refunds", "payment_intent=" + pi.get("id").asText() + "&amount=300", null));
        JsonNode succeeding = json(api.post("/v1/refunds", "payment_intent=" + pi.get("id").asText() + "&amount=200", null));
        assertEquals("pending", failing.get("status").asText());
        assertFalse(failing.has("failure_reason"), "pending: " + failing);

        stripe.refunds().settle(failing.get("id").asText(), "failed", "expired_or_canceled_card");
        stripe.refunds().settle(succeeding.get("id").asText(), "succeeded", null);

        JsonNode failed = json(api.get("/v1/refunds/" + failing.get("id").asText()));
        assertEquals("failed", failed.get("status").asText());
        assertEquals("expired_or_canceled_card", failed.get("failure_reason").asText());
        assertEquals("expired_or_canceled_card",
                api.eventAbout("refund.failed", failing.get("id").asText()).at("/data/object/failure_reason").asText());
        JsonNode succeeded = json(api.get("/v1/refunds/" + succeeding.get("id").asText()));
        assertEquals("succeeded", succeeded.get("status").asText());
        assertFalse(succeeded.has("failure_reason"), succeeded.toString());
        assertFalse(api.eventAbout("refund.updated", succeeding.get("id").asText()).at("/data/object").has("failure_reason"));
    }

    // ---- a charge's events: charge.refunded (the charge, without its refunds), charge.refund.updated (the refund) ---

    @Test
    void everyRefundMadeIsAChargeRefundedEventWhoseChargeDoesNotListItsRefunds() {
        JsonNode pi = paymentIntent("pm_card_visa");
        String piId = pi.get("id").asText();
        String charge = pi.get("latest_charge").asText();
        JsonNode refund = json(api.post("/v1/refunds", "payment_intent=" + piId + "&amount=300", null));
        assertEquals(charge, refund.get("charge").asText(), "a refund names its charge: " + refund);

        JsonNode partly = api.eventAbout("charge.refunded", charge).at("/data/object");
        assertEquals("charge", partly.get("object").asText(), partly.toString());
        assertFalse(partly.has("refunds"), "since API version 2022-11-15 only an expanded charge lists its refunds: " + partly);
        assertEquals(300, partly.get("amount_refunded").asLong());
        assertFalse(partly.get("refunded").asBoolean(), "refunded in part");
        assertEquals(piId, partly.get("payment_intent").asText());
        assertEquals(1000, partly.get("amount").asLong());

        JsonNode rest = json(api.control("/_sandbox/dashboard/refunds?payment_intent=" + piId));
        JsonNode whole = api.eventAbout("charge.refunded", charge).at("/data/object");
        assertEquals(1000, whole.get("amount_refunded").asLong(), whole.toString());
        assertTrue(whole.get("refunded").asBoolean(), "refunded in full");
        assertFalse(whole.has("refunds"), whole.toString());
        assertEquals(2, count("charge.refunded", charge), "one per refund, the API's and the Dashboard's");

        JsonNode listed = json(api.get("/v1/refunds?charge=" + charge)).get("data");
        assertEquals(2, listed.size(), "the charge's refunds are listed by charge: " + listed);
        assertEquals(rest.get("id").asText(), listed.get(0).get("id").asText(), "newest first");
        assertEquals(0, json(api.get("/v1/refunds?charge=ch_none")).get("data").size());
    }

    @Test
    void anEventRenderedInAnApiVersionBefore20221115ListsTheChargesRefunds() {
        JsonNode pi = paymentIntent("pm_card_visa");
        api.control("/_sandbox/webhooks?api_version=2020-08-27");
        String refund = json(api.post("/v1/refunds", "payment_intent=" + pi.get("id").asText(), null)).get("id").asText();
        JsonNode event = api.eventAbout("charge.refunded", pi.get("latest_charge").asText());
        assertEquals("2020-08-27", event.get("api_version").asText());
        assertEquals(refund, event.at("/data/object/refunds/data/0/id").asText(), event.toString());
        assertFalse(event.at("/data/object/refunds/has_more").asBoolean());
    }

    @Test
    void aRefundWhoseStatusChangesIsAChargeRefundUpdatedEventWithTheRefund() {
        JsonNode pi = paymentIntent("pm_sandbox_processing");
        stripe.settle(pi.get("id").asText(), "succeeded");
        JsonNode pending = json(api.post("/v1/refunds", "payment_intent=" + pi.get("id").asText() + "&amount=300", null));
        String id = pending.get("id").asText();
        assertEquals("pending", pending.get("status").asText());
        assertEquals(0, count("charge.refund.updated", id), "made, not updated");
        assertEquals(300, api.eventAbout("charge.refunded", pi.get("latest_charge").asText()).at("/data/object/amount_refunded").asLong(),
                "a pending refund counts in amount_refunded");

        stripe.refunds().settle(id, "failed", "expired_or_canceled_card");
        JsonNode updated = api.eventAbout("charge.refund.updated", id).at("/data/object");
        assertEquals("refund", updated.get("object").asText(), updated.toString());
        assertEquals("failed", updated.get("status").asText());
        assertEquals("expired_or_canceled_card", updated.get("failure_reason").asText());
        assertEquals(pi.get("latest_charge").asText(), updated.get("charge").asText());
        assertEquals(1, count("charge.refund.updated", id));
    }

    private static int count(String type, String objectId) {
        int n = 0;
        for (JsonNode event : json(api.get("/v1/events?limit=100&type=" + type)).get("data")) {
            n += objectId.equals(event.at("/data/object/id").asText()) ? 1 : 0;
        }
        return n;
    }

    // ---- customers: created and livemode ----------------------------------------------------------------------------

    @Test
    void aCustomerHasCreatedAndLivemodeWhenMadeReadOrMadeThroughTheControlPlane() {
        long before = System.currentTimeMillis() / 1000;
        JsonNode created = json(api.post("/v1/customers", "metadata%5Bchargeonce_client_id%5D=client-a", null));
        JsonNode read = json(api.get("/v1/customers/" + created.get("id").asText()));
        JsonNode chosen = json(api.control("/_sandbox/customers?id=cus_chosen&client=client-b"));
        for (JsonNode customer : new JsonNode[] {created, read, chosen}) {
            assertEquals("customer", customer.get("object").asText(), customer.toString());
            assertTrue(customer.get("created").isIntegralNumber() && customer.get("created").asLong() >= before - 1, customer.toString());
            assertTrue(customer.get("livemode").isBoolean() && !customer.get("livemode").asBoolean(), customer.toString());
        }
        assertEquals("client-a", read.at("/metadata/chargeonce_client_id").asText());
        assertEquals("client-b", json(api.get("/v1/customers/cus_chosen")).at("/metadata/chargeonce_client_id").asText());
    }

    // ---- PaymentIntent cancel: canceled_at and cancellation_reason --------------------------------------------------

    @Test
    void aCancelWithAReasonSetsCanceledAtAndCancellationReason() {
        JsonNode pi = paymentIntent("pm_card_authenticationRequired");
        assertEquals("requires_action", pi.get("status").asText());
        assertTrue(pi.get("canceled_at").isNull(), "not canceled yet: " + pi);
        assertTrue(pi.get("cancellation_reason").isNull(), "not canceled yet: " + pi);

        long before = System.currentTimeMillis() / 1000;
        HttpResponse<String> canceled = api.post("/v1/payment_intents/" + pi.get("id").asText() + "/cancel",
                "cancellation_reason=abandoned", null);
        assertEquals(200, canceled.statusCode(), canceled.body());
        for (JsonNode shown : new JsonNode[] {json(canceled), json(api.get("/v1/payment_intents/" + pi.get("id").asText())),
                api.eventAbout("payment_intent.canceled", pi.get("id").asText()).at("/data/object")}) {
            assertEquals("canceled", shown.get("status").asText(), shown.toString());
            assertEquals("abandoned", shown.get("cancellation_reason").asText(), shown.toString());
            assertTrue(shown.get("canceled_at").asLong() >= before - 1, shown.toString());
        }
    }

    @Test
    void aCancelWithoutAReasonSetsCanceledAtOnlyAndAnUnknownReasonIsRefused() {
        JsonNode first = paymentIntent("pm_card_threeDSecure2Required");
        JsonNode canceled = json(api.post("/v1/payment_intents/" + first.get("id").asText() + "/cancel", "", null));
        assertEquals("canceled", canceled.get("status").asText());
        assertTrue(canceled.get("canceled_at").asLong() > 0, canceled.toString());
        assertTrue(canceled.get("cancellation_reason").isNull(), canceled.toString());

        JsonNode second = paymentIntent("pm_card_threeDSecure2Required");
        HttpResponse<String> refused = api.post("/v1/payment_intents/" + second.get("id").asText() + "/cancel",
                "cancellation_reason=bored", null);
        assertEquals(400, refused.statusCode(), refused.body());
        assertEquals("cancellation_reason", json(refused).at("/error/param").asText());
        assertEquals("requires_action", json(api.get("/v1/payment_intents/" + second.get("id").asText())).get("status").asText());
    }

    // ---- a decline: its charge and its payment method ------------------------------------------------------------

    @Test
    void aDeclineNamesItsChargeAndPaymentMethodAndThePaymentIntentItsLatestCharge() {
        HttpResponse<String> declined = api.post("/v1/payment_intents",
                "amount=1000&currency=usd&confirm=true&payment_method=pm_card_chargeDeclined", null);
        assertEquals(402, declined.statusCode(), declined.body());
        JsonNode error = json(declined).get("error");
        assertEquals("card_declined", error.get("code").asText());
        String charge = error.get("charge").asText();
        assertTrue(charge.startsWith("ch_"), error.toString());
        assertEquals("pm_card_chargeDeclined", error.at("/payment_method/id").asText(), error.toString());
        assertEquals("payment_method", error.at("/payment_method/object").asText());
        assertEquals("card", error.at("/payment_method/type").asText());
        assertEquals(charge, error.at("/payment_intent/latest_charge").asText());
        String piId = error.at("/payment_intent/id").asText();
        assertEquals(charge, json(api.get("/v1/payment_intents/" + piId)).get("latest_charge").asText());
        assertEquals(charge, api.eventAbout("payment_intent.payment_failed", piId).at("/data/object/latest_charge").asText());
    }

    @Test
    void aPaymentIntentThatNoChargeWasAttemptedForHasNoLatestCharge() {
        JsonNode pi = paymentIntent("pm_card_authenticationRequired");
        assertTrue(pi.get("latest_charge").isNull(), pi.toString());
        assertTrue(paymentIntent("pm_card_visa").get("latest_charge").asText().startsWith("ch_"));
    }

    // ---- amounts out of range ----------------------------------------------------------------------------------

    @Test
    void anAmountAboveStripesMaximumIsTooLargeAndBelowItsMinimumTooSmall() {
        HttpResponse<String> large = api.post("/v1/payment_intents",
                "amount=100000000&currency=usd&confirm=true&payment_method=pm_card_visa", null);
        assertEquals(400, large.statusCode(), large.body());
        assertEquals("amount_too_large", json(large).at("/error/code").asText());
        assertEquals("amount", json(large).at("/error/param").asText());
        HttpResponse<String> small = api.post("/v1/payment_intents",
                "amount=0&currency=usd&confirm=true&payment_method=pm_card_visa", null);
        assertEquals("amount_too_small", json(small).at("/error/code").asText());
        assertEquals(200, api.post("/v1/payment_intents",
                "amount=99999999&currency=usd&confirm=true&payment_method=pm_card_visa", null).statusCode(), "the maximum itself");
    }
}

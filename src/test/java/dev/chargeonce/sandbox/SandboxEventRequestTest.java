package dev.chargeonce.sandbox;

import static dev.chargeonce.sandbox.SandboxApiClient.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An event's {@code request} as Stripe's: the {@code Request-Id} and {@code Idempotency-Key} of the API request that
 * caused it, both null for an event nothing in the API caused (a payment settled at the bank).
 */
class SandboxEventRequestTest {

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

    private static String requestId(HttpResponse<String> answer) {
        String id = answer.headers().firstValue("Request-Id").orElseThrow();
        assertTrue(id.startsWith("req_"), id);
        return id;
    }

    private static void assertRequest(String requestId, String idempotencyKey, JsonNode event) {
        assertEquals(requestId, event.at("/request/id").isNull() ? null : event.at("/request/id").asText(), event.toString());
        assertEquals(idempotencyKey, event.at("/request/idempotency_key").isNull() ? null
                : event.at("/request/idempotency_key").asText(), event.toString());
    }

    @Test
    void eventsOfACreateNameItsRequestAndKey() {
        HttpResponse<String> created = api.post("/v1/payment_intents",
                "amount=1000&currency=usd&confirm=true&payment_method=pm_card_visa", "create-key-1");
        String pi = json(created).get("id").asText();
        assertRequest(requestId(created), "create-key-1", api.eventAbout("payment_intent.created", pi));
        assertRequest(requestId(created), "create-key-1", api.eventAbout("payment_intent.succeeded", pi));

        HttpResponse<String> refund = api.post("/v1/refunds", "payment_intent=" + pi, "refund-key-1");
        assertRequest(requestId(refund), "refund-key-1", api.eventAbout("refund.created", json(refund).get("id").asText()));
        assertRequest(requestId(refund), "refund-key-1", api.eventAbout("charge.refunded", json(refund).get("charge").asText()));

        HttpResponse<String> withoutKey = api.post("/v1/payment_intents",
                "amount=1000&currency=usd&confirm=true&payment_method=pm_card_chargeDeclined", null);
        assertEquals(402, withoutKey.statusCode());
        assertRequest(requestId(withoutKey), null,
                api.eventAbout("payment_intent.payment_failed", json(withoutKey).at("/error/payment_intent/id").asText()));
    }

    @Test
    void aCancelsEventNamesTheCancelRequestAndWhatNothingInTheApiCausedNamesNone() {
        String waiting = json(api.post("/v1/payment_intents",
                "amount=1000&currency=usd&confirm=true&payment_method=pm_card_authenticationRequired", "k-3ds")).get("id").asText();
        HttpResponse<String> cancel = api.post("/v1/payment_intents/" + waiting + "/cancel", "cancellation_reason=abandoned", "k-cancel");
        assertRequest(requestId(cancel), "k-cancel", api.eventAbout("payment_intent.canceled", waiting));

        String processing = json(api.post("/v1/payment_intents",
                "amount=1000&currency=usd&confirm=true&payment_method=pm_sandbox_processing", "k-bank")).get("id").asText();
        stripe.settle(processing, "succeeded");
        assertRequest(null, null, api.eventAbout("payment_intent.succeeded", processing));
    }

    @Test
    void aRefundSettledAtTheBankOrMadeInTheDashboardNamesNoRequest() {
        String pi = json(api.post("/v1/payment_intents",
                "amount=1000&currency=usd&confirm=true&payment_method=pm_sandbox_processing", "k-debit")).get("id").asText();
        stripe.settle(pi, "succeeded");
        HttpResponse<String> made = api.post("/v1/refunds", "payment_intent=" + pi + "&amount=400", "k-refund");
        String refund = json(made).get("id").asText();
        String charge = json(made).get("charge").asText();
        assertRequest(requestId(made), "k-refund", api.eventAbout("charge.refunded", charge));
        stripe.refunds().settle(refund, "succeeded", null);
        assertRequest(null, null, api.eventAbout("refund.updated", refund));
        assertRequest(null, null, api.eventAbout("charge.refund.updated", refund));

        String dashboard = json(api.control("/_sandbox/dashboard/refunds?payment_intent=" + pi)).get("id").asText();
        assertRequest(null, null, api.eventAbout("refund.created", dashboard));
        assertRequest(null, null, api.eventAbout("charge.refunded", charge));
    }
}

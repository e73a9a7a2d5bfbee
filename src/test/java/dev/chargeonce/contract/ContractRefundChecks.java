package dev.chargeonce.contract;

import static dev.chargeonce.testing.TestClients.GLOBEX_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * The contract's checks of refunds: made, replayed, refused before Stripe and by Stripe, failed, in flight, reused,
 * of another client's charge, and the charge endpoints' refusals on the refund endpoints.
 */
abstract class ContractRefundChecks extends ContractRefusalChecks {

    // ---- refunds: POST and GET /v1/charges/{id}/refunds, GET /v1/refunds/{id} ------------------------------------

    @Test
    @Order(80)
    void refundIs201AndEveryRetryIsTheIdenticalReplay() {
        String chargeId = succeededCharge();
        Call refund = Call.createRefund(chargeId, newKey(), "{\"amount\": 300, \"reason\": \"requested_by_customer\", "
                + "\"metadata\": {\"ticket\": \"T-9\"}}");
        assertSpecAccepts(refund);
        Answer first = check(refund, 201);
        assertNull(first.header("Idempotent-Replayed"));
        assertEquals("succeeded", first.json().get("status").asText());
        Answer replay = check(refund, 201);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body(), "a replay is byte for byte the first answer");

        Call rest = Call.createRefund(chargeId, newKey(), null);
        assertSpecAccepts(rest);
        assertEquals(700, check(rest, 201).json().get("amount").asInt(), "no body: what is left");
        // The JSON null, which a generated client sends for an optional body it was not given, is no body too.
        Call nullBody = Call.createRefund(chargeId, newKey(), "null");
        assertSpecAccepts(nullBody);
        assertEquals("amount_too_large", check(nullBody, 400).json().get("error").get("code").asText(), "nothing is left");

        String refundId = first.json().get("id").asText();
        assertEquals(refundId, check(Call.getRefund(refundId), 200).json().get("id").asText());
        Answer page = check(Call.listRefunds(chargeId).query("limit", "1"), 200);
        assertTrue(page.json().get("has_more").asBoolean());
        assertEquals(2, check(Call.listRefunds(chargeId), 200).json().get("data").size());
        JsonNode charge = check(Call.getCharge(chargeId), 200).json();
        assertEquals(1000, charge.get("amount_refunded").asInt());
        assertTrue(charge.get("refunded").asBoolean());
    }

    @Test
    @Order(81)
    void refundRefusalsAre400BeforeStripeAndStripesOwnIsStored() {
        String chargeId = succeededCharge();
        long asked = stripe.refundCreateRequests();
        Call tooMuch = Call.createRefund(chargeId, newKey(), "{\"amount\": 1001}");
        assertEquals("amount_too_large", check(tooMuch, 400).json().get("error").get("code").asText());
        for (String body : List.of("{\"amount\": 0}", "{\"amount\": 10.5}", "{\"reason\": \"because\"}", "{\"refund\": 1}")) {
            Call invalid = Call.createRefund(chargeId, newKey(), body);
            assertSpecRejects(invalid);
            check(invalid, 400);
        }
        Call noKey = Call.createRefund(chargeId, NO_KEY, "{}");
        assertSpecRejects(noKey);
        assertEquals("Idempotency-Key", check(noKey, 400).json().get("error").get("param").asText());
        String declined = check(Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_card_chargeDeclined")), 402)
                .json().get("error").get("charge").asText();
        assertEquals("charge_not_refundable", check(Call.createRefund(declined, newKey(), "{}"), 400)
                .json().get("error").get("code").asText());
        assertEquals(asked, stripe.refundCreateRequests(), "none of these reached Stripe");

        // Refunded at Stripe outside the service: Stripe's refusal is the key's stored answer.
        String pi = check(Call.getCharge(chargeId), 200).json().get("payment_intent").asText();
        stripe.refundOutsideTheService(pi);
        Call refused = Call.createRefund(chargeId, newKey(), "{\"amount\": 100}");
        Answer first = check(refused, 400);
        assertEquals("charge_already_refunded", first.json().get("error").get("code").asText());
        Answer replay = check(refused, 400);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body());
    }

    @Test
    @Order(82)
    void aRefundThatFailedBeforeItsAnswerIs402AndIsReplayed() {
        // A bank debit's refund stays pending at Stripe; the create's answer is lost (500 after refunding) and the
        // refund fails before the retry finds it. (No webhooks are delivered in this suite.)
        String chargeId = check(Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_sandbox_processing")), 202)
                .json().get("id").asText();
        String pi = check(Call.getCharge(chargeId), 200).json().get("payment_intent").asText();
        stripe.settle(pi, "succeeded");
        String event = "{\"id\":\"evt_contract" + newKey().substring(9, 21) + "\",\"object\":\"event\",\"api_version\":\""
                + dev.chargeonce.sandbox.SandboxWebhooks.DEFAULT_API_VERSION + "\",\"created\":" + System.currentTimeMillis() / 1000
                + ",\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":" + stripe.paymentIntent(pi) + "}}";
        check(Call.webhook(event, signed(event)), 200);
        assertEquals("succeeded", check(Call.getCharge(chargeId), 200).json().get("status").asText());

        String key = newKey();
        Call refund = Call.createRefund(chargeId, key, "{\"amount\": 400}");
        stripe.plan("fail_after");
        Answer unknown = check(refund, 503);
        assertEquals("stripe_outcome_unknown", unknown.json().get("error").get("code").asText());
        List<JsonNode> made = stripe.refundsFor(dev.chargeonce.testing.TestClients.ACME, key);
        assertEquals(1, made.size());
        stripe.settleRefund(made.get(0).get("id").asText(), "failed");
        Answer failed = check(refund, 402);
        assertEquals("refund_failed", failed.json().get("error").get("code").asText());
        Answer replay = check(refund, 402);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(failed.body(), replay.body());
    }

    @Test
    @Order(83)
    void refundKeyInFlightIs409AndReusedIs422() throws Exception {
        String chargeId = succeededCharge();
        String key = newKey();
        Call refund = Call.createRefund(chargeId, key, "{\"amount\": 100}");
        stripe.faults("latency_ms=1500");
        try {
            long before = stripe.refundCreateRequests();
            CompletableFuture<Answer> first = CompletableFuture.supplyAsync(() -> send(refund));
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (stripe.refundCreateRequests() == before) {
                assertTrue(System.nanoTime() < deadline, "the first refund never reached Stripe");
                Thread.sleep(20);
            }
            assertTrue(Integer.parseInt(check(refund, 409).header("Retry-After")) >= 1);
            validate(refund, first.get(30, TimeUnit.SECONDS), 201);
        } finally {
            stripe.clearFaults();
        }
        assertEquals("idempotency_key_reused", check(Call.createRefund(chargeId, key, "{\"amount\": 200}"), 422)
                .json().get("error").get("code").asText());
        assertEquals("idempotency_key_reused", check(Call.createRefund(succeededCharge(), key, "{\"amount\": 100}"), 422)
                .json().get("error").get("code").asText(), "one refund key, another charge");
    }

    @Test
    @Order(84)
    void refundOfAnUnknownOrForeignChargeIs404AndRefundsAreTheClientsOwn() {
        String chargeId = succeededCharge();
        String refundId = check(Call.createRefund(chargeId, newKey(), "{\"amount\": 100}"), 201).json().get("id").asText();
        Answer unknown = check(Call.createRefund("chg_doesnotexist", newKey(), "{}"), 404);
        assertEquals("id", unknown.json().get("error").get("param").asText());
        check(Call.createRefund(chargeId, newKey(), "{}").header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        check(Call.listRefunds(chargeId).header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        check(Call.listRefunds("chg_doesnotexist"), 404);
        check(Call.getRefund(refundId).header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        check(Call.getRefund("rfd_doesnotexist"), 404);
    }

    @Test
    @Order(85)
    void refundEndpointsRefuseWhatChargeEndpointsRefuse() {
        String chargeId = succeededCharge();
        check(Call.createRefund(chargeId, newKey(), "{}").without("Authorization"), 401);
        check(Call.listRefunds(chargeId).without("Authorization"), 401);
        check(Call.getRefund("rfd_" + "a".repeat(24)).without("Authorization"), 401);
        check(Call.createRefund(chargeId, newKey(), "{}").header("Accept", "text/plain"), 406);
        check(Call.listRefunds(chargeId).header("Accept", "text/plain"), 406);
        check(Call.getRefund("rfd_" + "a".repeat(24)).header("Accept", "text/plain"), 406);
        Call big = Call.createRefund(chargeId, newKey(), "{\"metadata\": {\"k\": \"" + "x".repeat(70 * 1024) + "\"}}");
        assertEquals("body_too_large", check(big, 413).json().get("error").get("code").asText());
        check(Call.createRefund(chargeId, newKey(), "amount=1").header("Content-Type", "text/plain"), 415);
        for (String limit : List.of("0", "101", "abc")) {
            Call list = Call.listRefunds(chargeId).query("limit", limit);
            assertSpecRejects(list);
            assertEquals("limit", check(list, 400).json().get("error").get("param").asText());
        }
    }

    @Test
    @Order(86)
    void refundWithStripeOutcomeUnknownIs503AndTheRetryRefundsOnce() {
        String chargeId = succeededCharge();
        String key = newKey();
        Call refund = Call.createRefund(chargeId, key, "{\"amount\": 100}");
        stripe.plan("fail_before");
        assertEquals("stripe_outcome_unknown", check(refund, 503).json().get("error").get("code").asText());
        check(refund, 201);
        assertEquals(1, stripe.refundsFor(dev.chargeonce.testing.TestClients.ACME, key).size());
    }
}

package dev.chargeonce.contract;

import static dev.chargeonce.testing.TestClients.GLOBEX_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
 * The contract's checks of what a charge answers when it is made (201, 202, 402, Stripe's final 400, 409, 422),
 * read and listed (200, 404, the list's 400s), what the webhook endpoint answers, and what a key's status reads.
 */
abstract class ContractChargeChecks extends ContractDocumentChecks {

    // ---- POST /v1/charges ----------------------------------------------------------------------------------------

    @Test
    @Order(10)
    void chargeIs201AndEveryRetryIsTheIdenticalReplay() {
        Call create = Call.createCharge(newKey(), VISA);
        assertSpecAccepts(create);

        Answer first = check(create, 201);
        assertNull(first.header("Idempotent-Replayed"), "a first answer is not a replay");
        JsonNode charge = first.json();
        assertEquals("succeeded", charge.get("status").asText());

        Answer replay = check(create, 201);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body(), "a replay is byte for byte the first answer");

        String id = charge.get("id").asText();
        Answer read = check(Call.getCharge(id), 200);
        assertEquals(id, read.json().get("id").asText());

        Answer page = check(Call.listCharges().query("limit", "5"), 200);
        assertEquals(id, page.json().get("data").get(0).get("id").asText(), "newest first");
        check(Call.listCharges(), 200);
    }

    @Test
    @Order(11)
    void theLargestValidChargePassesTheSchemaAndTheService() {
        // Every limit at its maximum: the schema and the parser agree on where valid ends.
        StringBuilder metadata = new StringBuilder("{");
        for (int i = 0; i < 47; i++) {
            String key = String.format("k%02d", i) + "x".repeat(37);
            metadata.append(i == 0 ? "" : ",").append('"').append(key).append("\":\"").append("v".repeat(500)).append('"');
        }
        metadata.append('}');
        String body = "{\"amount\": 99999999, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", "
                + "\"customer\": \"cus_" + "C".repeat(251) + "\", \"description\": \"" + "d".repeat(1000) + "\", "
                + "\"metadata\": " + metadata + "}";
        // 255 printable ASCII characters (space to tilde); not starting or ending with a space, which HTTP trims.
        StringBuilder key = new StringBuilder();
        for (int c = 0x21; key.length() < 255; c = c == 0x7e ? 0x20 : c + 1) {
            key.append((char) c);
        }
        key.setCharAt(254, 'Z');
        Call create = Call.createCharge(key.toString(), body);
        assertSpecAccepts(create);
        stripe.customer("cus_" + "C".repeat(251), dev.chargeonce.testing.TestClients.ACME); // the client's own customer
        check(create, 201);
    }

    @Test
    @Order(20)
    void declineIs402AndIsReplayedLikeASuccess() {
        Call declined = Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_card_visa_chargeDeclinedInsufficientFunds"));
        assertSpecAccepts(declined);
        Answer first = check(declined, 402);
        JsonNode error = first.json().get("error");
        assertEquals("card_error", error.get("type").asText());
        assertEquals("insufficient_funds", error.get("decline_code").asText());
        Answer replay = check(declined, 402);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body());

        // The declined charge is readable, as failed.
        JsonNode charge = check(Call.getCharge(error.get("charge").asText()), 200).json();
        assertEquals("failed", charge.get("status").asText());
    }

    @Test
    @Order(22)
    void threeDSecureAndBankDebitsAre202AndReplayed() {
        Call needsAction = Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_card_authenticationRequired"));
        Answer first = check(needsAction, 202);
        assertEquals("requires_action", first.json().get("status").asText());
        assertTrue(first.json().hasNonNull("client_secret"));
        Answer replay = check(needsAction, 202);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body());
        // Readable while the customer has not authenticated.
        assertEquals("requires_action", check(Call.getCharge(first.json().get("id").asText()), 200).json().get("status").asText());

        Answer debit = check(Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_sandbox_processing")), 202);
        assertEquals("processing", debit.json().get("status").asText());
    }

    // ---- POST /v1/webhooks/stripe -----------------------------------------------------------------------------------

    @Test
    @Order(23)
    void aSignedEventIs200AndABadSignatureIs400() {
        String event = "{\"id\":\"evt_contract" + newKey().substring(0, 8) + "\",\"object\":\"event\",\"api_version\":\""
                + dev.chargeonce.sandbox.SandboxWebhooks.DEFAULT_API_VERSION + "\",\"created\":" + System.currentTimeMillis() / 1000
                + ",\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_contract\",\"object\":\"payment_intent\","
                + "\"status\":\"succeeded\",\"metadata\":{}}}}";
        Answer accepted = check(Call.webhook(event, signed(event)), 200);
        assertFalse(accepted.json().get("duplicate").asBoolean());
        assertTrue(check(Call.webhook(event, signed(event)), 200).json().get("duplicate").asBoolean(), "a redelivery");
        Answer refused = check(Call.webhook(event, "t=1,v1=00"), 400);
        assertEquals("Stripe-Signature", refused.json().get("error").get("param").asText());
        Call unsigned = Call.webhook(event, null);
        assertSpecRejects(unsigned);
        assertEquals("signature_missing", check(unsigned, 400).json().get("error").get("code").asText());
    }

    @Test
    @Order(21)
    void aChargeStripeRefusesIsAFinal400NamingTheCharge() {
        // Valid for this service, unknown to Stripe: Stripe's refusal is final, stored and replayed.
        Call refused = Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_card_doesNotExist"));
        assertSpecAccepts(refused);
        Answer first = check(refused, 400);
        JsonNode error = first.json().get("error");
        assertEquals("resource_missing", error.get("code").asText());
        assertEquals("payment_method", error.get("param").asText());
        Answer replay = check(refused, 400);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body());

        JsonNode charge = check(Call.getCharge(error.get("charge").asText()), 200).json();
        assertEquals("failed", charge.get("status").asText());
        assertTrue(charge.get("payment_intent").isNull());
    }

    @Test
    @Order(30)
    void sameKeyInFlightIs409WithRetryAfter() throws Exception {
        Call create = Call.createCharge(newKey(), VISA);
        long createsBefore = stripe.createRequests();
        stripe.faults("latency_ms=1500");
        try {
            CompletableFuture<Answer> first = CompletableFuture.supplyAsync(() -> send(create));
            // The first request holds the claim once its Stripe call has started.
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (stripe.createRequests() == createsBefore) {
                assertTrue(System.nanoTime() < deadline, "the first request never reached Stripe");
                Thread.sleep(20);
            }
            Answer conflict = check(create, 409);
            assertTrue(Integer.parseInt(conflict.header("Retry-After")) >= 1);
            assertEquals("idempotency_key_in_use", conflict.json().get("error").get("code").asText());

            validate(create, first.get(30, TimeUnit.SECONDS), 201);
        } finally {
            stripe.clearFaults();
        }
    }

    @Test
    @Order(31)
    void sameKeyWithAnotherBodyIs422() {
        String key = newKey();
        check(Call.createCharge(key, VISA), 201);
        long createsBefore = stripe.createRequests();
        Call reused = Call.createCharge(key, VISA.replace("1000", "2000"));
        assertSpecAccepts(reused);
        Answer mismatch = check(reused, 422);
        assertEquals("idempotency_key_reused", mismatch.json().get("error").get("code").asText());
        assertEquals(createsBefore, stripe.createRequests(), "a 422 never reaches Stripe");
    }

    // ---- GET /v1/charges/{id}, GET /v1/charges -------------------------------------------------------------------

    @Test
    @Order(70)
    void unknownOrAnotherClientsChargeIs404() {
        String acmeCharge = check(Call.createCharge(newKey(), VISA), 201).json().get("id").asText();
        check(Call.getCharge("chg_doesnotexist"), 404);
        Answer foreign = check(Call.getCharge(acmeCharge).header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        assertEquals("id", foreign.json().get("error").get("param").asText());
    }

    @Test
    @Order(71)
    void limitOutsideOneToHundredIs400() {
        for (String limit : List.of("0", "101", "abc")) {
            Call list = Call.listCharges().query("limit", limit);
            assertSpecRejects(list);
            assertEquals("limit", check(list, 400).json().get("error").get("param").asText());
        }
        for (String limit : List.of("1", "100")) {
            Call list = Call.listCharges().query("limit", limit);
            assertSpecAccepts(list);
            assertTrue(check(list, 200).json().get("data").size() <= Integer.parseInt(limit));
        }
    }

    @Test
    @Order(72)
    void bothCursorsOrACursorNamingNoChargeOfTheClientIs400() {
        String id = check(Call.createCharge(newKey(), VISA), 201).json().get("id").asText();
        // OpenAPI 3.0 cannot make two query parameters exclusive: the contract says so in words and lists the code.
        Call both = Call.listCharges().query("starting_after", id).query("ending_before", id);
        assertSpecAccepts(both);
        assertEquals("parameter_invalid", check(both, 400).json().get("error").get("code").asText());
        Call unknown = Call.listCharges().query("starting_after", "chg_" + "0".repeat(24));
        assertSpecAccepts(unknown);
        JsonNode error = check(unknown, 400).json().get("error");
        assertEquals("resource_missing", error.get("code").asText());
        assertEquals("starting_after", error.get("param").asText());
    }

    // ---- GET /v1/idempotency-keys/{key} --------------------------------------------------------------------------

    @Test
    @Order(87)
    void aKeysStatusIsReadableByItsClientOnly() {
        String key = "status/" + newKey() + " with spaces";
        String charge = check(Call.createCharge(key, VISA), 201).json().get("id").asText();
        Answer status = check(Call.getKey(key), 200);
        assertEquals("completed", status.json().get("status").asText());
        assertEquals(charge, status.json().get("charge").asText());
        assertEquals(key, status.json().get("key").asText());
        check(Call.getKey(key).header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        check(Call.getKey("never-" + newKey()), 404);
        assertEquals("operation", check(Call.getKey(key).query("operation", "payout"), 400).json().get("error").get("param").asText());
        check(Call.getKey(key).without("Authorization"), 401);
        check(Call.getKey(key).header("Accept", "text/plain"), 406);
    }
}

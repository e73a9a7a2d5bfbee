package dev.chargeonce.sandbox;

import static dev.chargeonce.sandbox.SandboxApiClient.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.stripe.StripeClient;
import com.stripe.exception.CardException;
import com.stripe.model.PaymentIntent;
import com.stripe.net.RequestOptions;
import com.stripe.param.PaymentIntentCreateParams;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The sandbox's idempotency as Stripe's (https://docs.stripe.com/api/idempotent_requests): an answer is saved for a
 * key only once the endpoint began executing, so a request that failed parameter validation can be retried with the
 * same key and fixed parameters; a decline is saved and replayed; every POST answer echoes its Idempotency-Key.
 */
class SandboxIdempotencyTest {

    private static final String VISA = "amount=1000&currency=usd&confirm=true&payment_method=pm_card_visa";
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

    private static String key() {
        return "key-" + UUID.randomUUID();
    }

    private static boolean replayed(HttpResponse<String> answer) {
        return answer.headers().firstValue("Idempotent-Replayed").map("true"::equals).orElse(false);
    }

    @Test
    void aCreateThatFailedValidationIsNotSavedSoTheSameKeyWithFixedParametersRuns() {
        String key = key();
        HttpResponse<String> missing = api.post("/v1/payment_intents", "currency=usd&confirm=true&payment_method=pm_card_visa", key);
        assertEquals(400, missing.statusCode(), missing.body());
        assertEquals("parameter_missing", json(missing).at("/error/code").asText());

        HttpResponse<String> tooLarge = api.post("/v1/payment_intents", VISA.replace("1000", "100000000"), key);
        assertEquals("amount_too_large", json(tooLarge).at("/error/code").asText(), "still unbound: validated, not a key conflict");

        HttpResponse<String> fixed = api.post("/v1/payment_intents", VISA, key);
        assertEquals(200, fixed.statusCode(), fixed.body());
        assertFalse(replayed(fixed));
        HttpResponse<String> again = api.post("/v1/payment_intents", VISA, key);
        assertTrue(replayed(again), "the success is saved");
        assertEquals(json(fixed).get("id"), json(again).get("id"));
        assertEquals(1, stripe.ledger().size());

        HttpResponse<String> other = api.post("/v1/payment_intents", VISA.replace("1000", "2000"), key);
        assertEquals(400, other.statusCode());
        assertEquals("idempotency_error", json(other).at("/error/type").asText(), "now bound to its parameters");
    }

    @Test
    void aRefundThatFailedValidationIsNotSavedButOneRefusedAfterItRanIs() {
        String pi = json(api.post("/v1/payment_intents", VISA, null)).get("id").asText();
        String key = key();
        HttpResponse<String> invalid = api.post("/v1/refunds", "payment_intent=" + pi + "&amount=0", key);
        assertEquals(400, invalid.statusCode(), invalid.body());
        HttpResponse<String> fixed = api.post("/v1/refunds", "payment_intent=" + pi + "&amount=600", key);
        assertEquals(200, fixed.statusCode(), fixed.body());

        // More than what is left: the endpoint ran and refused it, and that answer is the key's.
        String second = key();
        HttpResponse<String> tooMuch = api.post("/v1/refunds", "payment_intent=" + pi + "&amount=600", second);
        assertEquals(400, tooMuch.statusCode(), tooMuch.body());
        HttpResponse<String> smaller = api.post("/v1/refunds", "payment_intent=" + pi + "&amount=400", second);
        assertEquals("idempotency_error", json(smaller).at("/error/type").asText(), smaller.body());
        assertTrue(replayed(api.post("/v1/refunds", "payment_intent=" + pi + "&amount=600", second)));
    }

    @Test
    void aDeclineIsSavedAndReplayed() {
        String key = key();
        String declined = VISA.replace("pm_card_visa", "pm_card_chargeDeclined");
        HttpResponse<String> first = api.post("/v1/payment_intents", declined, key);
        assertEquals(402, first.statusCode(), first.body());
        HttpResponse<String> again = api.post("/v1/payment_intents", declined, key);
        assertEquals(402, again.statusCode());
        assertTrue(replayed(again));
        assertEquals(first.body(), again.body());
        assertEquals(1, stripe.ledger().size());
    }

    @Test
    void everyPostAnswerEchoesItsIdempotencyKeyFirstHandReplayedOrRefused() {
        String key = key();
        for (HttpResponse<String> answer : java.util.List.of(api.post("/v1/payment_intents", VISA, key),
                api.post("/v1/payment_intents", VISA, key), api.post("/v1/payment_intents", VISA.replace("1000", "5"), key))) {
            assertEquals(key, answer.headers().firstValue("Idempotency-Key").orElse(null), answer.statusCode() + " " + answer.body());
        }
        HttpResponse<String> withoutKey = api.post("/v1/payment_intents", VISA, null);
        assertFalse(withoutKey.headers().firstValue("Idempotency-Key").isPresent(), "none sent, none echoed");
    }

    @Test
    void stripeJavaReadsTheEchoedKeyOfAnAnswerAndOfADecline() throws Exception {
        StripeClient client = StripeClient.builder().setApiKey("sk_test_sandbox").setApiBase(stripe.baseUrl())
                .setMaxNetworkRetries(0).build();
        String key = key();
        PaymentIntent pi = client.v1().paymentIntents().create(PaymentIntentCreateParams.builder().setAmount(1000L)
                .setCurrency("usd").setConfirm(true).setPaymentMethod("pm_card_visa").build(),
                RequestOptions.builder().setIdempotencyKey(key).build());
        assertEquals(key, pi.getLastResponse().idempotencyKey());

        String declinedKey = key();
        try {
            client.v1().paymentIntents().create(PaymentIntentCreateParams.builder().setAmount(1000L).setCurrency("usd")
                    .setConfirm(true).setPaymentMethod("pm_card_chargeDeclined").build(),
                    RequestOptions.builder().setIdempotencyKey(declinedKey).build());
            throw new AssertionError("declined");
        } catch (CardException e) {
            assertEquals(declinedKey, e.getStripeError().getLastResponse().idempotencyKey());
            assertTrue(e.getStripeError().getCharge().startsWith("ch_"), "the declined charge");
            assertEquals("pm_card_chargeDeclined", e.getStripeError().getPaymentMethod().getId());
            assertEquals(e.getStripeError().getCharge(), e.getStripeError().getPaymentIntent().getLatestCharge());
        }
    }
}

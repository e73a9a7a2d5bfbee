package dev.chargeonce.contract;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract's checks of the refusals every charge request can meet before or instead of a charge: every kind of
 * 400 (each also refused by the file's schema where OpenAPI can say so), 401, 406, 413, 415, and the 503s of a Stripe
 * outcome unknown, a PaymentIntent Stripe has not finished and a database out of reach.
 */
abstract class ContractRefusalChecks extends ContractChargeChecks {

    // ---- 400: every kind, before anything is claimed -------------------------------------------------------------

    /** Every kind of 400 the service answers before claiming anything. */
    static Stream<Arguments> invalidRequests() {
        String visaWith = "{\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", ";
        StringBuilder tooManyMetadata = new StringBuilder("{");
        for (int i = 0; i < 51; i++) {
            tooManyMetadata.append(i == 0 ? "" : ",").append("\"k").append(i).append("\":\"v\"");
        }
        tooManyMetadata.append('}');
        return Stream.of(
                // name, Idempotency-Key, body, expected code and param, whether openapi.yaml can express the rule
                Arguments.of("no key", NO_KEY, VISA, "idempotency_key_missing", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("empty key", "", VISA, "idempotency_key_missing", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("key of 256", "k".repeat(256), VISA, "idempotency_key_invalid", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("key with a tab", "tab\there", VISA, "idempotency_key_invalid", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("key not ASCII", "cl\u00e9", VISA, "idempotency_key_invalid", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("not JSON", FRESH_KEY, "{\"amount\": 100,", "body_not_json", null, Spec.REJECTS),
                Arguments.of("not an object", FRESH_KEY, "[1, 2]", "body_not_object", null, Spec.REJECTS),
                Arguments.of("unknown field", FRESH_KEY, visaWith + "\"amout\": 1}", "parameter_unknown", "amout", Spec.REJECTS),
                Arguments.of("no amount", FRESH_KEY, "{\"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}",
                        "parameter_missing", "amount", Spec.REJECTS),
                Arguments.of("decimal amount", FRESH_KEY, VISA.replace("1000", "10.5"), "parameter_invalid_integer", "amount", Spec.REJECTS),
                Arguments.of("exponent amount", FRESH_KEY, VISA.replace("1000", "1e3"), "parameter_invalid_integer", "amount", Spec.REJECTS),
                Arguments.of("integral float amount", FRESH_KEY, VISA.replace("1000", "1000.0"), "parameter_invalid_integer", "amount", Spec.REJECTS),
                Arguments.of("string amount", FRESH_KEY, VISA.replace("1000", "\"1000\""), "parameter_invalid_integer", "amount", Spec.REJECTS),
                Arguments.of("zero amount", FRESH_KEY, VISA.replace("1000", "0"), "amount_out_of_range", "amount", Spec.REJECTS),
                Arguments.of("amount over 99999999", FRESH_KEY, VISA.replace("1000", "100000000"), "amount_out_of_range", "amount", Spec.REJECTS),
                Arguments.of("uppercase currency", FRESH_KEY, VISA.replace("usd", "USD"), "parameter_invalid", "currency", Spec.REJECTS),
                Arguments.of("no payment_method", FRESH_KEY, "{\"amount\": 100, \"currency\": \"usd\"}", "parameter_missing", "payment_method", Spec.REJECTS),
                Arguments.of("numeric payment_method", FRESH_KEY, VISA.replace("\"pm_card_visa\"", "42"), "parameter_invalid", "payment_method", Spec.REJECTS),
                Arguments.of("description of 1001", FRESH_KEY, visaWith + "\"description\": \"" + "d".repeat(1001) + "\"}",
                        "parameter_invalid", "description", Spec.REJECTS),
                Arguments.of("metadata not an object", FRESH_KEY, visaWith + "\"metadata\": [1]}", "parameter_invalid", "metadata", Spec.REJECTS),
                Arguments.of("51 metadata keys", FRESH_KEY, visaWith + "\"metadata\": " + tooManyMetadata + "}", "parameter_invalid", "metadata", Spec.REJECTS),
                Arguments.of("metadata value of 501", FRESH_KEY, visaWith + "\"metadata\": {\"k\": \"" + "v".repeat(501) + "\"}}",
                        "parameter_invalid", "metadata[k]", Spec.REJECTS),
                Arguments.of("metadata number value", FRESH_KEY, visaWith + "\"metadata\": {\"a\": 1}}", "parameter_invalid", "metadata[a]", Spec.REJECTS),
                // OpenAPI 3.0 schemas cannot constrain map keys (no propertyNames): the file states these rules in
                // prose, the service enforces them.
                Arguments.of("metadata key of 41", FRESH_KEY, visaWith + "\"metadata\": {\"" + "m".repeat(41) + "\": \"v\"}}",
                        "parameter_invalid", "metadata[" + "m".repeat(41) + "]", Spec.CANNOT_EXPRESS),
                Arguments.of("reserved metadata key", FRESH_KEY, visaWith + "\"metadata\": {\"chargeonce_charge_id\": \"x\"}}",
                        "parameter_invalid", "metadata[chargeonce_charge_id]", Spec.CANNOT_EXPRESS),
                // JSON parsers (the validator's too) keep the last of duplicate fields; the service refuses them.
                Arguments.of("duplicate field", FRESH_KEY, VISA.replace("\"amount\": 1000", "\"amount\": 1000, \"amount\": 2000"),
                        "body_not_json", null, Spec.CANNOT_EXPRESS));
    }

    enum Spec { REJECTS, CANNOT_EXPRESS }

    @ParameterizedTest(name = "{0}")
    @Order(40)
    @MethodSource("invalidRequests")
    void invalidKeyOrBodyIs400NamingTheParam(String name, String key, String body, String code, String param, Spec spec) {
        Call create = Call.createCharge(FRESH_KEY.equals(key) ? newKey() : key, body);
        if (spec == Spec.REJECTS) {
            assertSpecRejects(create);
        }
        long stripeRequests = stripe.apiRequests();
        JsonNode error = check(create, 400).json().get("error");
        assertEquals(code, error.get("code").asText());
        assertEquals(param, error.get("param").isNull() ? null : error.get("param").asText());
        assertEquals(stripeRequests, stripe.apiRequests(), "a refused request never reaches Stripe");
    }

    // ---- 401, 406, 413, 415 and the 503s -------------------------------------------------------------------------

    @Test
    @Order(50)
    void noValidApiKeyIs401OnEveryEndpoint() {
        Call anonymous = Call.createCharge(newKey(), VISA).without("Authorization");
        assertSpecRejects(anonymous);
        check(anonymous, 401);
        check(Call.createCharge(newKey(), VISA).header("Authorization", "Bearer sk_unknown"), 401);
        check(Call.createCharge(newKey(), VISA).header("Authorization", "Basic " + ACME_KEY), 401);
        check(Call.getCharge("chg_" + "a".repeat(24)).without("Authorization"), 401);
        check(Call.listCharges().without("Authorization"), 401);
    }

    @Test
    @Order(51)
    void acceptWithoutJsonIs406OnEveryEndpoint() {
        Call create = Call.createCharge(newKey(), VISA).header("Accept", "text/plain");
        assertSpecRejects(create);
        check(create, 406);
        check(Call.getCharge("chg_" + "a".repeat(24)).header("Accept", "text/plain"), 406);
        check(Call.listCharges().header("Accept", "text/html"), 406);
    }

    @Test
    @Order(52)
    void bodyOver64KiBIs413() {
        Call big = Call.createCharge(newKey(), "{\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", "
                + "\"description\": \"" + "x".repeat(70 * 1024) + "\"}");
        assertSpecRejects(big);
        assertEquals("body_too_large", check(big, 413).json().get("error").get("code").asText());
    }

    @Test
    @Order(53)
    void bodyThatIsNotJsonIs415() {
        Call text = Call.createCharge(newKey(), "amount=100").header("Content-Type", "text/plain");
        assertSpecRejects(text);
        check(text, 415);
        check(Call.createCharge(newKey(), "amount=100").header("Content-Type", "application/x-www-form-urlencoded"), 415);
    }

    @Test
    @Order(60)
    void stripeOutcomeUnknownIs503AndTheRetryChargesOnce() {
        String key = newKey();
        Call create = Call.createCharge(key, VISA);
        stripe.faults("fail_before=1");
        Answer unknown;
        try {
            unknown = check(create, 503);
        } finally {
            stripe.clearFaults();
        }
        assertEquals("stripe_outcome_unknown", unknown.json().get("error").get("code").asText());
        assertTrue(Integer.parseInt(unknown.header("Retry-After")) >= 1);

        // The retry the 503 asks for: looked up at Stripe first, then charged exactly once.
        String id = check(create, 201).json().get("id").asText();
        assertEquals(1, stripe.intentsFor(dev.chargeonce.testing.TestClients.ACME, key).size());
    }

    @Test
    @Order(62)
    void aPaymentIntentStripeHasNotFinishedIs503PaymentProcessing() {
        // Stripe answered 500 (nothing charged); the lookup then finds a PaymentIntent of the key waiting for a
        // payment method with no error: no decline, no answer yet, followed by id.
        String key = newKey();
        Call create = Call.createCharge(key, VISA);
        stripe.plan("fail_before");
        check(create, 503);
        long now = System.currentTimeMillis() / 1000;
        stripe.seed("count=1&created_from=" + now + "&created_to=" + now + "&status=requires_payment_method"
                + "&metadata[chargeonce_key]=" + dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.ACME, key));
        try {
            Answer pending = check(create, 503);
            assertEquals("payment_processing", pending.json().get("error").get("code").asText());
            assertTrue(Integer.parseInt(pending.header("Retry-After")) >= 1);
        } finally {
            stripe.forgetSeeded();
        }
    }

    @Test
    @Order(61)
    void databaseUnreachableIs503OnEveryEndpoint() throws SQLException {
        String id = check(Call.createCharge(newKey(), VISA), 201).json().get("id").asText();
        List<Connection> held = new ArrayList<>();
        try {
            // Hold every connection of the service's pool: to the service, the database is gone.
            while (true) {
                try {
                    held.add(primary.getConnection());
                } catch (SQLException exhausted) {
                    break;
                }
            }
            assertFalse(held.isEmpty());
            Answer post = check(Call.createCharge(newKey(), VISA), 503);
            assertEquals("database_unavailable", post.json().get("error").get("code").asText());
            check(Call.getCharge(id), 503);
            check(Call.listCharges(), 503);
            check(Call.createRefund(id, newKey(), "{}"), 503);
            check(Call.listRefunds(id), 503);
            check(Call.getRefund("rfd_" + "a".repeat(24)), 503);
            check(Call.getKey("any-key"), 503);
            String event = "{\"id\":\"evt_dbdown" + newKey().substring(0, 8) + "\",\"object\":\"event\",\"created\":1,"
                    + "\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_x\",\"object\":\"payment_intent\","
                    + "\"status\":\"succeeded\",\"metadata\":{}}}}";
            check(Call.webhook(event, signed(event)), 503);
        } finally {
            for (Connection c : held) {
                c.close();
            }
        }
    }
}

package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The lookup after a Stripe 5xx on a busy account: 20,000 other PaymentIntents in the window. It pages to the end
 * (never "too many pages, give up", which left a charged customer's client with 503 for a day), never reads an
 * empty page that says "more" as the end, and lists only the window in which the key was sent.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class LookupWindowTest {

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
        stripe.forgetSeeded();
    }

    @Test
    void aPaymentBehindTwentyThousandOthersIsFound() throws Exception {
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_after");
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503);
        // Other payments of the account, made in the same seconds, listed before ours (newest first).
        long now = System.currentTimeMillis() / 1000;
        stripe.seed("count=20000&created_from=" + (now - 30) + "&created_to=" + now + "&metadata[order]=other");
        long creates = stripe.createRequests();

        Response resolved = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 6);
        assertEquals(201, resolved.statusCode(), resolved.asString());
        List<JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size());
        assertEquals(intents.get(0).get("id").asText(), resolved.jsonPath().getString("payment_intent"));
        assertEquals("1", intents.get(0).get("metadata").get("chargeonce_attempt").asText(), "found, not re-charged");
        assertTrue(stripe.createRequests() - creates <= 1, "found by listing, at most one probe of the same key");
    }

    @Test
    void anEmptyPageThatSaysMoreIsNotTheEndOfTheList() throws Exception {
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_after");
        ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503);
        stripe.faults("list_empty_has_more=1");

        Response resolved = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 6);
        assertEquals(201, resolved.statusCode(), resolved.asString());
        List<JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size(), "a broken page proved nothing: " + intents);
        assertEquals(intents.get(0).get("id").asText(), resolved.jsonPath().getString("payment_intent"));
    }

    @Test
    void theWindowEndsWithTheLastSendOfTheKeyNotNow() throws Exception {
        String key = UUID.randomUUID().toString();
        // Abandoned two hours ago after a Stripe 500 that charged nothing; since then, 20,000 other payments.
        insertAbandonedRow(key, "2 hours");
        long now = System.currentTimeMillis() / 1000;
        stripe.seed("count=20000&created_from=" + (now - 3000) + "&created_to=" + now + "&metadata[order]=later");
        long requests = stripe.apiRequests();

        Response resolved = ChargeApiTest.retryWhileNotFinal(key, ChargeApiTest.VISA, 6);
        assertEquals(201, resolved.statusCode(), resolved.asString());
        List<JsonNode> intents = stripe.intentsFor(ACME, key);
        assertEquals(1, intents.size());
        assertEquals("2", intents.get(0).get("metadata").get("chargeonce_attempt").asText());
        assertTrue(stripe.apiRequests() - requests <= 4,
                "a page or two of the old window and one create, not the account's last hour: " + (stripe.apiRequests() - requests));
    }

    private void insertAbandonedRow(String key, String age) throws Exception {
        String canonical = ChargeRequestParser.parse(ChargeApiTest.VISA.getBytes(StandardCharsets.UTF_8)).canonicalJson();
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                            lease_until, stripe_key_first_sent, created_at, last_stripe_error, stripe_identity)
                VALUES (?, ?, ?, ?, ?, 1000, 'usd', 'processing', now() - ?::interval,
                        now() - ?::interval, now() - ?::interval, 'server_error', ?)""")) {
            ps.setString(1, dev.chargeonce.idempotency.RowIds.next("chg_"));
            ps.setString(2, ACME);
            ps.setString(3, null); // keys are not stored: the identity finds the row
            ps.setString(4, Fingerprint.of("POST", "/v1/charges", canonical).stored());
            ps.setString(5, canonical);
            ps.setString(6, age);
            ps.setString(7, age);
            ps.setString(8, age);
            ps.setString(9, dev.chargeonce.testing.TestKeys.identity(ACME, key));
            ps.executeUpdate();
        }
    }
}

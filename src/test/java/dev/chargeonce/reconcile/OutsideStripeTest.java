package dev.chargeonce.reconcile;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
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
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What others do at Stripe, in its Dashboard (the sandbox acting as it): a payment made there is a finding of its
 * own, once; a refund made there of a charge this service made counts against the charge (its refunded amount, what
 * a refund through the API may still take) and is a finding once, whether its events or a reconciliation run see
 * it first, or both, or more than once. Events are delivered by the test itself, in the order each case names.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class OutsideStripeTest {

    static final ObjectMapper JSON = new ObjectMapper();
    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";
    static final String DEBIT = "{\"amount\": 2500, \"currency\": \"eur\", \"payment_method\": \"pm_sandbox_processing\"}";

    @Inject
    ReconciliationJob job;

    @Inject
    ReconciliationStore store;

    @Inject
    AgroalDataSource primary;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @TestHTTPResource("/v1/webhooks/stripe")
    URI webhookUrl;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        stripe.webhooks("url=&duplicates=1&reorder=false&lose=false&delay_ms=0"); // this test delivers them
    }

    @AfterEach
    void tearDown() {
        stripe.webhooks("url=&duplicates=1&reorder=false&lose=false&delay_ms=0");
    }

    @Test
    void aPaymentMadeInStripesDashboardIsOneMadeOutsideFindingHoweverOftenRunsSeeIt() {
        String pi = stripe.dashboardPayment(4200, "usd", null).get("id").asText();

        ReconciliationStore.Run first = reconcileLastHour();
        assertEquals("completed", first.status(), "run: " + first);
        Map<String, Object> finding = findingAbout("made_outside", pi);
        assertNotNull(finding, "a payment with none of the service's metadata that no row names");
        assertNull(finding.get("rowId"), "no charge of this service is concerned");
        assertEquals(pi, finding.get("stripeObjectId"));
        assertTrue(((String) finding.get("detail")).contains("4200 usd"), (String) finding.get("detail"));
        assertTrue(FindingKind.MADE_OUTSIDE.advice().contains("refund it at Stripe"), "what the operator does");

        ReconciliationStore.Run second = reconcileLastHour();
        assertEquals("completed", second.status());
        assertEquals(0, second.newFindings(), "seen again, it is not a new finding");
        assertEquals(2, ((Number) findingAbout("made_outside", pi).get("timesSeen")).intValue());
        assertEquals(1, findings().stream().filter(f -> pi.equals(f.get("subject"))).count(), "one finding of the payment");
    }

    /**
     * Each step: {@code event} delivers the refund's {@code refund.created}, {@code charge} the charge's
     * {@code charge.refunded} (the only way the refund is learned in the {@code charge} and {@code charge,charge}
     * cases: no refund event, no run), {@code run} runs reconciliation over the last hour.
     */
    @ParameterizedTest
    @ValueSource(strings = {"event,run", "run,event", "event,run,event", "event,event,run", "run,run", "charge,event,run,charge",
            "charge", "charge,charge", "run,charge", "charge,run"})
    void aFullRefundInStripesDashboardCountsOnceWhateverSeesItFirst(String steps) throws Exception {
        String chargeId = charge(VISA);
        String pi = paymentIntentOf(chargeId);
        String refund = stripe.dashboardRefund(pi, null).get("id").asText();
        for (String step : steps.split(",")) {
            switch (step) {
                case "event" -> deliver(only(stripe.eventsAbout("refund.created", refund)));
                case "charge" -> deliver(only(stripe.eventsAbout("charge.refunded", "ch_" + pi.substring("pi_".length()))));
                case "run" -> assertEquals("completed", reconcileLastHour().status());
                default -> throw new IllegalArgumentException(step);
            }
        }

        Response charge = get("/v1/charges/" + chargeId);
        assertEquals(1000, charge.jsonPath().getInt("amount_refunded"), charge.asString());
        assertTrue(charge.jsonPath().getBoolean("refunded"), "refunded in full, as Stripe's charge says");
        assertEquals(List.of(1L, 1000L), outsideRefundRows(refund), "recorded once, its amount once");
        List<Map<String, Object>> found = findings().stream()
                .filter(f -> kind(f, "refunded_outside") && refund.equals(f.get("subject"))).toList();
        assertEquals(1, found.size(), "one finding of the refund: " + found);
        assertEquals(chargeId, found.get(0).get("rowId"));
        assertTrue(findings().stream().noneMatch(f -> chargeId.equals(f.get("rowId")) && kind(f, "refund_total_differs")),
                "its refunds add up here and at Stripe");

        Response more = refund(chargeId, "{\"amount\": 1}");
        assertEquals(400, more.statusCode(), more.asString());
        assertEquals("amount_too_large", more.jsonPath().getString("error.code"));
        assertTrue(more.jsonPath().getString("error.message").contains("nothing left"), more.asString());
    }

    @Test
    void aChargeEventWhoseRefundsStripeCannotListNowIsRefusedUnrecordedAndAppliedWhenDeliveredAgain() throws Exception {
        String chargeId = charge(VISA);
        String pi = paymentIntentOf(chargeId);
        String refund = stripe.dashboardRefund(pi, 300L).get("id").asText();
        String event = only(stripe.eventsAbout("charge.refunded", "ch_" + pi.substring("pi_".length())));
        String eventId = JSON.readTree(event).get("id").asText();
        assertFalse(JSON.readTree(event).at("/data/object").has("refunds"), "Stripe's charge does not list its refunds: " + event);

        stripe.faults("list_rate_limit=1"); // Stripe's 429 on the list of the charge's refunds
        Response refused = post(event);
        stripe.faults("list_rate_limit=0");
        assertEquals(503, refused.statusCode(), refused.asString());
        assertEquals("stripe_unavailable", refused.jsonPath().getString("error.code"));
        assertNotNull(refused.header("Retry-After"), "Stripe delivers it again");
        assertEquals(Long.valueOf(0), query("SELECT count(*) FROM stripe_events WHERE id = ?", eventId, rs -> (Long) rs.getLong(1)),
                "nothing recorded: the redelivery is processed as new");

        deliver(event);
        assertEquals(List.of("applied", chargeId), inboxOutcome(eventId));
        assertEquals(List.of(1L, 300L), outsideRefundRows(refund));
        assertEquals(300, get("/v1/charges/" + chargeId).jsonPath().getInt("amount_refunded"));
    }

    @Test
    void aChargeEventOfAnOlderApiVersionListsItsRefundsAndIsReadAsItIsWithoutAskingStripe() throws Exception {
        String chargeId = charge(VISA);
        String pi = paymentIntentOf(chargeId);
        stripe.webhooks("api_version=2020-08-27"); // before 2022-11-15, a charge lists its refunds
        String refund;
        String event;
        try {
            refund = stripe.dashboardRefund(pi, 400L).get("id").asText();
            event = only(stripe.eventsAbout("charge.refunded", "ch_" + pi.substring("pi_".length())));
        } finally {
            stripe.webhooks("api_version=" + SandboxWebhooks.DEFAULT_API_VERSION);
        }
        assertEquals(refund, JSON.readTree(event).at("/data/object/refunds/data/0/id").asText(), event);

        stripe.faults("list_rate_limit=1"); // a list at Stripe now would be refused, and the delivery with it
        try {
            deliver(event);
        } finally {
            stripe.faults("list_rate_limit=0");
        }
        assertEquals(List.of("applied", chargeId), inboxOutcome(JSON.readTree(event).get("id").asText()));
        assertEquals(List.of(1L, 400L), outsideRefundRows(refund));
    }

    @Test
    void aPartialRefundInStripesDashboardLeavesOnlyTheRestToRefundThroughTheApi() throws Exception {
        String chargeId = charge(VISA);
        String pi = paymentIntentOf(chargeId);
        String refund = stripe.dashboardRefund(pi, 600L).get("id").asText();
        String event = only(stripe.eventsAbout("refund.created", refund));
        deliver(event);
        assertEquals(List.of("applied", chargeId), inboxOutcome(JSON.readTree(event).get("id").asText()));
        assertEquals(600, get("/v1/charges/" + chargeId).jsonPath().getInt("amount_refunded"));
        assertFalse(get("/v1/charges/" + chargeId).jsonPath().getBoolean("refunded"));

        long asked = stripe.refundCreateRequests();
        Response tooMuch = refund(chargeId, "{\"amount\": 500}");
        assertEquals(400, tooMuch.statusCode(), tooMuch.asString());
        assertEquals("amount_too_large", tooMuch.jsonPath().getString("error.code"));
        assertTrue(tooMuch.jsonPath().getString("error.message").contains("(400;"), tooMuch.asString());
        assertEquals(asked, stripe.refundCreateRequests(), "refused before Stripe is asked");

        Response rest = refund(chargeId, "{\"amount\": 400}");
        assertEquals(201, rest.statusCode(), rest.asString());
        assertEquals("succeeded", rest.jsonPath().getString("status"));
        Response charge = get("/v1/charges/" + chargeId);
        assertEquals(1000, charge.jsonPath().getInt("amount_refunded"));
        assertTrue(charge.jsonPath().getBoolean("refunded"));
        assertEquals(1, findings().stream().filter(f -> refund.equals(f.get("subject"))).count());
    }

    @Test
    void aDashboardRefundThatFailsGivesItsAmountBack() throws Exception {
        stripe.webhooks("url=" + webhookUrl + "&duplicates=2&reorder=false&lose=false&delay_ms=0");
        String chargeId = charge(DEBIT);
        String pi = paymentIntentOf(chargeId);
        stripe.settle(pi, "succeeded");
        await(() -> "succeeded".equals(get("/v1/charges/" + chargeId).jsonPath().getString("status")), "the charge succeeded");

        String refund = stripe.dashboardRefund(pi, null).get("id").asText();
        await(() -> List.of(1L, 2500L).equals(outsideRefundRows(refund)), "the pending Dashboard refund is recorded");
        assertEquals(0, get("/v1/charges/" + chargeId).jsonPath().getInt("amount_refunded"), "pending: not refunded yet");
        Response nothingLeft = refund(chargeId, "{\"amount\": 1}");
        assertEquals("amount_too_large", nothingLeft.jsonPath().getString("error.code"), "a pending outside refund counts");

        stripe.settleRefund(refund, "failed");
        await(() -> "failed".equals(outsideRefundStatus(refund)), "its failure is recorded");
        Response again = refund(chargeId, "{}");
        assertEquals(201, again.statusCode(), again.asString());
        assertEquals(2500, again.jsonPath().getInt("amount"), "what the failed outside refund gave back can be refunded");
    }

    // ---- helpers ---------------------------------------------------------------------------------------------------

    static String charge(String body) {
        Response charged = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body(body).when().post("/v1/charges");
        assertTrue(charged.statusCode() == 201 || charged.statusCode() == 202, charged.asString());
        return charged.jsonPath().getString("id");
    }

    static String paymentIntentOf(String chargeId) {
        return get("/v1/charges/" + chargeId).jsonPath().getString("payment_intent");
    }

    static Response refund(String chargeId, String body) {
        return given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body(body).when().post("/v1/charges/" + chargeId + "/refunds");
    }

    static Response get(String path) {
        return given().header("Authorization", "Bearer " + ACME_KEY).when().get(path);
    }

    static String only(List<String> events) {
        assertEquals(1, events.size(), "one such event at Stripe: " + events);
        return events.get(0);
    }

    /** Delivers an event as Stripe does (signed now); the endpoint acknowledges it, a redelivery included. */
    static void deliver(String event) {
        Response answer = post(event);
        assertEquals(200, answer.statusCode(), answer.asString());
    }

    static Response post(String event) {
        return given().header("Stripe-Signature", SandboxWebhooks.signatureHeader(event, PostgresAndSandbox.WEBHOOK_SECRET,
                        System.currentTimeMillis() / 1000))
                .contentType("application/json; charset=utf-8").body(event).when().post("/v1/webhooks/stripe");
    }

    ReconciliationStore.Run reconcileLastHour() {
        ReconciliationStore.Run run = job.request(Instant.now().minus(Duration.ofHours(1)), Instant.now().plusSeconds(5), "test");
        for (int i = 0; i < 20; i++) {
            ReconciliationJob.PassResult pass = job.pass();
            if (pass.runId() != null && pass.runId() == run.id() && !"running".equals(pass.status())) {
                break;
            }
        }
        return store.findRun(run.id()).orElseThrow();
    }

    List<Map<String, Object>> findings() {
        return given().auth().preemptive().basic(ReconciliationTest.OPERATOR, ReconciliationTest.PASSWORD)
                .get("/admin/v1/findings?limit=1000&open=false").then().statusCode(200).extract().jsonPath().getList("data");
    }

    Map<String, Object> findingAbout(String kind, String subject) {
        return findings().stream().filter(f -> kind(f, kind) && subject.equals(f.get("subject"))).findFirst().orElse(null);
    }

    static boolean kind(Map<String, Object> finding, String kind) {
        return kind.equalsIgnoreCase((String) finding.get("kind"));
    }

    /** How many rows record the outside refund, and their amount. */
    List<Long> outsideRefundRows(String stripeRefundId) {
        return query("SELECT count(*), coalesce(sum(amount), 0) FROM outside_refunds WHERE stripe_refund_id = ?", stripeRefundId,
                rs -> List.of(rs.getLong(1), rs.getLong(2)));
    }

    String outsideRefundStatus(String stripeRefundId) {
        return query("SELECT max(status) FROM outside_refunds WHERE stripe_refund_id = ?", stripeRefundId, rs -> rs.getString(1));
    }

    List<String> inboxOutcome(String eventId) {
        return query("SELECT outcome, row_id FROM stripe_events WHERE id = ?", eventId,
                rs -> java.util.Arrays.asList(rs.getString(1), rs.getString(2)));
    }

    interface Row<T> {
        T read(ResultSet rs) throws Exception;
    }

    <T> T query(String sql, String parameter, Row<T> row) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, parameter);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next(), "a row for " + parameter);
                return row.read(rs);
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 30 s: " + what);
            }
            Thread.sleep(50);
        }
    }
}

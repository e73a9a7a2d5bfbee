package dev.chargeonce.reconcile;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.testing.Management;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Reconciliation against the real service, PostgreSQL and the Stripe sandbox: differences made at Stripe behind
 * the service's back are found, recorded once, shown and resolvable through the operators' API; every action is
 * fenced by the lease generation and audited; none creates anything at Stripe.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ReconciliationTest {

    static final String OPERATOR = "ops";
    static final String PASSWORD = "ops-test-password";

    @Inject
    ReconciliationJob job;

    @Inject
    ReconciliationStore store;

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

    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    static Response charge(String apiKey, String key, String body) {
        return given().header("Authorization", "Bearer " + apiKey).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(body).when().post("/v1/charges");
    }

    static RequestSpecification operator() {
        return given().auth().preemptive().basic(OPERATOR, PASSWORD);
    }

    /** Queues a run over the last hour and passes until it completes; returns the run. */
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

    List<Map<String, Object>> findings(boolean open) {
        return operator().get("/admin/v1/findings?limit=1000&open=" + open).then().statusCode(200).extract().jsonPath().getList("data");
    }

    Map<String, Object> findingAbout(String kind, String subject) {
        return findings(false).stream().filter(f -> kind.equals(((String) f.get("kind")).toLowerCase()) && subject.equals(f.get("subject")))
                .findFirst().orElse(null);
    }

    @Test
    void aRunAnOperatorRequestsWhileAnotherInstanceRunsStartsAsSoonAsThatRunEnds() throws Exception {
        // Another instance holds the job's lease (its run is under way) when the operator asks for a run: the run
        // starts once that lease is let go, not at the next scheduled pass (ten minutes on).
        ReconciliationStore.JobLease other = store.acquire("another-instance", Duration.ofSeconds(30)).orElseThrow();
        try {
            Instant now = Instant.now();
            long id = ((Number) operator().contentType(ContentType.JSON)
                    .body(Map.of("from", now.minus(Duration.ofMinutes(5)).toString(), "to", now.toString()))
                    .post("/admin/v1/reconciliation/runs").then().statusCode(202).extract().path("id")).longValue();
            Thread.sleep(2_000);
            assertEquals("queued", store.findRun(id).orElseThrow().status(), "it waits while the other instance runs");
            store.release(other);
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            String status = "queued";
            while (System.nanoTime() < deadline && !"completed".equals(status)) {
                Thread.sleep(200);
                status = store.findRun(id).orElseThrow().status();
            }
            assertEquals("completed", status, "the requested run ran once the other instance's run ended");
        } finally {
            store.release(other);
        }
    }

    @Test
    void aPaymentBehindTheServicesBackAndOneStripeLostAreFoundOnceAndCanBeAcknowledged() {
        // One charge whose PaymentIntent Stripe then loses, and one PaymentIntent of a key this service never saw.
        String lostCharge = charge(ACME_KEY, UUID.randomUUID().toString(), VISA).then().statusCode(201)
                .extract().path("id");
        String lostPaymentIntent = operator().get("/admin/v1/rows/charge/" + lostCharge).then().statusCode(200)
                .extract().path("row.objectId");
        stripe.forget(lostPaymentIntent);
        String ghostKey = "ghost-" + UUID.randomUUID();
        long now = Instant.now().getEpochSecond();
        stripe.seed("count=1&created_from=" + now + "&created_to=" + now + "&status=succeeded&metadata[chargeonce_key]="
                + dev.chargeonce.testing.TestKeys.identity(ACME, ghostKey) + "&metadata[chargeonce_client_id]=" + ACME);
        String ghost = stripe.ledger().stream().filter(pi -> dev.chargeonce.testing.TestKeys.identity(ACME, ghostKey)
                .equals(pi.path("metadata").path("chargeonce_key").asText())).findFirst().orElseThrow().get("id").asText();
        try {
            ReconciliationStore.Run first = reconcileLastHour();
            assertEquals("completed", first.status(), "run: " + first);
            assertTrue(first.newFindings() >= 2, "at least the two made here: " + first);
            Map<String, Object> unknown = findingAbout("unknown_payment_intent", ghost);
            Map<String, Object> missing = findingAbout("missing_at_stripe", lostCharge);
            assertNotNull(unknown, "Stripe's payment for a key this service has no row of");
            assertNotNull(missing, "the row's PaymentIntent Stripe does not have");

            ReconciliationStore.Run second = reconcileLastHour();
            assertEquals("completed", second.status());
            assertEquals(0, second.newFindings(), "the same differences are not new findings the second time");
            assertEquals(2, ((Number) findingAbout("unknown_payment_intent", ghost).get("timesSeen")).intValue());

            // Resolvable: the operator acknowledges with a note; it is recorded.
            long id = ((Number) unknown.get("id")).longValue();
            operator().contentType(ContentType.JSON).body(Map.of("note", "refunded by hand, ticket OPS-1"))
                    .post("/admin/v1/findings/" + id + "/acknowledge").then().statusCode(200);
            Map<String, Object> resolved = findingAbout("unknown_payment_intent", ghost);
            assertEquals(OPERATOR, resolved.get("resolvedBy"));
            assertTrue(((String) resolved.get("resolution")).contains("OPS-1"));
            operator().contentType(ContentType.JSON).body(Map.of("note", "again"))
                    .post("/admin/v1/findings/" + id + "/acknowledge").then().statusCode(409);
            assertEquals(2, countAcknowledgements(id), "done and refused, both recorded");
            ReconciliationStore.Run third = reconcileLastHour();
            assertEquals(0, third.newFindings(), "an acknowledged finding seen again is not new either");
        } finally {
            stripe.forgetSeeded();
        }
    }

    @Test
    void twoPaymentsForOneKeyAreADuplicateFinding() throws Exception {
        String key = UUID.randomUUID().toString();
        String charge = charge(ACME_KEY, key, VISA).then().statusCode(201).extract().path("id");
        long now = Instant.now().getEpochSecond();
        stripe.seed("count=1&created_from=" + now + "&created_to=" + now + "&status=succeeded&metadata[chargeonce_key]="
                + dev.chargeonce.testing.TestKeys.identity(ACME, key) + "&metadata[chargeonce_client_id]=" + ACME);
        try {
            reconcileLastHour();
            Map<String, Object> duplicate = findingAbout("duplicate_payment_intents", dev.chargeonce.testing.TestKeys.identity(ACME, key));
            assertNotNull(duplicate, "two payments for one key");
            assertEquals(charge, duplicate.get("rowId"));
            String metrics = Management.given().get("/q/metrics").then().extract().asString();
            assertTrue(metrics.lines().anyMatch(l -> l.startsWith("chargeonce_reconciliation_open_findings{kind=\"duplicate_payment_intents\"")
                    && !l.endsWith(" 0.0")), "the duplicates gauge counts it");
        } finally {
            stripe.forgetSeeded();
        }
    }

    @Test
    void refundsStripeMadeBehindTheServicesBackAreFoundAndTheChargesTotalDiffers() {
        String chargeId = charge(ACME_KEY, UUID.randomUUID().toString(), VISA).then().statusCode(201).extract().path("id");
        String paymentIntent = operator().get("/admin/v1/rows/charge/" + chargeId).then().extract().path("row.objectId");
        given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body("{\"amount\": 300}").post("/v1/charges/" + chargeId + "/refunds")
                .then().statusCode(201);
        // A refund of a key this service never saw (with its metadata), and one made in the Dashboard (without): the
        // latter counts against the charge here, the former is the difference.
        String ghostKey = "ghost-refund-" + UUID.randomUUID();
        String ghost = stripe.refundOutsideTheService(paymentIntent, "&amount=100&metadata[chargeonce_key]="
                + dev.chargeonce.testing.TestKeys.refundIdentity(ACME, ghostKey)).get("id").asText();
        String dashboard = stripe.refundOutsideTheService(paymentIntent, "&amount=200").get("id").asText();

        ReconciliationStore.Run run = reconcileLastHour();
        assertEquals("completed", run.status(), "run: " + run);
        assertNotNull(findingAbout("unknown_refund", ghost), "a refund of a key no row has");
        assertNotNull(findingAbout("refunded_outside", dashboard), "the Dashboard's refund, which counts against the charge");
        Map<String, Object> total = findingAbout("refund_total_differs", chargeId);
        assertNotNull(total, "the charge's refunds add up to 500 here (300, and the Dashboard's 200) and 600 at Stripe");
        assertTrue(((String) total.get("detail")).contains("500 here (200 of it made outside the service) and 600 at Stripe"),
                (String) total.get("detail"));
    }

    @Test
    void aParkedRowIsResolvedByAttachingWhatStripeHasAndTheClientsRetryReplaysTheCharge() throws Exception {
        String key = UUID.randomUUID().toString();
        String chargeId = dev.chargeonce.testing.TestRows.parkedCharge(primary, ACME, ACME_KEY, key, VISA);
        // Stripe has the payment (outside the window the driver's lookup could trust): reconciliation finds it.
        long now = Instant.now().getEpochSecond();
        stripe.seed("count=1&created_from=" + now + "&created_to=" + now + "&status=succeeded&metadata[chargeonce_key]="
                + dev.chargeonce.testing.TestKeys.identity(ACME, key) + "&metadata[chargeonce_client_id]=" + ACME);
        try {
            charge(ACME_KEY, key, VISA).then().statusCode(503);
            reconcileLastHour();
            Map<String, Object> unrecorded = findings(true).stream()
                    .filter(f -> "unrecorded_payment_intent".equalsIgnoreCase((String) f.get("kind")) && chargeId.equals(f.get("rowId")))
                    .findFirst().orElseThrow(() -> new AssertionError("the parked row's payment is found"));
            assertNotNull(findingAbout("parked_row", chargeId), "and the parked row itself");
            String paymentIntent = (String) unrecorded.get("stripeObjectId");
            int generation = operator().get("/admin/v1/rows/charge/" + chargeId).then().statusCode(200).extract().path("row.leaseGeneration");
            long creates = stripe.createRequests();

            // A stale generation is refused and changes nothing.
            operator().contentType(ContentType.JSON).body(Map.of("lease_gen", generation - 1, "reason", "stale", "object", paymentIntent))
                    .post("/admin/v1/rows/charge/" + chargeId + "/attach").then().statusCode(409);
            // Another key's PaymentIntent is refused.
            String other = charge(ACME_KEY, UUID.randomUUID().toString(), VISA).then().statusCode(201)
                    .extract().path("payment_intent");
            operator().contentType(ContentType.JSON).body(Map.of("lease_gen", generation, "reason", "wrong one", "object", other))
                    .post("/admin/v1/rows/charge/" + chargeId + "/attach").then().statusCode(409);
            creates = stripe.createRequests();
            operator().contentType(ContentType.JSON).body(Map.of("lease_gen", generation, "reason", "found by reconciliation", "object", paymentIntent))
                    .post("/admin/v1/rows/charge/" + chargeId + "/attach").then().statusCode(200);
            assertEquals(creates, stripe.createRequests(), "attaching creates nothing at Stripe");

            Response replay = charge(ACME_KEY, key, VISA);
            assertEquals(201, replay.statusCode(), replay.asString());
            assertEquals("true", replay.header("Idempotent-Replayed"));
            assertEquals(paymentIntent, replay.jsonPath().getString("payment_intent"));
            assertEquals(chargeId, replay.jsonPath().getString("id"));
            assertEquals(3, countAudit("attach", chargeId), "two refusals and the attach, all recorded");
            assertEquals(1, countAuditOutcome("attach", chargeId, "done"));
            assertTrue(findings(true).stream().noneMatch(f -> chargeId.equals(f.get("rowId"))), "its findings are resolved");
        } finally {
            stripe.forgetSeeded();
        }
    }

    @Test
    void aParkedRowStripeHasNothingForIsMarkedFailedAndTheRetryReplaysThatAnswer() throws Exception {
        String key = UUID.randomUUID().toString();
        String chargeId = dev.chargeonce.testing.TestRows.parkedCharge(primary, ACME, ACME_KEY, key, VISA);
        int generation = operator().get("/admin/v1/rows/charge/" + chargeId).then().statusCode(200).extract().path("row.leaseGeneration");
        long creates = stripe.createRequests();
        operator().contentType(ContentType.JSON).body(Map.of("lease_gen", generation, "reason", "Stripe has nothing"))
                .post("/admin/v1/rows/charge/" + chargeId + "/mark-failed").then().statusCode(200);
        assertEquals(creates, stripe.createRequests());
        Response answer = charge(ACME_KEY, key, VISA);
        assertEquals(400, answer.statusCode(), answer.asString());
        assertEquals("charge_abandoned", answer.jsonPath().getString("error.code"));
        assertEquals("true", answer.header("Idempotent-Replayed"));
        assertEquals(creates, stripe.createRequests(), "and nothing is ever sent for it again");
    }

    /**
     * Found by the protocol model (spec/, check NothingMadeIsTrue): an operator marks a row failed while its holder's
     * try is still on its way to Stripe. The list finds nothing yet, the row would answer "nothing was made, use a
     * new key", and then the try charges: the customer pays twice. A row whose holder may still send (its lease's
     * send bound, stripe_sending_until) is refused, whatever the list says.
     */
    @Test
    void markFailedIsRefusedWhileATryOfTheKeyMayStillReachStripe() throws Exception {
        String key = UUID.randomUUID().toString();
        stripe.plan("slow:4000"); // the holder's try is at Stripe, not yet executed
        java.util.concurrent.CompletableFuture<Response> holder = java.util.concurrent.CompletableFuture.supplyAsync(() -> charge(ACME_KEY, key, VISA));
        String chargeId = null;
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
        while (chargeId == null) {
            assertTrue(System.nanoTime() < until, "the charge was never claimed");
            try (java.sql.Connection c = primary.getConnection();
                 java.sql.PreparedStatement ps = c.prepareStatement("SELECT id FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
                ps.setString(1, ACME);
                ps.setString(2, dev.chargeonce.testing.TestKeys.identity(ACME, key));
                try (java.sql.ResultSet rs = ps.executeQuery()) {
                    chargeId = rs.next() ? rs.getString(1) : null;
                }
            }
            Thread.sleep(chargeId == null ? 20 : 0);
        }
        int generation = operator().get("/admin/v1/rows/charge/" + chargeId).then().statusCode(200).extract().path("row.leaseGeneration");
        Response refused = operator().contentType(ContentType.JSON).body(Map.of("lease_gen", generation, "reason", "looks stuck"))
                .post("/admin/v1/rows/charge/" + chargeId + "/mark-failed");
        Response answer = holder.get(60, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(409, refused.statusCode(), "marking failed while a try may still reach Stripe: " + refused.asString());
        assertEquals(201, answer.statusCode(), "the holder's try charged, and its answer says so: " + answer.asString());
        assertEquals(1, stripe.intentsFor(ACME, key).size());
        Response retry = charge(ACME_KEY, key, VISA);
        assertEquals(201, retry.statusCode(), "a retry is told the payment was made, never to use a new key: " + retry.asString());
    }

    /**
     * A row lost in a failover, retried much later: its payment is older than the new row by more than the key
     * horizon (the drivers search an unknown history back lost-history-lookback, 48 h). The proof of absence looks
     * back as far: with a window of the key horizon only, it missed the payment and answered "use a new key".
     */
    @Test
    void markFailedFindsAPaymentOfTheKeyFromBeforeTheRowWasClaimed() throws Exception {
        String key = UUID.randomUUID().toString();
        String chargeId = dev.chargeonce.testing.TestRows.parkedCharge(primary, ACME, ACME_KEY, key, VISA); // claimed 25 h ago
        long paid = Instant.now().getEpochSecond() - (25 + 30) * 3600; // 30 h before the claim
        stripe.seed("count=1&created_from=" + paid + "&created_to=" + paid + "&status=succeeded&metadata[chargeonce_key]="
                + dev.chargeonce.testing.TestKeys.identity(ACME, key));
        try {
            int generation = operator().get("/admin/v1/rows/charge/" + chargeId).then().extract().path("row.leaseGeneration");
            Response refused = operator().contentType(ContentType.JSON).body(Map.of("lease_gen", generation, "reason", "nothing since the claim"))
                    .post("/admin/v1/rows/charge/" + chargeId + "/mark-failed");
            assertEquals(409, refused.statusCode(), refused.asString());
            assertTrue(refused.jsonPath().getString("message").contains("attach it instead"), refused.asString());
            assertEquals("processing", status(chargeId));
        } finally {
            stripe.forgetSeeded();
        }
    }

    @Test
    void markFailedIsRefusedWhileStripeHasAPaymentForTheKey() throws Exception {
        String key = UUID.randomUUID().toString();
        String chargeId = dev.chargeonce.testing.TestRows.parkedCharge(primary, ACME, ACME_KEY, key, VISA);
        long now = Instant.now().getEpochSecond();
        stripe.seed("count=1&created_from=" + now + "&created_to=" + now + "&status=succeeded&metadata[chargeonce_key]="
                + dev.chargeonce.testing.TestKeys.identity(ACME, key));
        try {
            int generation = operator().get("/admin/v1/rows/charge/" + chargeId).then().extract().path("row.leaseGeneration");
            Response refused = operator().contentType(ContentType.JSON).body(Map.of("lease_gen", generation, "reason", "I think nothing"))
                    .post("/admin/v1/rows/charge/" + chargeId + "/mark-failed");
            assertEquals(409, refused.statusCode(), refused.asString());
            assertTrue(refused.jsonPath().getString("message").contains("attach it instead"));
            assertEquals("processing", status(chargeId));
        } finally {
            stripe.forgetSeeded();
        }
    }

    @Test
    void operatorSurfacesTakeOperatorCredentialsOnly() {
        given().get("/admin/v1/findings").then().statusCode(401).header("WWW-Authenticate", org.hamcrest.Matchers.startsWith("Basic"));
        given().header("Authorization", "Bearer " + ACME_KEY).get("/admin/v1/findings").then().statusCode(401);
        given().auth().preemptive().basic(OPERATOR, "wrong").get("/console").then().statusCode(401);
        given().auth().preemptive().basic(OPERATOR, PASSWORD).header("Idempotency-Key", "k").contentType(ContentType.JSON)
                .body(VISA).post("/v1/charges").then().statusCode(401);
        operator().get("/console").then().statusCode(200).contentType(org.hamcrest.Matchers.startsWith("text/html"));
        // A form not served by the console (no token) does nothing.
        operator().formParam("lease_gen", 1).formParam("reason", "x").post("/console/rows/charge/chg_x/requeue").then().statusCode(403);
    }

    private String status(String chargeId) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT status FROM stripe_intents WHERE id = ?")) {
            ps.setString(1, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return rs.getString(1);
            }
        }
    }

    private long countAcknowledgements(long findingId) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM operator_actions WHERE action = 'acknowledge' AND operator = ? AND finding_id = ?")) {
            ps.setString(1, OPERATOR);
            ps.setLong(2, findingId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private long countAudit(String action, String rowId) {
        return countAuditOutcome(action, rowId, null);
    }

    private long countAuditOutcome(String action, String rowId, String outcome) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM operator_actions WHERE action = ? AND operator = ? AND (? IS NULL OR row_id = ?)"
                        + " AND (? IS NULL OR outcome = ?) AND at > now() - interval '1 minute'")) {
            ps.setString(1, action);
            ps.setString(2, OPERATOR);
            ps.setString(3, rowId);
            ps.setString(4, rowId);
            ps.setString(5, outcome);
            ps.setString(6, outcome);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}

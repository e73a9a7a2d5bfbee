package dev.chargeonce.webhook;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import jakarta.inject.Inject;
import java.net.URI;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Events API catch-up: every event Stripe made and the endpoint never got is recorded, whatever the rate and
 * whatever arrives meanwhile by webhook.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class EventCatchUpTest {

    static final String DEBIT = "{\"amount\": 2500, \"currency\": \"eur\", \"payment_method\": \"pm_sandbox_processing\"}";

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @TestHTTPResource("/v1/webhooks/stripe")
    URI webhookUrl;

    @Inject
    AgroalDataSource primary;

    @Inject
    EventCatchUp catchUp;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        stripe.webhooks("url=" + webhookUrl + "&duplicates=1&reorder=false&lose=false&delay_ms=0");
    }

    @AfterEach
    void tearDown() {
        stripe.clearFaults();
        stripe.webhooks("url=&duplicates=1&reorder=false&lose=false&delay_ms=0");
    }

    @Test
    void aNewerEventDeliveredByWebhookDoesNotMakeTheCatchUpSkipOlderMissedOnes() throws Exception {
        long now = System.currentTimeMillis() / 1000;
        placeAt(now - 40 * 60, null); // the catch-up's last pass: before the outage
        // An outage half an hour ago: Stripe made these events and never delivered them.
        List<String> lost = stripe.lostEvents(40, "payment_intent.succeeded", now - 30 * 60, now - 20 * 60);
        // Then webhooks work again: a charge's events arrive, newer than every lost one.
        String chargeId = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body(DEBIT).post("/v1/charges").then().statusCode(202).extract().path("id");
        awaitAnEventOf(chargeId);

        catchUp.catchUpOnce();

        assertEquals(List.of(), unrecorded(lost), "every event the outage lost is recorded");
    }

    @Test
    void aWindowLargerThanOnePassIsReadOverSuccessivePassesEachGoingOnFromWhereTheLastStopped() throws Exception {
        long now = System.currentTimeMillis() / 1000;
        placeAt(now - 40 * 60, null);
        List<String> lost = stripe.lostEvents(500, "payment_intent.succeeded", now - 30 * 60, now - 20 * 60);
        lost.addAll(stripe.lostEvents(100, "refund.updated", now - 25 * 60, now - 15 * 60));
        double caughtUpBefore = caughtUp("payment_intent.succeeded") + caughtUp("refund.updated");
        double budgetStopsBefore = unfinished("page_budget");
        // A pass reads 5 pages of 10 events: the window holds more than ten passes' worth.
        EventCatchUp.Limits small = new EventCatchUp.Limits(10, 5, Duration.ofSeconds(1), Duration.ofMinutes(1), Duration.ofHours(1));

        EventCatchUp.PassResult first = catchUp.run("instance-a", small);
        assertEquals(EventCatchUp.Outcome.UNFINISHED, first.outcome());
        assertEquals(EventCatchUp.Stop.PAGE_BUDGET, first.stop());
        assertTrue(unrecorded(lost).size() >= lost.size() - 50, "one pass reached only part of the window");
        int passes = 1;
        long place = placeSecond();
        EventCatchUp.PassResult pass = first;
        while (pass.outcome() != EventCatchUp.Outcome.FINISHED) {
            assertTrue(passes < 400, "the passes end: " + pass);
            pass = catchUp.run("instance-a", small);
            passes++;
            long moved = placeSecond();
            assertTrue(moved >= place, "the place never goes back");
            place = moved;
        }
        assertEquals(List.of(), unrecorded(lost), "every event of the window is recorded, over " + passes + " passes");
        assertTrue(passes >= 12, "more than one pass's reach: " + passes);
        assertTrue(caughtUp("payment_intent.succeeded") + caughtUp("refund.updated") - caughtUpBefore >= lost.size(),
                "the events caught up are counted by type");
        assertTrue(unfinished("page_budget") - budgetStopsBefore >= passes - 1, "the passes that did not finish are counted");
        double lag = cursor.lagSeconds(EventCursor.STRIPE_EVENTS).orElseThrow();
        assertTrue(lag < 120, "the place is near now once the window is read: " + lag);
    }

    @Test
    void aPlaceWhoseEventStripeNoLongerHasIsFoundAgainByItsSecond() throws Exception {
        long now = System.currentTimeMillis() / 1000;
        placeAt(now - 40 * 60, "evt_gone" + UUID.randomUUID().toString().substring(0, 8)); // older than Stripe's 30 days, say
        List<String> lost = stripe.lostEvents(150, "payment_intent.payment_failed", now - 30 * 60, now - 20 * 60);
        EventCatchUp.Limits limits = new EventCatchUp.Limits(20, 50, Duration.ofSeconds(1), Duration.ofMinutes(1), Duration.ofHours(1));

        // The sandbox holds the events of every test run before this one too: more than one pass may be needed.
        EventCatchUp.PassResult pass = catchUp.run("instance-a", limits);
        for (int passes = 1; pass.outcome() != EventCatchUp.Outcome.FINISHED; passes++) {
            assertEquals(EventCatchUp.Stop.PAGE_BUDGET, pass.stop(), "a pass stops only at its page budget: " + pass);
            assertTrue(passes < 200, "the passes end: " + pass);
            pass = catchUp.run("instance-a", limits);
        }
        assertEquals(List.of(), unrecorded(lost));
    }

    @Test
    void oneInstanceAtATimeReadsWhileItsLeaseRunsAndAKilledHoldersLeaseIsTakenOnceExpired() throws Exception {
        long now = System.currentTimeMillis() / 1000;
        placeAt(now - 40 * 60, null);
        List<String> lost = stripe.lostEvents(60, "payment_intent.canceled", now - 30 * 60, now - 20 * 60);
        EventCatchUp.Limits limits = new EventCatchUp.Limits(10, 100, Duration.ofSeconds(1), Duration.ofMinutes(1), Duration.ofHours(1));
        stripe.faults("events_list_latency_ms=700"); // every page of Stripe's list takes a while

        var a = java.util.concurrent.CompletableFuture.supplyAsync(() -> catchUp.run("instance-a", limits));
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!"instance-a".equals(leaseHolder())) {
            assertTrue(System.nanoTime() < deadline, "instance a takes the lease");
            Thread.sleep(20);
        }
        EventCatchUp.PassResult b = catchUp.run("instance-b", limits);
        assertEquals(new EventCatchUp.PassResult(EventCatchUp.Outcome.BUSY, 0, 0, null), b, "b's pass does nothing while a's runs");
        EventCatchUp.PassResult aDone = a.get(60, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(EventCatchUp.Outcome.FINISHED, aDone.outcome());
        assertTrue(aDone.fed() >= lost.size(), "a did the work: " + aDone);
        assertEquals(List.of(), unrecorded(lost));
        stripe.faults("events_list_latency_ms=0");

        // An instance killed in the middle of its pass: its lease holds the others off until it expires.
        setLease("instance-a", "1 hour");
        assertEquals(EventCatchUp.Outcome.BUSY, catchUp.run("instance-b", limits).outcome());
        setLease("instance-a", "-1 second");
        long then = System.currentTimeMillis() / 1000;
        List<String> later = stripe.lostEvents(5, "payment_intent.canceled", then, then);
        assertEquals(EventCatchUp.Outcome.FINISHED, catchUp.run("instance-b", limits).outcome(), "the expired lease is taken");
        assertEquals(List.of(), unrecorded(later));
        assertEquals(null, leaseHolder(), "given back at the end of the pass");
    }

    /**
     * What a pass costs per event (run with {@code -Dchargeonce.measure-catch-up=true}; prints, asserts nothing on
     * time): a backlog of events made at Stripe in the last few minutes, a first pass that records them all, then a
     * pass over the same window where every one is already recorded (the usual case: webhooks delivered them).
     * Database statements are counted as the database's committed transactions (every statement of the catch-up
     * outside an event's own transaction is one).
     */
    @Test
    @org.junit.jupiter.api.condition.EnabledIfSystemProperty(named = "chargeonce.measure-catch-up", matches = "true")
    void costPerEvent() throws Exception {
        int count = Integer.getInteger("chargeonce.measure-catch-up.events", 5_000);
        long now = System.currentTimeMillis() / 1000;
        List<String> backlog = stripe.lostEvents(count, "payment_intent.succeeded", now - 240, now - 60);
        measure("all " + count + " missing", count);
        assertEquals(List.of(), unrecorded(backlog));
        windowBackTo(now - 300);
        measure("all " + count + " already recorded", count);
    }

    private void measure(String what, int events) throws Exception {
        long xactsBefore = committedTransactions();
        long started = System.nanoTime();
        catchUp.catchUpOnce();
        double millis = (System.nanoTime() - started) / 1e6;
        long xacts = committedTransactions() - xactsBefore;
        System.out.printf("catch-up cost, %s: %.0f ms (%.1f ms per 1,000 events), %d transactions (%.3f per event)%n",
                what, millis, millis * 1000 / events, xacts, (double) xacts / events);
    }

    /** The next pass lists from this second on again (as on a first run, or a cursor moved back). */
    private void windowBackTo(long second) throws Exception {
        try (Connection c = primary.getConnection()) {
            if (c.getMetaData().getTables(null, null, "event_cursors", null).next()) {
                try (PreparedStatement ps = c.prepareStatement(
                        "UPDATE event_cursors SET position_created = to_timestamp(?), position_id = NULL")) {
                    ps.setLong(1, second);
                    ps.executeUpdate();
                }
            }
        }
    }

    /** Committed transactions in this database, as the statistics show them once every backend has reported. */
    private long committedTransactions() throws Exception {
        Thread.sleep(11_000); // an idle backend reports its counts within 10 s
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    // ---- helpers -------------------------------------------------------------------------------------------------

    @Inject
    EventCursor cursor;

    @Inject
    io.micrometer.core.instrument.MeterRegistry metrics;

    private double caughtUp(String type) {
        return metrics.counter("chargeonce.webhooks.caught.up", "type", type).count();
    }

    private double unfinished(String reason) {
        return metrics.counter("chargeonce.webhooks.catchup.unfinished", "reason", reason).count();
    }

    /** Puts the catch-up's place (as a pass before this test would have left it), lease free. */
    private void placeAt(long second, String eventId) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO event_cursors (stream, position_created, position_id) VALUES ('stripe_events', to_timestamp(?), ?)
                ON CONFLICT (stream) DO UPDATE SET position_created = excluded.position_created,
                       position_id = excluded.position_id, lease_holder = NULL, lease_until = NULL""")) {
            ps.setLong(1, second);
            ps.setString(2, eventId);
            ps.executeUpdate();
        }
    }

    private long placeSecond() throws Exception {
        return single("SELECT extract(epoch FROM position_created)::bigint FROM event_cursors WHERE stream = 'stripe_events'",
                rs -> rs.getLong(1));
    }

    private String leaseHolder() throws Exception {
        return single("SELECT lease_holder FROM event_cursors WHERE stream = 'stripe_events'", rs -> rs.getString(1));
    }

    private void setLease(String holder, String untilFromNow) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE event_cursors SET lease_holder = ?, lease_until = now() + ?::interval WHERE stream = 'stripe_events'")) {
            ps.setString(1, holder);
            ps.setString(2, untilFromNow);
            assertEquals(1, ps.executeUpdate());
        }
    }

    private interface Column<T> {
        T read(ResultSet rs) throws java.sql.SQLException;
    }

    private <T> T single(String sql, Column<T> column) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            assertTrue(rs.next(), sql);
            return column.read(rs);
        }
    }

    private List<String> unrecorded(List<String> ids) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT id FROM stripe_events WHERE id = ANY(?)")) {
            Array array = c.createArrayOf("text", ids.toArray());
            ps.setArray(1, array);
            List<String> missing = new ArrayList<>(ids);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    missing.remove(rs.getString(1));
                }
            }
            return missing;
        }
    }

    private void awaitAnEventOf(String chargeId) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                    "SELECT 1 FROM stripe_events WHERE row_id = ? AND source = 'webhook'")) {
                ps.setString(1, chargeId);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        return;
                    }
                }
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no webhook recorded for " + chargeId);
    }
}

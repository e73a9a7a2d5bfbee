package dev.chargeonce.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.idempotency.ResultOutbox;
import dev.chargeonce.testing.LogCapture;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A charge command through the handler alone (no broker): the same claim as HTTP, what may be acknowledged, and the
 * result queued in the finish's own statement, once per charge, whoever finishes it.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class CommandHandlerTest {

    static final String VISA = "{\"amount\":1200,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}";
    static final String PROCESSING = VISA.replace("pm_card_visa", "pm_sandbox_processing");
    static final String DECLINED = "{\"amount\":1200,\"currency\":\"usd\",\"payment_method\":\"pm_card_chargeDeclined\"}";

    @Inject
    CommandHandler handler;

    @Inject
    ResultOutbox outbox;

    @Inject
    AgroalDataSource primary;

    @Inject
    KafkaConfig config;

    @Inject
    dev.chargeonce.recovery.PaymentSyncWorker sync;

    @Inject
    KafkaMetrics metrics;

    @Inject
    ResultRelay relay;

    @Inject
    dev.chargeonce.idempotency.KeyIdentities identities;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
    }

    private static CommandHandler.Command command(String eventId, String body, long offset) {
        return new CommandHandler.Command("charge-commands", 0, offset,
                eventId == null ? null : eventId.getBytes(StandardCharsets.UTF_8), body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aCommandChargesOnceAndItsRedeliveryAndItsDuplicateChargeNothingMore() throws Exception {
        String event = "order-" + UUID.randomUUID();
        long offset = Math.abs(UUID.randomUUID().getMostSignificantBits() % 1_000_000_000L);
        long creates = stripe.createRequests();

        assertEquals(new CommandHandler.Decision.Ack("charged"), handler.handle(command(event, VISA, offset)));
        assertEquals(creates + 1, stripe.createRequests(), "one create at Stripe");
        List<Queued> queued = queued(event);
        assertEquals(1, queued.size(), "the finish queued the result");
        Row row = row(event);
        assertEquals("completed", row.status());
        assertEquals("kafka:charge-commands-0@" + offset, row.origin());
        assertEquals(row.id(), queued.get(0).chargeId());
        assertEquals(201, queued.get(0).status());
        assertEquals(row.body(), queued.get(0).body(), "the result is the HTTP answer, byte for byte");

        // The same record again (a crash before its offset was committed) and the same event at another offset (the
        // producer sent it twice): answered by the row, not charged, not queued again.
        assertEquals(new CommandHandler.Decision.Ack("redelivered"), handler.handle(command(event, VISA, offset)));
        assertEquals(new CommandHandler.Decision.Ack("duplicate"), handler.handle(command(event, VISA, offset + 7)));
        assertEquals(creates + 1, stripe.createRequests(), "Stripe was not asked again");
        assertEquals(1, queued(event).size(), "one result for the charge");
        assertEquals(1, stripe.intentsFor(config.clientId(), event).size(), "one PaymentIntent");
    }

    @Test
    void aDeclineIsAResultToo() throws Exception {
        String event = "order-" + UUID.randomUUID();
        assertEquals(new CommandHandler.Decision.Ack("charged"), handler.handle(command(event, DECLINED, 1)));
        List<Queued> queued = queued(event);
        assertEquals(1, queued.size());
        assertEquals(402, queued.get(0).status());
        assertTrue(queued.get(0).body().contains("card_declined"), queued.get(0).body());
    }

    /**
     * A charge answered {@code 202} (the payment is still processing) publishes that answer, and publishes its outcome
     * once Stripe has one, whoever learns it (here the sync worker), in the transaction that stores it: the producer
     * of the command learns the outcome from the results topic, not by polling. Each result is queued once.
     */
    @Test
    void aChargeAnswered202PublishesItsOutcomeWhenItIsKnown() throws Exception {
        String event = "order-" + UUID.randomUUID();
        assertEquals(new CommandHandler.Decision.Ack("charged"), handler.handle(command(event, PROCESSING, 20)));
        List<Queued> queued = queued(event);
        assertEquals(1, queued.size(), "the 202 is a result");
        assertEquals(202, queued.get(0).status());
        Row row = row(event);
        assertEquals("accepted", row.status());
        String paymentIntent = stripe.intentsFor(config.clientId(), event).get(0).get("id").asText();

        stripe.settle(paymentIntent, "succeeded");
        makeDue(row.id());
        sync.syncOnce();
        queued = queued(event);
        assertEquals(2, queued.size(), "the outcome is queued by the transaction that stores it: " + queued);
        Queued outcome = queued.get(1);
        assertEquals(row.id(), outcome.chargeId());
        assertEquals(200, outcome.status(), "the charge as GET /v1/charges/{id} shows it");
        assertTrue(outcome.body().startsWith("{\"id\":\"" + row.id() + "\",\"object\":\"charge\",\"status\":\"succeeded\""), outcome.body());
        assertTrue(outcome.body().contains("\"payment_intent\":\"" + paymentIntent + "\""), outcome.body());
        assertEquals(row.body(), row(event).body(), "the key's answer stays the 202: a retry replays it");

        makeDue(row.id());
        sync.syncOnce();
        assertEquals(2, queued(event).size(), "each result once");
        assertEquals(1, stripe.intentsFor(config.clientId(), event).size(), "one PaymentIntent");
    }

    /**
     * A charge's results reach the topic in the order they were queued (the 202, then its outcome), whatever the
     * relays do: one that took the 202 and had it refused (or died before marking it sent) holds the outcome back
     * until the 202 is published. So the latest record under the event id is the command's latest word, also on a
     * compacted topic. Each says what it is in its kind header.
     */
    @Test
    void aChargesResultsArePublishedInTheOrderTheyWereQueued() throws Exception {
        String event = "order-" + UUID.randomUUID();
        handler.handle(command(event, PROCESSING, 30));
        Row row = row(event);
        stripe.settle(stripe.intentsFor(config.clientId(), event).get(0).get("id").asText(), "succeeded");
        makeDue(row.id());
        sync.syncOnce();
        assertEquals(List.of(202, 200), queued(event).stream().map(Queued::status).toList());

        List<ResultOutbox.QueuedResult> offered = new ArrayList<>();
        // The broker acknowledges nothing of this charge: the 202 stays unsent, and its outcome is not offered.
        outbox.relay(10_000, results -> {
            offered.addAll(results.stream().filter(r -> r.eventId().equals(event)).toList());
            return results.stream().filter(r -> !r.eventId().equals(event)).map(ResultOutbox.QueuedResult::id).toList();
        });
        assertEquals(List.of(202), offered.stream().map(ResultOutbox.QueuedResult::status).toList(), "the outcome waits for the 202");
        offered.clear();
        while (outbox.relay(10_000, results -> {
            offered.addAll(results.stream().filter(r -> r.eventId().equals(event)).toList());
            return results.stream().map(ResultOutbox.QueuedResult::id).toList();
        }) > 0) {
            // until everything is published
        }
        assertEquals(List.of(202, 200), offered.stream().map(ResultOutbox.QueuedResult::status).toList(), "in the order queued");
        assertEquals(List.of("accepted", "outcome"), offered.stream().map(relay::kind).toList());
    }

    @Test
    void anEventIdReusedWithAnotherBodyIsAnsweredAsA422AndNotCharged() throws Exception {
        String event = "order-" + UUID.randomUUID();
        handler.handle(command(event, VISA, 10));
        long creates = stripe.createRequests();
        String other = "{\"amount\":999,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}";

        assertEquals(new CommandHandler.Decision.Ack("refused"), handler.handle(command(event, other, 11)));
        assertEquals(new CommandHandler.Decision.Ack("refused"), handler.handle(command(event, other, 11)));
        assertEquals(creates, stripe.createRequests(), "nothing sent to Stripe");
        List<Queued> queued = queued(event);
        assertEquals(2, queued.size(), "the charge's result and one 422 (its redelivery queues nothing more)");
        Queued refused = queued.get(1);
        assertNull(refused.chargeId());
        assertEquals(422, refused.status());
        assertEquals("{\"error\":{\"type\":\"idempotency_error\",\"code\":\"idempotency_key_reused\",\"message\":\"This"
                + " Idempotency-Key was already used with a different request. Use a new key for a new payment.\","
                + "\"param\":\"Idempotency-Key\"}}", refused.body(), "the 422 POST /v1/charges answers");

        // Published apart from the event's outcome: another key (never an event id), the kind a consumer filters on.
        ResultOutbox.QueuedResult published = new ResultOutbox.QueuedResult(1, null, config.clientId(), event,
                "kafka:charge-commands-0@11", 422, refused.body());
        assertEquals(event + "\trefused\tkafka:charge-commands-0@11", ResultRelay.refusalKey(published));
        assertEquals("refusal", relay.kind(published));
        assertEquals("outcome", relay.kind(new ResultOutbox.QueuedResult(2, queued.get(0).chargeId(), config.clientId(),
                event, "kafka:charge-commands-0@10", 201, queued.get(0).body())));
    }

    @Test
    void poisonRecordsAreDeadLetteredWithTheReasonAndNothingIsStored() throws Exception {
        long creates = stripe.createRequests();
        String event = "order-" + UUID.randomUUID();
        CommandHandler.Decision notJson = handler.handle(command(event, "{not json", 1));
        assertTrue(assertInstanceOf(CommandHandler.Decision.DeadLetter.class, notJson).reason().contains("body_not_json"));
        CommandHandler.Decision invalid = handler.handle(command(event, "{\"amount\":10.5,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}", 2));
        assertTrue(assertInstanceOf(CommandHandler.Decision.DeadLetter.class, invalid).reason().contains("\"param\":\"amount\""));
        CommandHandler.Decision noKey = handler.handle(command(null, VISA, 3));
        assertTrue(assertInstanceOf(CommandHandler.Decision.DeadLetter.class, noKey).reason().contains("idempotency_key_missing"));
        CommandHandler.Decision badKey = handler.handle(new CommandHandler.Command("charge-commands", 0, 4,
                new byte[]{(byte) 0xff, 'a'}, VISA.getBytes(StandardCharsets.UTF_8)));
        assertTrue(assertInstanceOf(CommandHandler.Decision.DeadLetter.class, badKey).reason().contains("idempotency_key_invalid"));
        assertEquals(creates, stripe.createRequests());
        assertNull(row(event), "no row for a poison record");
    }

    @Test
    void aKeyFirstClaimedOverHttpUnderTheSameClientPublishesItsResultWhenTheCommandMeetsIt() throws Exception {
        String event = "order-" + UUID.randomUUID();
        // An HTTP claim of the same (client, key): the same row, no origin, nothing queued by its finish.
        dev.chargeonce.charge.ChargeService charges = io.quarkus.arc.Arc.container().instance(dev.chargeonce.charge.ChargeService.class).get();
        charges.charge(config.clientId(), new dev.chargeonce.idempotency.IdempotencyKey(event),
                dev.chargeonce.charge.ChargeRequestParser.parse(VISA.getBytes(StandardCharsets.UTF_8)));
        assertEquals(0, queued(event).size());
        assertNull(row(event).origin());

        assertEquals(new CommandHandler.Decision.Ack("duplicate"), handler.handle(command(event, VISA, 5)));
        assertEquals(1, queued(event).size(), "the command's result is queued from the row's answer");
        assertEquals(row(event).body(), queued(event).get(0).body());
        handler.handle(command(event, VISA, 5));
        assertEquals(1, queued(event).size(), "once");
    }

    /**
     * A charge first claimed over HTTP, answered 202, whose outcome came (the sync worker) before a command with its
     * key met it: nobody was waiting when the state moved, so nothing was queued then. The command adopts the row
     * and gets the 202 it answered and the state it has now, as the command that claimed it would have.
     */
    @Test
    void aCommandMeetingA202WhoseOutcomeCameEarlierGetsTheOutcomeToo() throws Exception {
        String event = "order-" + UUID.randomUUID();
        dev.chargeonce.charge.ChargeService charges = io.quarkus.arc.Arc.container().instance(dev.chargeonce.charge.ChargeService.class).get();
        charges.charge(config.clientId(), new dev.chargeonce.idempotency.IdempotencyKey(event),
                dev.chargeonce.charge.ChargeRequestParser.parse(PROCESSING.getBytes(StandardCharsets.UTF_8)));
        Row row = row(event);
        assertEquals("accepted", row.status());
        String paymentIntent = stripe.intentsFor(config.clientId(), event).get(0).get("id").asText();
        stripe.settle(paymentIntent, "succeeded");
        makeDue(row.id());
        sync.syncOnce();
        assertEquals(0, queued(event).size(), "an HTTP row queues nothing");

        assertEquals(new CommandHandler.Decision.Ack("duplicate"), handler.handle(command(event, PROCESSING, 30)));
        List<Queued> queued = queued(event);
        assertEquals(2, queued.size(), "the 202 and the outcome known since: " + queued);
        assertEquals(202, queued.get(0).status());
        assertEquals(200, queued.get(1).status());
        assertTrue(queued.get(1).body().startsWith("{\"id\":\"" + row.id() + "\",\"object\":\"charge\",\"status\":\"succeeded\""),
                queued.get(1).body());
        handler.handle(command(event, PROCESSING, 30));
        assertEquals(2, queued(event).size(), "a redelivery queues nothing more");
    }

    /**
     * A command whose charge is still unknown is logged as left to the recovery worker, its event id (its key) shown as
     * the keyed tag of the logs only: not itself, nor an unkeyed hash of it ({@link LogCapture#leak}).
     */
    @Test
    void aCommandLeftToTheRecoveryWorkerIsLoggedUnderItsKeysTagOnly() throws Exception {
        // The ingress is off in this suite, so its meters are not registered; the handler counts this case in one.
        metrics.register();
        String event = "order-" + UUID.randomUUID();
        List<String> lines;
        stripe.plan("fail_after"); // Stripe executes the create and its answer is lost: the outcome is unknown
        try (LogCapture capture = LogCapture.start()) {
            assertEquals(new CommandHandler.Decision.Ack("charged"), handler.handle(command(event, VISA, 40)));
            lines = capture.lines();
        } finally {
            stripe.clearFaults();
        }
        for (String line : lines) {
            assertNull(LogCapture.leak(config.clientId(), event, line), "a log line gives away the event id: " + line);
        }
        String tag = identities.logTag(config.clientId(), event);
        assertTrue(lines.stream().anyMatch(l -> l.contains("left to the recovery worker") && l.contains(tag)),
                "the command was logged, with its key's tag " + tag + ":\n" + String.join("\n", lines));
    }

    @Test
    void theRelayPublishesEachQueuedResultAndMarksItSent() throws Exception {
        String event = "order-" + UUID.randomUUID();
        handler.handle(command(event, VISA, 1));
        List<ResultOutbox.QueuedResult> seen = new ArrayList<>();
        // A relay that fails to publish leaves everything queued.
        try {
            outbox.relay(10_000, results -> {
                throw new IllegalStateException("broker down");
            });
        } catch (IllegalStateException expected) {
            // as a broker outage
        }
        int published = 0;
        int pass;
        while ((pass = outbox.relay(10_000, results -> {
            seen.addAll(results);
            return results.stream().map(ResultOutbox.QueuedResult::id).toList();
        })) > 0) {
            published += pass;
        }
        assertTrue(published >= 1);
        assertEquals(1, seen.stream().filter(r -> r.eventId().equals(event)).count(), "published once");
        assertEquals(0, outbox.relay(10_000, results -> List.of()), "nothing left to publish");
        assertTrue(queued(event).get(0).sent(), "marked sent");
    }

    private void makeDue(String chargeId) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "UPDATE stripe_intents SET recheck_at = now() - interval '1 second' WHERE id = ?")) {
            ps.setString(1, chargeId);
            assertEquals(1, ps.executeUpdate());
        }
    }

    record Row(String id, String status, String origin, String body) {
    }

    record Queued(String chargeId, int status, String body, boolean sent) {
    }

    private Row row(String key) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT id, status, origin, response_body FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
            ps.setString(1, config.clientId());
            ps.setString(2, dev.chargeonce.testing.TestKeys.identity(config.clientId(), key));
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? new Row(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)) : null;
            }
        }
    }

    private List<Queued> queued(String eventId) throws Exception {
        List<Queued> found = new ArrayList<>();
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT charge_id, status, body, sent_at IS NOT NULL FROM kafka_outbox WHERE event_id = ? ORDER BY id")) {
            ps.setString(1, eventId);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    found.add(new Queued(rs.getString(1), rs.getInt(2), rs.getString(3), rs.getBoolean(4)));
                }
            }
        }
        return found;
    }
}

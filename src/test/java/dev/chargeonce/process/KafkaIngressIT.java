package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.sandbox.StripeSandbox;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.testing.KafkaBroker;
import dev.chargeonce.testing.KafkaTestClients;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.StreamingStandby;
import dev.chargeonce.testing.TcpProxy;
import dev.chargeonce.testing.TestPostgres;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Kafka ingress against a real broker (single-node KRaft, a child JVM on loopback, one for the class) and the
 * packaged service, with real {@code kill -9}s: in the gap between the rows' commit and the offset commit, between
 * the claim and Stripe's answer, between Stripe's answer and the finish; members joining and leaving the group
 * mid-processing; a retrying producer; poison records. Every test ends with the same audit: one PaymentIntent per
 * event id, one row, one result per charge after deduplication by charge id, the result the row's answer.
 */
class KafkaIngressIT {

    static final String CLIENT = "orders";
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newHttpClient();

    static KafkaBroker broker;
    static KafkaTestClients kafka;

    ProcessEnvironment env;
    final List<ServiceProcess> services = new ArrayList<>();
    String commands;
    String results;
    String deadLetters;
    String group;

    @BeforeAll
    static void startBroker() {
        broker = KafkaBroker.start(Path.of("target", "kafka-tests"));
        kafka = new KafkaTestClients(broker.bootstrapServers());
    }

    @AfterAll
    static void stopBroker() {
        if (kafka != null) {
            kafka.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("kafka");
        String run = UUID.randomUUID().toString().substring(0, 8);
        commands = "commands-" + run;
        results = "results-" + run;
        deadLetters = "dlt-" + run;
        group = "chargeonce-" + run;
    }

    @AfterEach
    void tearDown() throws Exception {
        for (ServiceProcess service : services) {
            service.close();
        }
        env.close();
    }

    private Map<String, String> config(Duration lease) {
        Map<String, String> config = env.serviceConfig();
        ProcessEnvironment.shortLease(config, lease, Duration.ofSeconds(3));
        config.put("chargeonce.recovery.interval", "1s");
        config.put("chargeonce.kafka.enabled", "true");
        config.put("chargeonce.kafka.bootstrap-servers", broker.bootstrapServers());
        config.put("chargeonce.kafka.commands-topic", commands);
        config.put("chargeonce.kafka.results-topic", results);
        config.put("chargeonce.kafka.dead-letter-topic", deadLetters);
        config.put("chargeonce.kafka.group-id", group);
        config.put("chargeonce.kafka.client-id", CLIENT);
        config.put("chargeonce.kafka.gauge-interval", "1s");
        // A member killed with -9 leaves the group when its session ends: short, so that the tests' rebalances are.
        config.put("chargeonce.kafka.client.\"session.timeout.ms\"", "6000");
        config.put("chargeonce.kafka.client.\"heartbeat.interval.ms\"", "1000");
        return config;
    }

    private ServiceProcess start(String name, Map<String, String> config) {
        ServiceProcess service = ServiceProcess.start(name, config);
        services.add(service);
        return service;
    }

    static String command(long amount, String orderId) {
        return "{\"amount\":" + amount + ",\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"metadata\":{\"order_id\":\""
                + orderId + "\"}}";
    }

    // ---- the crash windows ------------------------------------------------------------------------------------

    @Test
    void killedAfterTheDatabaseCommitAndBeforeTheOffsetCommitTheRecordIsRedeliveredAndChargedOnce() throws Exception {
        kafka.createTopics(1, commands, results, deadLetters);
        Map<String, String> config = config(Duration.ofSeconds(4));
        // The consumer waits a minute between the rows' commit and the offset commit: the kill lands in the gap.
        config.put("chargeonce.kafka.offset-commit-delay", "60s");
        ServiceProcess service = start("kafka-gap", config);
        String event = "evt-" + UUID.randomUUID();
        kafka.send(commands, event, command(1500, "O-1"));

        await("the charge is committed with its result queued", Duration.ofSeconds(60),
                () -> "completed".equals(rowStatus(event)) && outboxRows(event) == 1);
        assertEquals(Map.of(), kafka.committed(group, commands), "the offset is not committed yet: the gap");
        service.kill9();

        service.configure("chargeonce.kafka.offset-commit-delay", null);
        service.startProcess();
        await("the redelivered record is acknowledged", Duration.ofSeconds(60), () -> kafka.committedTotal(group, commands) == 1);
        await("its result is published", Duration.ofSeconds(30), () -> outboxUnsent() == 0);
        assertTrue(metric(service, "chargeonce_kafka_redeliveries_total") >= 1, "the record came back and was seen as a redelivery");
        assertEquals(0, metric(service, "chargeonce_kafka_records_total{result=\"charged\"}"), "the restarted service charged nothing");
        auditExactlyOnce(List.of(event));
    }

    @Test
    void killedBetweenTheClaimAndStripesAnswerOnePaymentIntent() throws Exception {
        kafka.createTopics(1, commands, results, deadLetters);
        ServiceProcess service = start("kafka-mid-stripe", config(Duration.ofSeconds(4)));
        String event = "evt-" + UUID.randomUUID();
        env.stripe.setLatencyMillis(2_000);
        kafka.send(commands, event, command(2500, "O-2"));
        env.awaitCreateRequests(1, Duration.ofSeconds(60));
        service.kill9();
        assertEquals("processing", rowStatus(event), "claimed, Stripe still charging, the service gone");
        env.awaitStripeCharged(CLIENT, event, Duration.ofSeconds(30));
        env.stripe.setLatencyMillis(0);

        service.startProcess();
        await("the charge is finished and the record acknowledged", Duration.ofSeconds(60),
                () -> "completed".equals(rowStatus(event)) && kafka.committedTotal(group, commands) == 1 && outboxUnsent() == 0);
        auditExactlyOnce(List.of(event));
    }

    @Test
    void killedBetweenStripesAnswerAndTheFinishOnePaymentIntent() throws Exception {
        kafka.createTopics(1, commands, results, deadLetters);
        ServiceProcess service = start("kafka-before-finish", config(Duration.ofSeconds(4)));
        String event = "evt-" + UUID.randomUUID();
        env.stripe.setLatencyMillis(1_000);
        kafka.send(commands, event, command(3500, "O-3"));
        env.awaitCreateRequests(1, Duration.ofSeconds(60));
        // The database goes away while Stripe charges: Stripe answers, the finish cannot be written; then the kill.
        env.databaseProxy.cut();
        env.awaitStripeCharged(CLIENT, event, Duration.ofSeconds(30));
        Thread.sleep(300);
        service.kill9();
        env.stripe.setLatencyMillis(0);
        env.databaseProxy.restore();
        assertEquals("processing", rowStatus(event), "Stripe charged, the row was never finished");
        assertEquals(Map.of(), kafka.committed(group, commands), "nor the offset committed");

        service.startProcess();
        await("the charge is finished and the record acknowledged", Duration.ofSeconds(60),
                () -> "completed".equals(rowStatus(event)) && kafka.committedTotal(group, commands) == 1 && outboxUnsent() == 0);
        auditExactlyOnce(List.of(event));
    }

    // ---- the group --------------------------------------------------------------------------------------------

    @Test
    void membersJoiningAndLeavingMidProcessingNeitherDuplicateNorLoseACommand() throws Exception {
        kafka.createTopics(6, commands, results, deadLetters);
        Map<String, String> config = config(Duration.ofSeconds(4));
        config.put("chargeonce.kafka.max-poll-records", "5");
        ServiceProcess first = start("kafka-group-a", config);
        ServiceProcess second = start("kafka-group-b", config);
        // A second per charge at Stripe, so the group changes mid-way (a poll brings 5 records, worked in order
        // within a partition: a few charges a second at most). The three changes need 6 + 10 + 10 rows with more
        // to come: 72 commands leave about 40 behind the last change on any machine, since the pace is Stripe's
        // latency, not the CPU (180 commands took three minutes).
        env.stripe.setLatencyMillis(1_000);
        List<String> events = new ArrayList<>();
        for (int i = 0; i < 72; i++) {
            String event = "evt-" + i + "-" + UUID.randomUUID();
            events.add(event);
            kafka.send(commands, event, command(100 + i, "O-" + i));
        }
        await("processing is under way", Duration.ofSeconds(60), () -> rows() >= 6);
        assertTrue(rows() < events.size(), "still processing when a member joins");
        ServiceProcess third = start("kafka-group-c", config);   // a member joins: rebalance
        long joined = rows();
        await("more is processed", Duration.ofSeconds(60), () -> rows() >= joined + 10);
        assertTrue(rows() < events.size(), "still processing when a member dies");
        first.kill9();                                            // a member leaves without a word: rebalance
        long killed = rows();
        await("still more", Duration.ofSeconds(60), () -> rows() >= killed + 10);
        assertTrue(rows() < events.size(), "still processing when a member leaves");
        int exit = third.terminate(Duration.ofSeconds(60));   // a member leaves gracefully: rebalance
        assertTrue(exit == 0 || exit == 143, "it stopped on SIGTERM (the JVM's 128 + 15), not by a crash: " + exit);
        await("every command is acknowledged", Duration.ofSeconds(180),
                () -> kafka.committedTotal(group, commands) == events.size());
        env.stripe.setLatencyMillis(0);
        await("every result is published", Duration.ofSeconds(60), () -> finishedRows() == events.size() && outboxUnsent() == 0);
        assertTrue(second.isAlive());
        auditExactlyOnce(events);
    }

    /**
     * A failover to a standby that had not received the last commits: the rows of the last commands are gone, and
     * so are the offsets stored after them, while Kafka's committed offset is not. The consumer, which keeps its
     * partition (no rebalance), sees the database's offset behind the one it stored, reads those records again,
     * and their claims make the rows again with the same Stripe keys: every command has its charge, none twice.
     */
    @Test
    void aFailoverThatLosesCommitsHasTheLostCommandsReadAgainAndChargedOnce() throws Exception {
        loseCommitsAndAudit(false);
    }

    /** The same loss found when the partition is taken up (the instance restarted, or a rebalance moved it). */
    @Test
    void aFailoverThatLosesCommitsWhileTheConsumerIsDownIsFoundWhenItTakesThePartitionUp() throws Exception {
        loseCommitsAndAudit(true);
    }

    private void loseCommitsAndAudit(boolean downDuringTheLoss) throws Exception {
        kafka.createTopics(1, commands, results, deadLetters);
        ServiceProcess service = start("kafka-lost-commits", config(Duration.ofSeconds(4)));
        List<String> events = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            String event = "evt-" + i + "-" + UUID.randomUUID();
            events.add(event);
            kafka.send(commands, event, command(700 + i, "O-" + i));
        }
        await("every command is acknowledged", Duration.ofSeconds(60),
                () -> kafka.committedTotal(group, commands) == events.size() && finishedRows() == events.size());
        assertEquals(events.size(), storedOffset(), "the offset is stored in the database too");

        if (downDuringTheLoss) {
            service.kill9();
        }
        // What the failover leaves: the last three commands' rows (and their queued results) are gone, and the
        // database's offset is where it was before them. Kafka's committed offset still says 6.
        List<String> lost = events.subList(3, 6);
        try (Connection c = env.connect(); Statement s = c.createStatement()) {
            String in = lost.stream().map(e -> "'" + e + "'").collect(java.util.stream.Collectors.joining(", "));
            s.executeUpdate("DELETE FROM kafka_outbox WHERE event_id IN (" + in + ")");
            assertEquals(3, s.executeUpdate("DELETE FROM stripe_intents WHERE client_id = '" + CLIENT + "' AND idempotency_key IN (" + in + ")"));
            assertEquals(1, s.executeUpdate("UPDATE kafka_offsets SET next_offset = 3 WHERE group_id = '" + group + "'"));
        }
        assertEquals(events.size(), kafka.committedTotal(group, commands));
        if (downDuringTheLoss) {
            service.startProcess();
        }

        auditLostCommandsChargedOnce(service, events);
    }

    /**
     * A real failover: the service's own primary streams to an asynchronous standby; the replication link is cut, so
     * the standby misses the commits of the last three commands (their rows, their results, the offset stored after
     * them), which Kafka has acknowledged; the primary dies, the standby is promoted, and the service's database
     * address leads to it, with the consumer running all along (no rebalance). The lost commands are read again and
     * charged with the same Stripe keys: every command has its one PaymentIntent, none has two.
     */
    @Test
    void aRealFailoverToAStandbyThatMissedTheLastCommitsLosesNoCommandAndChargesNoneTwice() throws Exception {
        EmbeddedPostgres primary = TestPostgres.startServer();
        TcpProxy replicationLink = new TcpProxy(primary.getPort());
        StreamingStandby standby = null;
        boolean primaryStopped = false;
        try {
            TestPostgres.createDatabase(primary.getPort(), "kafka_failover");
            env.close();
            env = new ProcessEnvironment(primary.getPort(), "kafka_failover");
            standby = StreamingStandby.start(primary.getPort(), replicationLink.port(), "kafka_failover", Duration.ZERO);
            kafka.createTopics(1, commands, results, deadLetters);
            ServiceProcess service = start("kafka-failover", config(Duration.ofSeconds(4)));
            List<String> events = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                events.add("evt-" + i + "-" + UUID.randomUUID());
            }
            for (String event : events.subList(0, 3)) {
                kafka.send(commands, event, command(900 + events.indexOf(event), "O-" + event));
            }
            await("the first commands are acknowledged", Duration.ofSeconds(60),
                    () -> kafka.committedTotal(group, commands) == 3 && storedOffset() == 3 && outboxUnsent() == 0);
            standby.awaitCaughtUp(Duration.ofSeconds(60));

            replicationLink.cut();   // the standby gets nothing more: what follows is on the primary only
            for (String event : events.subList(3, 6)) {
                kafka.send(commands, event, command(900 + events.indexOf(event), "O-" + event));
            }
            await("the last commands are acknowledged", Duration.ofSeconds(60),
                    () -> kafka.committedTotal(group, commands) == 6 && storedOffset() == 6 && finishedRows() == 6);

            env.databaseProxy.cut();
            primary.close();                                     // the primary dies
            primaryStopped = true;
            standby.promote(Duration.ofSeconds(60));              // the failover
            try (Connection c = standby.connect("kafka_failover"); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT (SELECT count(*) FROM stripe_intents),"
                         + " (SELECT sum(next_offset) FROM kafka_offsets WHERE group_id = '" + group + "')")) {
                rs.next();
                assertEquals(3, rs.getLong(1), "the promoted standby lost the last three commands' rows");
                assertEquals(3, rs.getLong(2), "and the offset stored after them");
            }
            assertEquals(6, kafka.committedTotal(group, commands), "which Kafka has acknowledged");
            env.failOverTo(standby.port());                       // the service's address leads to the new primary

            auditLostCommandsChargedOnce(service, events);
            assertEquals(events.size(), env.stripe.ledger().size(), "no PaymentIntent beyond the commands'");
        } finally {
            if (standby != null) {
                standby.close();
            }
            replicationLink.close();
            if (!primaryStopped) {
                primary.close();
            }
        }
    }

    /**
     * A failover under a batch: the rows of its records committed, then lost before the offset that acknowledges
     * them is stored (the database's offset, stored before them, survives). The statement that stores the offset
     * finds the rows missing: the partition is read again, and the lost commands are charged, once.
     */
    @Test
    void rowsLostAfterTheLastStoredOffsetAreFoundWhenTheOffsetThatAcknowledgesThemIsStored() throws Exception {
        kafka.createTopics(1, commands, results, deadLetters);
        List<String> events = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            String event = "evt-" + i + "-" + UUID.randomUUID();
            events.add(event);
            kafka.send(commands, event, command(800 + i, "O-" + i));
        }
        Map<String, String> config = config(Duration.ofSeconds(4));
        // Between the rows' commit and the offsets' store: the window the loss lands in.
        config.put("chargeonce.kafka.offset-commit-delay", "20s");
        ServiceProcess service = start("kafka-lost-rows", config);
        await("the batch's rows are committed", Duration.ofSeconds(60), () -> finishedRows() == events.size());
        assertEquals(Map.of(), kafka.committed(group, commands), "no offset committed yet: the rows are in the window");
        try (Connection c = env.connect(); Statement s = c.createStatement()) {
            String in = events.subList(3, 6).stream().map(e -> "'" + e + "'").collect(java.util.stream.Collectors.joining(", "));
            s.executeUpdate("DELETE FROM kafka_outbox WHERE event_id IN (" + in + ")");
            assertEquals(3, s.executeUpdate("DELETE FROM stripe_intents WHERE client_id = '" + CLIENT + "' AND idempotency_key IN (" + in + ")"));
        }
        await("every command is acknowledged", Duration.ofSeconds(90), () -> kafka.committedTotal(group, commands) == events.size());
        auditLostCommandsChargedOnce(service, events);
    }

    private void auditLostCommandsChargedOnce(ServiceProcess service, List<String> events) throws Exception {
        await("the lost commands are read again and charged", Duration.ofSeconds(60),
                () -> finishedRows() == events.size() && storedOffset() == events.size());
        await("their results are published", Duration.ofSeconds(30), () -> outboxUnsent() == 0);
        assertTrue(metric(service, "chargeonce_kafka_offset_rewinds_total") >= 1, "the partition was read again");
        for (String event : events) {
            assertEquals("completed", rowStatus(event), event);
            List<StripeSandbox.PaymentIntent> intents = env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(CLIENT, event));
            assertEquals(1, intents.size(), "one PaymentIntent for " + event);
            try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                    "SELECT response_body FROM stripe_intents WHERE client_id = ? AND idempotency_key = ?")) {
                ps.setString(1, CLIENT);
                ps.setString(2, event);
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    assertTrue(rs.getString(1).contains(intents.get(0).id()), "the answer names the PaymentIntent Stripe made first");
                }
            }
        }
        assertEquals(events.size(), env.stripe.ledger().size(), "no PaymentIntent beyond the commands' (Stripe's whole ledger)");
    }

    private long storedOffset() {
        return count("SELECT coalesce(sum(next_offset), -1) FROM kafka_offsets WHERE group_id = '" + group + "'");
    }

    /**
     * A group reads a partition from its earliest record when Kafka has no offset for it (offsets expired after the
     * broker's {@code offsets.retention.minutes}, a group deleted, a topic made again), so a record must never outlive
     * its row: a commands topic that keeps records for ever (or longer than the rows live) is not consumed, and the
     * service says why; once its retention is set right, the waiting command is charged.
     */
    @Test
    void aCommandsTopicThatKeepsRecordsLongerThanTheirRowsIsNotConsumed() throws Exception {
        kafka.createTopic(commands, 1, Map.of("retention.ms", "-1"));
        kafka.createTopics(1, results, deadLetters);
        String event = "evt-" + UUID.randomUUID();
        kafka.send(commands, event, command(530, "O-530"));
        Map<String, String> config = config(Duration.ofSeconds(4));
        config.put("chargeonce.kafka.topic-check-interval", "2s");
        ServiceProcess service = start("kafka-retention", config);
        await("the service says why it does not consume", Duration.ofSeconds(90),
                () -> service.log().contains("not consuming the commands topic: topic " + commands + " has retention.ms=-1"));
        assertEquals(1, metric(service, "chargeonce_kafka_commands_topic_refused"));
        Thread.sleep(3_000);
        assertEquals(0, rows(), "nothing was claimed");
        assertEquals(Map.of(), kafka.committed(group, commands), "nothing was acknowledged");

        kafka.setTopicConfig(commands, "retention.ms", Long.toString(Duration.ofDays(7).toMillis()));
        await("the command is charged once the topic drops records in time", Duration.ofSeconds(60),
                () -> kafka.committedTotal(group, commands) == 1 && outboxUnsent() == 0 && finishedRows() == 1);
        assertEquals("completed", rowStatus(event));
        assertEquals(0, metric(service, "chargeonce_kafka_commands_topic_refused"));
        auditExactlyOnce(List.of(event));
    }

    /**
     * A commands topic deleted and made again under the same name: Kafka has no offset for it (its offsets went with
     * it), the database has the old topic's (4), and the new topic's records are all new: none of them may be
     * skipped because an old offset says 4. Every record produced since the offset was stored is read.
     */
    @Test
    void aTopicMadeAgainUnderTheSameNameHasNoneOfItsRecordsSkipped() throws Exception {
        kafka.createTopics(1, commands, results, deadLetters);
        for (int i = 0; i < 4; i++) {
            kafka.send(commands, "evt-old-" + i + "-" + UUID.randomUUID(), command(520 + i, "O-old-" + i));
        }
        Map<String, String> config = config(Duration.ofSeconds(4));
        ServiceProcess first = start("kafka-topic-again-a", config);
        await("the old topic's commands are acknowledged", Duration.ofSeconds(60), () -> kafka.committedTotal(group, commands) == 4);
        int exit = first.terminate(Duration.ofSeconds(60));
        assertTrue(exit == 0 || exit == 143, "it stopped on SIGTERM: " + exit);
        assertEquals(4, storedOffset(), "the database has the old topic's offset");

        kafka.makeTopicAgain(commands, 1);
        List<String> fresh = new ArrayList<>();
        for (int i = 0; i < 6; i++) {   // more than the old offset: a group going on from 4 would skip four of them
            fresh.add("evt-new-" + i + "-" + UUID.randomUUID());
            kafka.send(commands, fresh.get(i), command(620 + i, "O-new-" + i));
        }
        start("kafka-topic-again-b", config);
        await("every new command is acknowledged", Duration.ofSeconds(60), () -> kafka.committedTotal(group, commands) == 6);
        await("their results are published", Duration.ofSeconds(30), () -> outboxUnsent() == 0);
        for (String event : fresh) {
            assertEquals("completed", rowStatus(event), event + " was read and charged");
            assertEquals(1, env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(CLIENT, event)).size(), event);
        }
        assertEquals(10, rows(), "four old commands and six new ones, each charged once");
    }

    // ---- the producer's side ------------------------------------------------------------------------------------

    @Test
    void aRetryingProducerWithAStableEventIdChargesOnceAndWithFreshIdsTwice() throws Exception {
        kafka.createTopics(3, commands, results, deadLetters);
        ServiceProcess service = start("kafka-producer", config(Duration.ofSeconds(4)));
        String stable = "evt-" + UUID.randomUUID();
        for (int i = 0; i < 3; i++) {
            kafka.send(commands, stable, command(4200, "O-42"));   // the producer retried: the same event id
        }
        // The same order, but the producer made up a new id on each retry: two commands as far as anyone can tell.
        String freshA = "evt-" + UUID.randomUUID();
        String freshB = "evt-" + UUID.randomUUID();
        kafka.send(commands, freshA, command(4300, "O-43"));
        kafka.send(commands, freshB, command(4300, "O-43"));
        // An event id reused for another payment is refused as HTTP refuses it (422), and not charged.
        kafka.send(commands, stable, command(9999, "O-other"));

        await("every command is acknowledged", Duration.ofSeconds(60), () -> kafka.committedTotal(group, commands) == 6);
        await("every result is published", Duration.ofSeconds(30), () -> outboxUnsent() == 0);
        assertEquals(1, env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(CLIENT, stable)).size(), "a stable id: one charge");
        long o43 = env.stripe.ledger().stream().filter(pi -> pi.amount() == 4300).count();
        assertEquals(2, o43, "fresh ids per retry: the order is charged twice (identity is the producer's job)");
        assertEquals(2, metric(service, "chargeonce_kafka_duplicates_suppressed_total"), "two retries suppressed");

        List<JsonNode> refused = published().stream().filter(r -> r.get("status").asInt() == 422).toList();
        assertEquals(1, refused.size(), "one 422 result");
        assertEquals(stable, refused.get(0).get("event_id").asText());
        assertEquals("idempotency_key_reused", refused.get(0).get("body").get("error").get("code").asText());
        auditExactlyOnce(List.of(stable, freshA, freshB));
    }

    @Test
    void aPoisonRecordGoesToTheDeadLetterTopicAndTheRecordsBehindItAreProcessed() throws Exception {
        kafka.createTopics(1, commands, results, deadLetters);
        ServiceProcess service = start("kafka-poison", config(Duration.ofSeconds(4)));
        String before = "evt-" + UUID.randomUUID();
        String after = "evt-" + UUID.randomUUID();
        kafka.send(commands, before, command(700, "O-7"));
        kafka.send(commands, "evt-" + UUID.randomUUID(), "{\"amount\": 10.5, \"currency\": \"usd\"");   // not JSON
        kafka.send(commands, null, command(800, "O-8"));                                                // no event id
        kafka.send(commands, "evt-" + UUID.randomUUID(), "{\"amount\":-1,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}");
        kafka.send(commands, after, command(900, "O-9"));

        await("every record is acknowledged", Duration.ofSeconds(60), () -> kafka.committedTotal(group, commands) == 5);
        await("every result is published", Duration.ofSeconds(30), () -> outboxUnsent() == 0);
        List<KafkaTestClients.Message> letters = kafka.readAll(deadLetters);
        assertEquals(3, letters.size(), "three poison records dead-lettered");
        assertEquals(List.of("1", "2", "3"), letters.stream().map(m -> m.headers().get("chargeonce-original-offset")).toList());
        assertTrue(letters.get(0).headers().get("chargeonce-dead-letter-reason").contains("body_not_json"), letters.get(0).headers().toString());
        assertTrue(letters.get(1).headers().get("chargeonce-dead-letter-reason").contains("idempotency_key_missing"));
        assertTrue(letters.get(2).headers().get("chargeonce-dead-letter-reason").contains("amount_out_of_range"));
        assertEquals(command(800, "O-8"), letters.get(1).value(), "the record as it came");
        assertEquals(3, metric(service, "chargeonce_kafka_dead_letters_total"));
        assertEquals(2, env.stripe.ledger().size(), "the valid records around them are charged");
        auditExactlyOnce(List.of(before, after));
        assertDashboardAndAlertsQueryExportedMetrics(service);
    }

    /** Every Kafka metric the dashboard and the alerts in k8s/ query is in a running service's /q/metrics. */
    private static void assertDashboardAndAlertsQueryExportedMetrics(ServiceProcess service) throws Exception {
        String exported = HTTP.send(HttpRequest.newBuilder(URI.create(service.managementUri("/q/metrics").toString())).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Set<String> names = new HashSet<>();
        exported.lines().filter(l -> !l.startsWith("#") && !l.isBlank()).forEach(l -> names.add(l.replaceAll("[{ ].*", "")));
        Set<String> queried = new java.util.TreeSet<>();
        for (String file : List.of("k8s/base/grafana-dashboard.yaml", "k8s/base/prometheusrule.yaml")) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\bchargeonce_kafka_[a-z0-9_]+")
                    .matcher(java.nio.file.Files.readString(Path.of(file)));
            while (m.find()) {
                queried.add(m.group());
            }
        }
        assertTrue(queried.size() >= 7, "the dashboard and the alerts query the Kafka metrics: " + queried);
        Set<String> missing = new java.util.TreeSet<>(queried);
        missing.removeAll(names);
        assertEquals(Set.of(), missing, "queried in k8s/ but not exported by the service");
    }

    // ---- the audit ----------------------------------------------------------------------------------------------

    /**
     * For each event id: exactly one PaymentIntent at Stripe, one finished row, and exactly one distinct result on
     * the results topic after dedup by charge id, equal to the row's answer; and no result for any other charge.
     */
    private void auditExactlyOnce(List<String> events) throws Exception {
        Map<String, String[]> rows = new HashMap<>();
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT idempotency_key, id, status, response_status, response_body FROM stripe_intents WHERE client_id = ?")) {
            ps.setString(1, CLIENT);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.put(rs.getString(1), new String[]{rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5)});
                }
            }
        }
        assertEquals(new HashSet<>(events), rows.keySet(), "one row per event id, no other");
        Map<String, List<JsonNode>> byCharge = new LinkedHashMap<>();
        for (JsonNode result : published()) {
            if (!result.get("charge_id").isNull()) {
                byCharge.computeIfAbsent(result.get("charge_id").asText(), k -> new ArrayList<>()).add(result);
            }
        }
        Set<String> chargeIds = new HashSet<>();
        for (String event : events) {
            String[] row = rows.get(event);
            List<StripeSandbox.PaymentIntent> intents = env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(CLIENT, event));
            assertEquals(1, intents.size(), "one PaymentIntent for " + event);
            assertEquals("completed", row[1], event);
            chargeIds.add(row[0]);
            List<JsonNode> theirs = byCharge.getOrDefault(row[0], List.of());
            assertFalse(theirs.isEmpty(), "a result for " + event);
            for (JsonNode result : theirs) {
                assertEquals(event, result.get("event_id").asText());
                assertEquals(Integer.parseInt(row[2]), result.get("status").asInt());
                assertEquals(JSON.readTree(row[3]), result.get("body"), "the result is the row's answer");
            }
            assertTrue(row[3].contains(intents.get(0).id()), "the answer names the PaymentIntent Stripe made");
        }
        assertEquals(chargeIds, byCharge.keySet(), "after dedup by charge id: one result per charge, none else");
        assertEquals(events.size(), env.stripe.ledger().size(), "no PaymentIntent beyond the commands' (Stripe's whole ledger)");
    }

    private List<JsonNode> published() throws Exception {
        List<JsonNode> parsed = new ArrayList<>();
        for (KafkaTestClients.Message m : kafka.readAll(results)) {
            JsonNode node = JSON.readTree(m.value());
            assertEquals(node.get("event_id").asText(), m.key(), "keyed by event id");
            parsed.add(node);
        }
        return parsed;
    }

    private String rowStatus(String event) {
        try {
            return env.rowStatus(event);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private long rows() {
        return count("SELECT count(*) FROM stripe_intents");
    }

    private long finishedRows() {
        return count("SELECT count(*) FROM stripe_intents WHERE status <> 'processing'");
    }

    private long outboxRows(String event) {
        return count("SELECT count(*) FROM kafka_outbox WHERE event_id = '" + event.replace("'", "''") + "'");
    }

    private long outboxUnsent() {
        return count("SELECT count(*) FROM kafka_outbox WHERE sent_at IS NULL");
    }

    private long count(String sql) {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static double metric(ServiceProcess service, String series) throws Exception {
        String body = HTTP.send(HttpRequest.newBuilder(URI.create(service.managementUri("/q/metrics").toString())).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        for (String line : body.split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        throw new AssertionError("no series " + series + " in /q/metrics");
    }

    static void await(String what, Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out (" + timeout + "): " + what);
            }
            Thread.sleep(200);
        }
    }
}

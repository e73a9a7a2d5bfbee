package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.StreamingStandby;
import dev.chargeonce.testing.TcpProxy;
import dev.chargeonce.testing.TestPostgres;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The Kafka ingress through group changes and failovers, against a real broker and the packaged service: members
 * joining, killed and leaving mid-processing; failovers that lose the last commits (simulated, under a batch, and a
 * real asynchronous standby promoted): no command charged twice, none lost.
 */
class KafkaGroupAndFailoverIT extends KafkaProcessTestBase {

    // ---- the group --------------------------------------------------------------------------------------------

    /**
     * Three group changes (a member joins, one is killed with -9, one leaves on SIGTERM) while commands keep
     * arriving and charges are in flight. Commands are produced steadily all along (two a second, each a second
     * at Stripe) rather than in batches: a batch produced before a change could drain while the member was still
     * starting on a loaded machine (a new member took 15 s to start beside a second suite, by when every command
     * had its row), and the check that the group goes on after the change could then not be met.
     */
    @Test
    void membersJoiningAndLeavingMidProcessingNeitherDuplicateNorLoseACommand() throws Exception {
        kafka.createTopics(6, commands, results, deadLetters);
        Map<String, String> config = config(Duration.ofSeconds(4));
        config.put("chargeonce.kafka.max-poll-records", "5");
        config.put("quarkus.log.category.\"dev.chargeonce.kafka\".level", "DEBUG"); // each batch's commit, for a failure's story
        ServiceProcess first = start("kafka-group-a", config);
        ServiceProcess second = start("kafka-group-b", config);
        env.stripe.setLatencyMillis(1_000);
        List<String> events = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (SteadyProducer producer = new SteadyProducer(events, Duration.ofMillis(500))) {
            await("processing is under way", Duration.ofSeconds(60), () -> rows() >= 6);

            awaitInFlight("a member joins");
            ServiceProcess third = start("kafka-group-c", config);   // a member joins: rebalance
            // ready is not yet a member: the group of three exists, and the newcomer commits records of its own
            await("the third member in the group", Duration.ofSeconds(60), () -> kafka.members(group) == 3);
            long joined = finishedRows();
            awaitOrTell("the group of three goes on", Duration.ofSeconds(90),
                    () -> finishedRows() >= joined + 10 && third.log().contains("offsets committed"), events, first, second, third);

            awaitInFlight("a member dies");
            first.kill9();                                            // a member leaves without a word: rebalance
            await("the killed member out of the group", Duration.ofSeconds(60), () -> kafka.members(group) == 2);
            long killed = finishedRows();
            awaitOrTell("the group of two goes on", Duration.ofSeconds(90), () -> finishedRows() >= killed + 10, events,
                    second, third);

            awaitInFlight("a member leaves");
            int exit = third.terminate(Duration.ofSeconds(60));   // a member leaves gracefully: rebalance
            assertTrue(exit == 0 || exit == 143, "it stopped on SIGTERM (the JVM's 128 + 15), not by a crash: " + exit);
            await("the member that left out of the group", Duration.ofSeconds(60), () -> kafka.members(group) == 1);
            long left = finishedRows();
            awaitOrTell("the last member goes on", Duration.ofSeconds(90), () -> finishedRows() >= left + 10, events, second);
        }
        await("every command is acknowledged", Duration.ofSeconds(180),
                () -> kafka.committedTotal(group, commands) == events.size());
        env.stripe.setLatencyMillis(0);
        await("every result is published", Duration.ofSeconds(60), () -> finishedRows() == events.size() && outboxUnsent() == 0);
        assertTrue(second.isAlive());
        auditExactlyOnce(events);
    }

    /** Waits until a charge is in flight (a row claimed, its Stripe call not answered), so that the change meets one. */
    private void awaitInFlight(String change) throws InterruptedException {
        await("a charge in flight when " + change, Duration.ofSeconds(30), () -> rows() > finishedRows());
    }

    /** {@link #await}, telling on a timeout where the commands stand and what each member reports. */
    private void awaitOrTell(String what, Duration timeout, java.util.function.BooleanSupplier condition, List<String> events,
                             ServiceProcess... members) throws InterruptedException {
        try {
            await(what, timeout, condition);
        } catch (AssertionError e) {
            StringBuilder story = new StringBuilder(e.getMessage());
            try {
                story.append("; rows ").append(rows()).append(" (finished ").append(finishedRows()).append(") of ")
                        .append(events.size()).append(" commands; committed ").append(kafka.committed(group, commands));
            } catch (RuntimeException unreadable) {
                story.append("; rows and offsets unreadable: ").append(unreadable.getMessage());
            }
            for (ServiceProcess member : members) {
                try {
                    story.append("; ").append(member.name()).append(": lag ").append(metric(member, "chargeonce_kafka_consumer_lag"));
                } catch (Exception | AssertionError unreadable) {
                    story.append("; ").append(member.name()).append(": ").append(unreadable.getMessage());
                }
            }
            throw new AssertionError(story.toString(), e);
        }
    }

    /** Produces a command with a new event id every {@code interval} until closed; each one's id joins {@code events}. */
    private final class SteadyProducer implements AutoCloseable {
        private final Thread thread;
        private volatile boolean running = true;
        private volatile Throwable failure;

        SteadyProducer(List<String> events, Duration interval) {
            thread = Thread.ofPlatform().name("steady-producer").daemon().start(() -> {
                try {
                    while (running) {
                        int number = events.size();
                        String event = "evt-" + number + "-" + UUID.randomUUID();
                        kafka.send(commands, event, command(100 + number, "O-" + number));
                        events.add(event); // after the send: every id in the list is on the topic
                        Thread.sleep(interval.toMillis());
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (Throwable e) {
                    failure = e;
                }
            });
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            thread.join();
            if (failure != null) {
                throw new IllegalStateException("the steady producer failed", failure);
            }
        }
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
}

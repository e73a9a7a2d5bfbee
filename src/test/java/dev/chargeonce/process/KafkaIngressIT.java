package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chargeonce.testing.KafkaTestClients;
import dev.chargeonce.testing.ServiceProcess;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The Kafka ingress against a real broker and the packaged service, with real {@code kill -9}s: in the gap between
 * the rows' commit and the offset commit, between the claim and Stripe's answer, between Stripe's answer and the
 * finish; a commands topic that keeps records too long; a topic made again; a retrying producer; poison records.
 * Most tests end with the same audit: one PaymentIntent per event id, one row, one result per charge after
 * deduplication by charge id, the result the row's answer. Members joining and leaving, and failovers:
 * {@link KafkaGroupAndFailoverIT}.
 */
class KafkaIngressIT extends KafkaProcessTestBase {

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

    /**
     * A group reads a partition from its earliest record when Kafka has no offset for it (offsets expired after the
     * broker's {@code offsets.retention.minutes}, a group deleted, a topic made again), so a record must never outlive
     * its row: a commands topic that keeps records for ever (or longer than the rows live) is not consumed (the
     * consumer stays in the group with its partitions paused), and the service says why; once its retention is set
     * right, the waiting command is charged.
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
        assertEquals(1, kafka.members(group), "the consumer stays in the group, its partitions paused (the group's offsets do not expire)");

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

    /**
     * The event id reused with another body is refused (a 422) after the event's outcome was published: the refusal
     * answers that record, not the event, so it must never take the outcome's place for a consumer that keeps the
     * latest record per key, nor on a compacted results topic, where the broker itself keeps only that.
     */
    @Test
    void aRefusalNeverTakesTheOutcomesPlaceOnACompactedResultsTopic() throws Exception {
        kafka.createTopics(1, commands, deadLetters);
        kafka.createTopic(results, 1, Map.of("cleanup.policy", "compact", "segment.ms", "100",
                "min.cleanable.dirty.ratio", "0.0", "min.compaction.lag.ms", "0"));
        start("kafka-compacted", config(Duration.ofSeconds(4)));
        String event = "evt-" + UUID.randomUUID();
        kafka.send(commands, event, command(1700, "O-17"));
        await("the outcome is published", Duration.ofSeconds(60),
                () -> "completed".equals(rowStatus(event)) && outboxRows(event) == 1 && outboxUnsent() == 0);
        kafka.send(commands, event, command(9999, "O-other"));   // the same event id, another payment
        await("the refusal is published after it", Duration.ofSeconds(60),
                () -> kafka.committedTotal(group, commands) == 2 && outboxRows(event) == 2 && outboxUnsent() == 0);

        List<KafkaTestClients.Message> all = kafka.readAll(results);
        assertOutcomeIsTheLatestUnderTheEventId(event, all);
        KafkaTestClients.Message refusal = all.stream().filter(m -> m.value().contains("\"status\":422")).findFirst().orElseThrow();
        assertTrue(!event.equals(refusal.key()), "a refusal is not keyed by the event id: " + refusal.key());
        assertEquals("refusal", refusal.headers().get("chargeonce-result-kind"), "a consumer can filter refusals out");
        auditExactlyOnce(List.of(event));

        // Compaction: records after them with one key twice, then one more after segment.ms, so that the segment
        // holding them rolls and the cleaner may compact it; once the two became one, everything before was cleaned.
        kafka.send(results, "compaction-probe", "{}");
        kafka.send(results, "compaction-probe", "{}");
        Thread.sleep(300);
        kafka.send(results, "segment-roll", "{}");
        await("the cleaner compacted the results topic", Duration.ofSeconds(120), () -> {
            kafka.send(results, "segment-roll", "{}");   // the active segment is never cleaned: keep rolling
            return kafka.readAll(results).stream().filter(m -> "compaction-probe".equals(m.key())).count() == 1;
        });
        assertOutcomeIsTheLatestUnderTheEventId(event, kafka.readAll(results));
    }

    /** Keeps the latest record per key, as compaction does, and finds the event's outcome under its event id. */
    private void assertOutcomeIsTheLatestUnderTheEventId(String event, List<KafkaTestClients.Message> records) throws Exception {
        Map<String, KafkaTestClients.Message> latest = new java.util.HashMap<>();
        for (KafkaTestClients.Message m : records) {
            latest.merge(m.key(), m, (a, b) -> b.offset() > a.offset() ? b : a);
        }
        KafkaTestClients.Message outcome = latest.get(event);
        assertTrue(outcome != null, "a record under the event id");
        JsonNode value = JSON.readTree(outcome.value());
        assertEquals(201, value.get("status").asInt(), "the latest record under the event id is its outcome: " + outcome.value());
        assertEquals(1, count("SELECT count(*) FROM stripe_intents WHERE client_id = '" + CLIENT + "' AND id = '"
                + value.get("charge_id").asText() + "'"), "the outcome names the event's charge: " + outcome.value());
        assertEquals("outcome", outcome.headers().get("chargeonce-result-kind"));
        assertEquals(value.get("charge_id").asText(), outcome.headers().get("chargeonce-charge-id"));
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

}

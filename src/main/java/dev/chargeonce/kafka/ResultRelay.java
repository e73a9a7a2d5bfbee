package dev.chargeonce.kafka;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.idempotency.ChargeStatus;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.ResultOutbox;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.utils.Utils;
import org.jboss.logging.Logger;

/**
 * Publishes the queued results of Kafka commands to the results topic, then marks them sent (see
 * {@link ResultOutbox#relay}): at least once, never lost. Every instance runs one; each pass locks the rows it
 * publishes, so two relays publish different rows, and a charge's results in the order they were queued (a result
 * waits while an earlier one of its charge is unsent). A result is published again only when a relay died (or the
 * broker's acknowledgement never came) between the send and the commit that marks it sent.
 *
 * <p>The record: value = the envelope {@code {"event_id", "charge_id", "status", "body"}} where {@code body} is the
 * HTTP answer's body byte for byte and {@code status} its status; the charge id, status, event id and the result's
 * kind ({@link #KIND}) also as headers. A charge's results are keyed by the event id, so that the latest record
 * under it (what a compacted topic keeps) is the command's latest word. A refusal (a 422: the event id was first used
 * with another body, {@code charge_id} null) answers the refused record, not the event: it is keyed apart
 * ({@link #refusalKey}), on the event id's partition, so that it never takes the outcome's place. Consumers
 * deduplicate by {@code charge_id}.
 */
@ApplicationScoped
public class ResultRelay {

    private static final Logger LOG = Logger.getLogger(ResultRelay.class);
    static final String CHARGE_ID = "chargeonce-charge-id";
    static final String STATUS = "chargeonce-status";
    static final String EVENT_ID = "chargeonce-event-id";
    /**
     * What a result says of its command: {@code outcome} (the charge is decided: its answer, or a later state
     * {@code succeeded}, {@code failed}, {@code canceled}), {@code accepted} (not decided yet: a {@code 202}, or a
     * later state {@code requires_action}, {@code processing}; an outcome follows), {@code refusal} (a 422 that
     * answers one record; the event's own results are the others).
     */
    static final String KIND = "chargeonce-result-kind";

    private final ResultOutbox outbox;
    private final KafkaProducers producers;
    private final KafkaConfig config;
    private final KafkaMetrics metrics;
    private final ObjectMapper json;
    private volatile boolean running;
    private Thread thread;

    ResultRelay(ResultOutbox outbox, KafkaProducers producers, KafkaConfig config, KafkaMetrics metrics, ObjectMapper json) {
        this.outbox = outbox;
        this.producers = producers;
        this.config = config;
        this.metrics = metrics;
        this.json = json;
    }

    void start() {
        running = true;
        thread = Thread.ofPlatform().name("kafka-results-relay").daemon().start(this::run);
    }

    void stop() {
        running = false;
        if (thread != null) {
            try {
                thread.join(Duration.ofSeconds(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void run() {
        long nextUpkeep = 0;
        while (running) {
            int published = 0;
            try {
                published = outbox.relay(config.relayBatchSize(), this::publish);
                if (published > 0) {
                    metrics.published(published);
                }
                if (System.nanoTime() - nextUpkeep > 0) {
                    ResultOutbox.Backlog backlog = outbox.backlog();
                    metrics.backlog(backlog.rows(), backlog.oldestAgeSeconds());
                    outbox.purgeSent(config.outboxRetention(), 500);
                    nextUpkeep = System.nanoTime() + config.gaugeInterval().toNanos();
                }
            } catch (DatabaseUnavailableException e) {
                LOG.warnf("result relay: database unavailable (%s)", e.getMessage());
            } catch (Exception e) {
                LOG.warnf("result relay: pass failed (%s); the results stay queued", e.toString());
            }
            if (published < config.relayBatchSize()) {
                sleep(published == 0 ? config.relayInterval().toMillis() : 0);
            }
        }
    }

    /** Sends every result, waits for the broker's acknowledgements, and answers the ids acknowledged. */
    private List<Long> publish(List<ResultOutbox.QueuedResult> results) throws InterruptedException {
        List<Future<RecordMetadata>> sends = new ArrayList<>(results.size());
        int partitions = 0;
        for (ResultOutbox.QueuedResult result : results) {
            byte[] eventId = result.eventId().getBytes(StandardCharsets.UTF_8);
            byte[] value = envelope(result).getBytes(StandardCharsets.UTF_8);
            ProducerRecord<byte[], byte[]> record;
            if (result.chargeId() == null) {
                if (partitions == 0) {
                    partitions = producers.get().partitionsFor(config.resultsTopic()).size();
                }
                // The event id's partition, as the default partitioner picks it for the event's own results: all
                // of a command's results on one partition.
                record = new ProducerRecord<>(config.resultsTopic(), Utils.toPositive(Utils.murmur2(eventId)) % partitions,
                        refusalKey(result).getBytes(StandardCharsets.UTF_8), value);
            } else {
                record = new ProducerRecord<>(config.resultsTopic(), eventId, value);
                record.headers().add(CHARGE_ID, result.chargeId().getBytes(StandardCharsets.UTF_8));
            }
            record.headers().add(STATUS, Integer.toString(result.status()).getBytes(StandardCharsets.UTF_8));
            record.headers().add(EVENT_ID, eventId);
            record.headers().add(KIND, kind(result).getBytes(StandardCharsets.UTF_8));
            sends.add(producers.get().send(record));
        }
        producers.get().flush();
        List<Long> sent = new ArrayList<>(results.size());
        for (int i = 0; i < results.size(); i++) {
            try {
                sends.get(i).get(30, TimeUnit.SECONDS);
                sent.add(results.get(i).id());
            } catch (Exception e) {
                if (e instanceof InterruptedException interrupted) {
                    throw interrupted;
                }
                LOG.warnf("result %d not acknowledged by the broker (%s); published again later", results.get(i).id(), e.getMessage());
            }
        }
        return sent;
    }

    /**
     * A refusal's record key: the event id, a tab, {@code refused}, a tab, and the refused record's place (its
     * origin, {@code kafka:<topic>-<partition>@<offset>}). An event id is printable ASCII, so no event id is ever
     * such a key: a refusal is never in an outcome's place, by key, on a compacted topic; one key per refused record.
     */
    static String refusalKey(ResultOutbox.QueuedResult refusal) {
        return refusal.eventId() + "\trefused\t" + refusal.origin();
    }

    /** The result's {@link #KIND}. */
    String kind(ResultOutbox.QueuedResult result) {
        if (result.chargeId() == null) {
            return "refusal";
        }
        if (result.status() == 202) {
            return "accepted";
        }
        if (result.status() == 200) {
            // A later state of a charge answered 202: the charge as GET /v1/charges/{id} shows it.
            ChargeStatus state;
            try {
                state = ChargeStatus.fromColumn(json.readTree(result.body()).path("status").asText(null));
            } catch (JsonProcessingException | IllegalStateException e) {
                state = null;
            }
            if (state == ChargeStatus.REQUIRES_ACTION || state == ChargeStatus.PROCESSING) {
                return "accepted";
            }
        }
        return "outcome";
    }

    /** The result as published: the HTTP answer's body embedded as it is (not re-serialized: byte for byte). */
    String envelope(ResultOutbox.QueuedResult result) {
        Map<String, Object> head = new LinkedHashMap<>();
        head.put("event_id", result.eventId());
        head.put("charge_id", result.chargeId());
        head.put("status", result.status());
        try {
            String fields = json.writeValueAsString(head);
            return fields.substring(0, fields.length() - 1) + ",\"body\":" + result.body() + "}";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

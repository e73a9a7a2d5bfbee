package dev.chargeonce.kafka;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
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
import org.jboss.logging.Logger;

/**
 * Publishes the queued results of Kafka commands to the results topic, then marks them sent (see
 * {@link ResultOutbox#relay}): at least once, never lost. Every instance runs one; each pass locks the rows it
 * publishes, so two relays publish different rows. A result is published again only when a relay died (or the
 * broker's acknowledgement never came) between the send and the commit that marks it sent.
 *
 * <p>The record: key = the event id (a command's results land on one partition), value = the envelope
 * {@code {"event_id", "charge_id", "status", "body"}} where {@code body} is the HTTP answer's body byte for byte
 * and {@code status} its status; the charge id, status and event id also as headers. Consumers deduplicate by
 * {@code charge_id} (null only for a 422: the event id was first used with another body; its dedup is the event id
 * with the refused record's origin).
 */
@ApplicationScoped
public class ResultRelay {

    private static final Logger LOG = Logger.getLogger(ResultRelay.class);
    static final String CHARGE_ID = "chargeonce-charge-id";
    static final String STATUS = "chargeonce-status";
    static final String EVENT_ID = "chargeonce-event-id";

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
        for (ResultOutbox.QueuedResult result : results) {
            ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(config.resultsTopic(),
                    result.eventId().getBytes(StandardCharsets.UTF_8), envelope(result).getBytes(StandardCharsets.UTF_8));
            if (result.chargeId() != null) {
                record.headers().add(CHARGE_ID, result.chargeId().getBytes(StandardCharsets.UTF_8));
            }
            record.headers().add(STATUS, Integer.toString(result.status()).getBytes(StandardCharsets.UTF_8));
            record.headers().add(EVENT_ID, result.eventId().getBytes(StandardCharsets.UTF_8));
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

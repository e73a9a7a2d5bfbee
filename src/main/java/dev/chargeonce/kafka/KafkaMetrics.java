package dev.chargeonce.kafka;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The Kafka ingress' meters (tags are fixed words only). Registered when the ingress is enabled, every series at 0.
 * <ul>
 *   <li>{@code chargeonce_kafka_records_total{result}}: records handled: {@code charged} (claimed here),
 *       {@code redelivered} (the same record again: a crash or a rebalance between its row's commit and its offset's),
 *       {@code duplicate} (another record with an event id that has a row: the producer sent the command again),
 *       {@code refused} (the event id was first used with another body: a 422 result), {@code dead_lettered},
 *       {@code retried} (not claimable now: database down, shutting down, Stripe's circuit open for a new key)</li>
 *   <li>{@code chargeonce_kafka_redeliveries_total}, {@code chargeonce_kafka_duplicates_suppressed_total} (both
 *       kinds of a command seen again without a second charge), {@code chargeonce_kafka_dead_letters_total}</li>
 *   <li>{@code chargeonce_kafka_handed_to_recovery_total}: commands acknowledged while their charge is still
 *       unknown (their row is finished by the recovery worker, whose finish queues the result)</li>
 *   <li>{@code chargeonce_kafka_offset_rewinds_total}: partitions read again because the database's stored offset
 *       was behind (commits lost by a failover or a restore)</li>
 *   <li>{@code chargeonce_kafka_consumer_lag} (records behind the end of the assigned partitions, this instance),
 *       {@code chargeonce_kafka_outbox_backlog} (results not yet published, all instances),
 *       {@code chargeonce_kafka_outbox_oldest_age_seconds}, {@code chargeonce_kafka_results_published_total}</li>
 * </ul>
 */
@ApplicationScoped
public class KafkaMetrics {

    static final String[] RESULTS = {"charged", "redelivered", "duplicate", "refused", "dead_lettered", "retried"};

    private final MeterRegistry registry;
    private final AtomicLong lag = new AtomicLong();
    private final AtomicLong backlog = new AtomicLong();
    private final AtomicLong topicRetentionRefused = new AtomicLong();
    private final AtomicReference<Double> oldest = new AtomicReference<>(0.0);
    private Counter redeliveries;
    private Counter duplicates;
    private Counter deadLetters;
    private Counter handedToRecovery;
    private Counter published;
    private Counter rewinds;

    KafkaMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    /** Registers every series (only when the ingress is enabled: a service without Kafka shows none of them). */
    void register() {
        for (String result : RESULTS) {
            registry.counter("chargeonce.kafka.records", "result", result);
        }
        redeliveries = registry.counter("chargeonce.kafka.redeliveries");
        duplicates = registry.counter("chargeonce.kafka.duplicates.suppressed");
        deadLetters = registry.counter("chargeonce.kafka.dead.letters");
        handedToRecovery = registry.counter("chargeonce.kafka.handed.to.recovery");
        published = registry.counter("chargeonce.kafka.results.published");
        rewinds = registry.counter("chargeonce.kafka.offset.rewinds");
        registry.gauge("chargeonce.kafka.consumer.lag", lag);
        registry.gauge("chargeonce.kafka.outbox.backlog", backlog);
        registry.gauge("chargeonce.kafka.commands.topic.refused", topicRetentionRefused);
        registry.gauge("chargeonce.kafka.outbox.oldest.age.seconds", oldest, AtomicReference::get);
    }

    void record(String result) {
        registry.counter("chargeonce.kafka.records", "result", result).increment();
        switch (result) {
            case "redelivered" -> redeliveries.increment();
            case "duplicate" -> duplicates.increment();
            case "dead_lettered" -> deadLetters.increment();
            default -> {
            }
        }
    }

    /**
     * 1 while the commands topic is not consumed because it can keep records as long as their rows live, or its
     * settings cannot be read.
     */
    void topicRetentionRefused(boolean refused) {
        topicRetentionRefused.set(refused ? 1 : 0);
    }

    void rewound() {
        rewinds.increment();
    }

    void handedToRecovery() {
        handedToRecovery.increment();
    }

    void published(int n) {
        published.increment(n);
    }

    void lag(long records) {
        lag.set(records);
    }

    void backlog(long rows, double oldestAgeSeconds) {
        backlog.set(rows);
        oldest.set(oldestAgeSeconds);
    }
}

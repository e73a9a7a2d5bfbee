package dev.chargeonce.kafka;

import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Kafka clients' settings. Those the guarantees rest on are fixed here, after the operator's extras:
 * offsets are committed by hand after the records' rows are committed (never auto-committed), a group starts at
 * the earliest record it never committed, and the producer waits for all in-sync replicas, idempotently.
 */
final class KafkaClients {

    /** What an operator's {@code chargeonce.kafka.client.*} may not change. */
    static final Set<String> FIXED = Set.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
            ConsumerConfig.ISOLATION_LEVEL_CONFIG, ProducerConfig.ACKS_CONFIG, ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
            ConsumerConfig.GROUP_ID_CONFIG, ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG);

    private KafkaClients() {
    }

    static Properties consumer(KafkaConfig config, String instance) {
        Properties p = common(config);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "chargeonce-commands-" + instance);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, config.groupId());
        // The offset is ours to commit, after the claim and the answer are committed: never on a timer.
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        // A group that never committed starts at the beginning: a command published before the first start is not skipped.
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // Commands of a producer's aborted transactions are not commands.
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(config.maxPollRecords()));
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, Long.toString(config.maxPollInterval().toMillis()));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return p;
    }

    static Properties producer(KafkaConfig config, String instance) {
        Properties p = common(config);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "chargeonce-results-" + instance);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, "5");
        // A relay pass holds its outbox rows locked while it waits: bounded, and the rows are published next time.
        p.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }

    /** For an admin client: reads the commands topic's settings ({@link TopicRetention}). */
    static Map<String, Object> admin(KafkaConfig config, String instance) {
        Map<String, Object> p = new java.util.HashMap<>();
        common(config).forEach((k, v) -> p.put(k.toString(), v));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "chargeonce-admin-" + instance);
        // Everything the consumer gets (security, config.providers for secrets in files): an admin client ignores the
        // consumer's own settings with a warning, and filtering by its known names would drop config.providers.*.
        return p;
    }

    private static Properties common(KafkaConfig config) {
        Properties p = new Properties();
        for (Map.Entry<String, String> extra : config.client().entrySet()) {
            if (!FIXED.contains(extra.getKey())) {
                p.put(extra.getKey(), extra.getValue());
            }
        }
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers());
        return p;
    }
}

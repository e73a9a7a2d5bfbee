package dev.chargeonce.testing;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** What the Kafka tests (and the Kafka chaos run) do with the broker: topics, produce, read a topic whole, offsets. */
public final class KafkaTestClients implements AutoCloseable {

    /** A record as read back: key and value as text, headers by name (the last of a name wins). */
    public record Message(int partition, long offset, String key, String value, Map<String, String> headers) {
    }

    private final String bootstrap;
    private final Admin admin;
    private final KafkaProducer<byte[], byte[]> producer;

    public KafkaTestClients(String bootstrap) {
        this.bootstrap = bootstrap;
        Properties a = new Properties();
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        this.admin = Admin.create(a);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        this.producer = new KafkaProducer<>(p);
    }

    public void createTopics(int partitions, String... topics) {
        List<NewTopic> created = new ArrayList<>();
        for (String topic : topics) {
            created.add(new NewTopic(topic, partitions, (short) 1));
        }
        try {
            admin.createTopics(created).all().get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("could not create " + List.of(topics), e);
        }
    }

    /** How many members the group has now. */
    public int members(String group) {
        try {
            return admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group).members().size();
        } catch (Exception e) {
            throw new IllegalStateException("could not describe group " + group, e);
        }
    }

    /** Creates {@code topic} with these topic settings (e.g. {@code retention.ms}). */
    public void createTopic(String topic, int partitions, Map<String, String> settings) {
        try {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(settings))).all().get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("could not create " + topic, e);
        }
    }

    /** Sets a topic setting, as {@code kafka-configs --alter} does. */
    public void setTopicConfig(String topic, String name, String value) {
        org.apache.kafka.common.config.ConfigResource resource =
                new org.apache.kafka.common.config.ConfigResource(org.apache.kafka.common.config.ConfigResource.Type.TOPIC, topic);
        try {
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new org.apache.kafka.clients.admin.AlterConfigOp(
                    new org.apache.kafka.clients.admin.ConfigEntry(name, value), org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET))))
                    .all().get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("could not set " + name + " of " + topic, e);
        }
    }

    /**
     * Deletes {@code topic} (its records and every group's offsets for it) and makes it again under the same name,
     * empty, once the broker has finished deleting it.
     */
    public void makeTopicAgain(String topic, int partitions) {
        try {
            admin.deleteTopics(List.of(topic)).all().get(60, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try {
                    admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
                    return;
                } catch (java.util.concurrent.ExecutionException e) {
                    if (!(e.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException) || System.nanoTime() > deadline) {
                        throw e;
                    }
                    Thread.sleep(200); // still being deleted
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException("could not make " + topic + " again", e);
        }
    }

    /** Produces and waits for the broker's acknowledgement. {@code key} null: a record without key. */
    public void send(String topic, Integer partition, String key, String value) {
        try {
            producer.send(new ProducerRecord<>(topic, partition, key == null ? null : key.getBytes(StandardCharsets.UTF_8),
                    value == null ? null : value.getBytes(StandardCharsets.UTF_8))).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("could not produce to " + topic, e);
        }
    }

    public void send(String topic, String key, String value) {
        send(topic, null, key, value);
    }

    /** Every record of the topic now, all partitions, from the beginning. */
    public List<Message> readAll(String topic) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<Message> messages = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(info -> new TopicPartition(topic, info.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (partitions.stream().anyMatch(tp -> consumer.position(tp, Duration.ofSeconds(30)) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("could not read " + topic + " to its end");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    Map<String, String> headers = new HashMap<>();
                    for (Header h : r.headers()) {
                        headers.put(h.key(), h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
                    }
                    messages.add(new Message(r.partition(), r.offset(), r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8),
                            r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8), headers));
                }
            }
        }
        return messages;
    }

    /** The group's committed offsets of the topic, by partition (absent: nothing committed there). */
    public Map<Integer, Long> committed(String group, String topic) {
        try {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            Map<Integer, Long> byPartition = new HashMap<>();
            offsets.forEach((tp, offset) -> {
                if (tp.topic().equals(topic) && offset != null) {
                    byPartition.put(tp.partition(), offset.offset());
                }
            });
            return byPartition;
        } catch (Exception e) {
            throw new IllegalStateException("could not read the offsets of group " + group, e);
        }
    }

    /**
     * Deletes the group and its committed offsets, as the broker does when the group stayed empty for longer than
     * {@code offsets.retention.minutes} (the group must have no member left).
     */
    public void forgetGroup(String group) {
        try {
            admin.deleteConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("could not delete group " + group, e);
        }
    }

    /** The sum of the group's committed offsets over the topic (how many records it acknowledged). */
    public long committedTotal(String group, String topic) {
        return committed(group, topic).values().stream().mapToLong(Long::longValue).sum();
    }

    /** How many records the topic holds (sum of its partitions' end offsets). */
    public long endTotal(String topic) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(info -> new TopicPartition(topic, info.partition())).toList();
            return consumer.endOffsets(partitions, Duration.ofSeconds(30)).values().stream().mapToLong(Long::longValue).sum();
        }
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(5));
        admin.close(Duration.ofSeconds(5));
    }
}

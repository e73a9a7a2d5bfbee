package dev.chargeonce.kafka;

import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Poison records to the dead-letter topic: the record as it came (key, value, headers) and, in headers, why and
 * where it came from. Sent and acknowledged by the broker before the record's offset is committed, so a poison
 * record is never just dropped (it may land twice after a crash in between).
 */
@ApplicationScoped
public class DeadLetters {

    static final String REASON = "chargeonce-dead-letter-reason";
    static final String TOPIC = "chargeonce-original-topic";
    static final String PARTITION = "chargeonce-original-partition";
    static final String OFFSET = "chargeonce-original-offset";

    private final KafkaProducers producers;
    private final KafkaConfig config;

    DeadLetters(KafkaProducers producers, KafkaConfig config) {
        this.producers = producers;
        this.config = config;
    }

    void send(ConsumerRecord<byte[], byte[]> record, String reason) throws Exception {
        ProducerRecord<byte[], byte[]> letter = new ProducerRecord<>(config.deadLetterTopic(), record.key(), record.value());
        for (Header header : record.headers()) {
            letter.headers().add(header);
        }
        letter.headers().add(REASON, reason.getBytes(StandardCharsets.UTF_8));
        letter.headers().add(TOPIC, record.topic().getBytes(StandardCharsets.UTF_8));
        letter.headers().add(PARTITION, Integer.toString(record.partition()).getBytes(StandardCharsets.UTF_8));
        letter.headers().add(OFFSET, Long.toString(record.offset()).getBytes(StandardCharsets.UTF_8));
        producers.get().send(letter).get(30, TimeUnit.SECONDS);
    }
}

package dev.chargeonce.kafka;

import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;

/** The one producer of an instance (results and dead letters), made on first use: never while Kafka is off. */
@ApplicationScoped
public class KafkaProducers {

    private final KafkaConfig config;
    private volatile Producer<byte[], byte[]> producer;

    KafkaProducers(KafkaConfig config) {
        this.config = config;
    }

    Producer<byte[], byte[]> get() {
        Producer<byte[], byte[]> p = producer;
        if (p == null) {
            synchronized (this) {
                if (producer == null) {
                    producer = new KafkaProducer<>(KafkaClients.producer(config, Instances.NAME));
                }
                p = producer;
            }
        }
        return p;
    }

    synchronized void close() {
        if (producer != null) {
            producer.close(Duration.ofSeconds(5));
            producer = null;
        }
    }
}

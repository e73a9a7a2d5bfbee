package dev.chargeonce.kafka;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.Map;

/**
 * The optional Kafka ingress ({@code chargeonce.kafka.*}). Off by default: nothing connects to a broker, no thread
 * starts. Extra Kafka client properties (TLS, SASL, …) are passed as {@code chargeonce.kafka.client."<property>"}
 * to the consumer and the producer alike (see {@link KafkaClients}).
 */
@ConfigMapping(prefix = "chargeonce.kafka")
public interface KafkaConfig {

    /** Whether this instance consumes charge commands and relays their results. */
    @WithDefault("false")
    boolean enabled();

    /** The brokers, {@code host:port,…}. */
    @WithDefault("localhost:9092")
    String bootstrapServers();

    /** Where the charge commands are: key = event id (the Idempotency-Key), value = the POST /v1/charges body. */
    @WithDefault("charge-commands")
    String commandsTopic();

    /** Where each command's result goes (through the outbox): key = event id, value = the result envelope. */
    @WithDefault("charge-results")
    String resultsTopic();

    /** Where poison records go (no or invalid event id, a body POST /v1/charges would refuse with 400). */
    @WithDefault("charge-commands-dlt")
    String deadLetterTopic();

    /** The consumer group: all instances share it, so that each command is handled by one of them at a time. */
    @WithDefault("chargeonce")
    String groupId();

    /**
     * The client identity commands are charged under: the {@code client_id} of their rows, the scope of their
     * event ids (as an API key's client is the scope of its Idempotency-Keys) and part of their Stripe keys.
     */
    @WithDefault("kafka")
    String clientId();

    /**
     * Records one poll hands over, per instance. Each is at most one charge drive (a lease at most): the poll loop
     * stops starting records after half of max.poll.interval.ms and comes back for the rest.
     */
    @WithDefault("20")
    int maxPollRecords();

    /** The consumer's {@code max.poll.interval.ms}: a member that does not poll within it is taken out of the group. */
    @WithDefault("5m")
    Duration maxPollInterval();

    /** How long a partition waits before a record that could not be claimed (database down, shutting down) is tried again. */
    @WithDefault("1s")
    Duration retryBackoff();

    /** How often the relay looks for results to publish (it goes on at once while there are more). */
    @WithDefault("200ms")
    Duration relayInterval();

    /** Results one relay pass publishes at most. */
    @WithDefault("200")
    int relayBatchSize();

    /** How long a published result stays in the outbox (what a late redelivery finds already queued). */
    @WithDefault("7d")
    Duration outboxRetention();

    /** How often the consumer lag and the outbox backlog are measured for the gauges. */
    @WithDefault("5s")
    Duration gaugeInterval();

    /**
     * How often the consumer reads the commands topic's retention again ({@link TopicRetention}): a topic that keeps
     * records longer than their rows live is not consumed.
     */
    @WithDefault("5m")
    Duration topicCheckInterval();

    /**
     * Testing only: how long the consumer waits, after the records' rows are committed, before it commits their
     * offsets. Widens the crash window between the database commit and the offset commit so that a process test can
     * kill the service inside it. 0 (the default) in production.
     */
    @WithDefault("0s")
    Duration offsetCommitDelay();

    /**
     * Further Kafka client properties for the consumer and the producer, e.g.
     * {@code chargeonce.kafka.client."security.protocol"=SASL_SSL}. Those that carry the guarantees (offsets,
     * acknowledgements, idempotence) are set by the service and cannot be overridden here.
     */
    Map<String, String> client();
}

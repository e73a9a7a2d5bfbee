package dev.chargeonce.kafka;

import dev.chargeonce.idempotency.ConsumedOffsets;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.recovery.RecoveryConfig;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.interceptor.Interceptor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.jboss.logging.Logger;

/**
 * Consumes charge commands (at least once) and commits each record's offset only after its row is committed
 * (see {@link CommandHandler} for when that is): a crash before the offset commit redelivers the record, whose
 * claim finds the row and charges nothing more; a crash before the row's commit leaves the offset where it was.
 *
 * <p>A plain {@link KafkaConsumer} on one thread of its own, started only when {@code chargeonce.kafka.enabled}:
 * the records of one poll are handled partition by partition in parallel (in order within a partition), then the
 * offsets after the last acknowledged record of each partition are committed synchronously, before the next poll.
 * So a rebalance, which runs inside {@code poll}, never revokes a partition with a record half-handled here: what
 * was handled is committed, what was not is the next owner's. A record that could not be claimed now (database down,
 * shutting down) stops its partition there; the partition is sought back to it and paused for
 * {@code chargeonce.kafka.retry-backoff}, and the other partitions go on.
 *
 * <p>This class starts and stops the ingress, runs the poll loop and follows rebalances and the commands topic's
 * settings; {@link CommandBatches} handles and commits the records of a poll, and {@link AssignedPartitions} keeps
 * what the consumer knows of its partitions (their offsets in the database, their pauses).
 */
@ApplicationScoped
public class CommandConsumer {

    private static final Logger LOG = Logger.getLogger(CommandConsumer.class);

    private final KafkaConfig config;
    private final RecoveryConfig recovery;
    private final KafkaMetrics metrics;
    private final ResultRelay relay;
    private final KafkaProducers producers;
    private final ConsumedOffsets offsets;
    private final IdempotencyConfig keys;
    private final CommandBatches batches;
    private volatile boolean running;
    private Thread thread;
    /** Whether the commands topic is refused ({@link #checkTopic}): its partitions stay paused. */
    private volatile boolean topicRefused = true;

    CommandConsumer(KafkaConfig config, RecoveryConfig recovery, CommandHandler handler, DeadLetters deadLetters,
                    KafkaMetrics metrics, ResultRelay relay, KafkaProducers producers, ConsumedOffsets offsets,
                    IdempotencyConfig keys) {
        this.offsets = offsets;
        this.keys = keys;
        this.config = config;
        this.recovery = recovery;
        this.metrics = metrics;
        this.relay = relay;
        this.producers = producers;
        this.batches = new CommandBatches(config, handler, deadLetters, metrics, () -> running);
    }

    void start(@Observes StartupEvent event) {
        if (!config.enabled()) {
            return;
        }
        List<String> problems = problems(config, recovery.enabled());
        if (!problems.isEmpty()) {
            throw new IllegalStateException("refusing to start, the configuration breaks exactly-once:\n  - "
                    + String.join("\n  - ", problems));
        }
        metrics.register();
        running = true;
        thread = Thread.ofPlatform().name("kafka-commands").daemon().start(this::run);
        relay.start();
        LOG.infof("Kafka ingress on: commands from %s (group %s, charged as client %s), results to %s, dead letters to %s",
                config.commandsTopic(), config.groupId(), config.clientId(), config.resultsTopic(), config.deadLetterTopic());
    }

    /** What the ingress refuses to start with. */
    static List<String> problems(KafkaConfig config, boolean recoveryEnabled) {
        List<String> problems = new ArrayList<>();
        if (!recoveryEnabled) {
            problems.add("chargeonce.kafka.enabled=true needs chargeonce.recovery.enabled=true: a command whose charge is"
                    + " still unknown is acknowledged once its row is committed, and the recovery worker is who finishes"
                    + " that row (and queues its result).");
        }
        for (String key : config.client().keySet()) {
            if (KafkaClients.FIXED.contains(key)) {
                problems.add("chargeonce.kafka.client.\"" + key + "\" cannot be set: the ingress' guarantees rest on it"
                        + " (offsets committed after the rows, acks=all, idempotent producer).");
            }
        }
        if (config.clientId().isBlank()) {
            problems.add("chargeonce.kafka.client-id must name the client the commands are charged under.");
        }
        return problems;
    }

    /** First on shutdown: no new poll. The records in hand finish (or are refused: the admission closes) and commit. */
    void stopPolling(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE - 1) ShutdownEvent event) {
        running = false;
    }

    /** After the charges in flight had their grace: wait for the loop to commit and leave the group. */
    void awaitStop(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE + 1) ShutdownEvent event) {
        if (thread == null) {
            return;
        }
        try {
            thread.join(Duration.ofSeconds(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        relay.stop();
        producers.close();
    }

    private void run() {
        while (running) {
            try {
                consume();
            } catch (RuntimeException e) {
                LOG.errorf(e, "Kafka consumer failed; starting again in %s", config.retryBackoff());
                sleep(config.retryBackoff().toMillis());
            }
        }
    }

    /**
     * Reads the commands topic's settings and decides whether it may be consumed ({@link TopicRetention}). A topic
     * that can keep a record as long as its row lives is refused: every assigned partition is paused, and the
     * consumer keeps polling (it stays in the group, so the group's offsets do not expire meanwhile). Until a first
     * reading succeeds the topic counts as refused; a reading that fails later keeps the last one (a passing broker
     * error does not stop consumption, nor start it). Returns when to read them again: a refusal by the settings
     * is read again after {@code topic-check-interval} (an operator changes them), a first reading that failed after
     * {@code retry-backoff} (a broker starting, a missing ACL being granted).
     */
    private Duration checkTopic(KafkaConsumer<byte[], byte[]> consumer, AssignedPartitions partitions) {
        Optional<String> problem;
        try {
            problem = TopicRetention.problem(config.commandsTopic(),
                    TopicRetention.read(KafkaClients.admin(config, Instances.NAME), config.commandsTopic(), Duration.ofSeconds(10)),
                    keys.keptFor());
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (topicRefused) {
                // Unknown is not allowed: the gauge says the topic is not consumed (a missing ACL stays visible).
                metrics.topicRetentionRefused(true);
                LOG.warnf("not consuming yet: the settings of topic %s could not be read (%s; the consumer needs"
                        + " DescribeConfigs on it); again in %s", config.commandsTopic(), e.getMessage(), config.retryBackoff());
            } else {
                LOG.warnf("the settings of topic %s could not be read again (%s): going on with the last reading",
                        config.commandsTopic(), e.getMessage());
            }
            return topicRefused ? config.retryBackoff() : config.topicCheckInterval();
        }
        metrics.topicRetentionRefused(problem.isPresent());
        if (problem.isPresent()) {
            LOG.errorf("not consuming the commands topic: %s (read again in %s)", problem.get(), config.topicCheckInterval());
            topicRefused = true;
            consumer.pause(consumer.assignment());
        } else if (topicRefused) {
            topicRefused = false;
            List<TopicPartition> resumed = new ArrayList<>(consumer.assignment());
            resumed.removeIf(partitions::held);
            consumer.resume(resumed);
            LOG.infof("commands topic %s drops its records before their rows are purged: consuming", config.commandsTopic());
        }
        return config.topicCheckInterval();
    }

    private void consume() {
        // A consumer started again owns nothing yet: what the last one knew of its partitions goes with it, and the
        // topic's settings are read again before any record is.
        topicRefused = true;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(KafkaClients.consumer(config, Instances.NAME));
             ExecutorService workers = Executors.newVirtualThreadPerTaskExecutor()) {
            AssignedPartitions partitions = new AssignedPartitions(consumer, config, offsets, metrics);
            consumer.subscribe(List.of(config.commandsTopic()), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                    // Called inside poll(): every record handled so far was committed before it.
                    partitions.revoked(revoked);
                    LOG.infof("partitions revoked: %s", revoked);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                    LOG.infof("partitions assigned: %s", assigned);
                    if (topicRefused) {
                        consumer.pause(assigned); // resumed when the topic's settings allow it (checkTopic)
                    }
                    partitions.assigned(assigned);
                }
            });
            long nextGauge = 0;
            long nextTopicCheck = System.nanoTime();
            while (running) {
                if (System.nanoTime() - nextTopicCheck >= 0) {
                    nextTopicCheck = System.nanoTime() + checkTopic(consumer, partitions).toNanos();
                }
                if (!topicRefused) {
                    partitions.takeUpUnverified();
                    partitions.resumeDue();
                }
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    continue;
                }
                if (!records.isEmpty()) {
                    batches.handleAndCommit(consumer, partitions, records, workers);
                }
                if (System.nanoTime() - nextGauge > 0) {
                    partitions.verifyStoredOffsets();
                    measureLag(consumer);
                    nextGauge = System.nanoTime() + config.gaugeInterval().toNanos();
                }
            }
        }
    }

    private void measureLag(KafkaConsumer<byte[], byte[]> consumer) {
        long lag = 0;
        for (TopicPartition partition : consumer.assignment()) {
            lag += consumer.currentLag(partition).orElse(0);
        }
        metrics.lag(lag);
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

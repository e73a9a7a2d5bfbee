package dev.chargeonce.kafka;

import dev.chargeonce.idempotency.ConsumedOffsets;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.idempotency.IdempotencyKey;
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
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
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
 */
@ApplicationScoped
public class CommandConsumer {

    private static final Logger LOG = Logger.getLogger(CommandConsumer.class);

    private final KafkaConfig config;
    private final RecoveryConfig recovery;
    private final CommandHandler handler;
    private final DeadLetters deadLetters;
    private final KafkaMetrics metrics;
    private final ResultRelay relay;
    private final KafkaProducers producers;
    private volatile boolean running;
    private Thread thread;
    private final Map<TopicPartition, Long> pausedUntil = new HashMap<>();
    private final ConsumedOffsets offsets;
    /** Per assigned partition, the offset this consumer last stored in the database or found there (poll thread). */
    private final Map<TopicPartition, Long> storedNext = new HashMap<>();
    /** Assigned partitions not compared with the database yet (it could not be read): paused until they are. */
    private final Set<TopicPartition> unverified = new HashSet<>();
    private long nextVerifyAttempt;
    /** Whether the commands topic is refused ({@link #checkTopic}): its partitions stay paused. */
    private volatile boolean topicRefused = true;
    private final IdempotencyConfig keys;

    /**
     * The metadata of every offset this consumer commits to Kafka: the offset is in the database too. A committed
     * offset without it was committed by something else (a release before V1.12.0, an operator's
     * {@code kafka-consumer-groups --reset-offsets}): Kafka's offset is then the truth, and the database's is stale.
     */
    static final String STORED_IN_DATABASE = "chargeonce:stored-in-database";

    CommandConsumer(KafkaConfig config, RecoveryConfig recovery, CommandHandler handler, DeadLetters deadLetters,
                    KafkaMetrics metrics, ResultRelay relay, KafkaProducers producers, ConsumedOffsets offsets,
                    IdempotencyConfig keys) {
        this.offsets = offsets;
        this.keys = keys;
        this.config = config;
        this.recovery = recovery;
        this.handler = handler;
        this.deadLetters = deadLetters;
        this.metrics = metrics;
        this.relay = relay;
        this.producers = producers;
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
    private Duration checkTopic(KafkaConsumer<byte[], byte[]> consumer) {
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
            resumed.removeIf(partition -> pausedUntil.containsKey(partition) || unverified.contains(partition));
            consumer.resume(resumed);
            LOG.infof("commands topic %s drops its records before their rows are purged: consuming", config.commandsTopic());
        }
        return config.topicCheckInterval();
    }

    private void consume() {
        // A consumer started again owns nothing yet: what the last one knew of its partitions goes with it, and the
        // topic's settings are read again before any record is.
        topicRefused = true;
        pausedUntil.clear();
        storedNext.clear();
        unverified.clear();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(KafkaClients.consumer(config, Instances.NAME));
             ExecutorService partitions = Executors.newVirtualThreadPerTaskExecutor()) {
            consumer.subscribe(List.of(config.commandsTopic()), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                    // Called inside poll(): every record handled so far was committed before it.
                    pausedUntil.keySet().removeAll(revoked);
                    storedNext.keySet().removeAll(revoked);
                    unverified.removeAll(revoked);
                    LOG.infof("partitions revoked: %s", revoked);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                    LOG.infof("partitions assigned: %s", assigned);
                    if (topicRefused) {
                        consumer.pause(assigned); // resumed when the topic's settings allow it (checkTopic)
                    }
                    try {
                        takeUp(consumer, assigned);
                    } catch (RuntimeException e) {
                        // Not a reason to leave the group (a rebalance of every member): the partitions wait.
                        LOG.warnf("partitions %s not compared with the database (%s): paused until they are", assigned, e.getMessage());
                        consumer.pause(assigned);
                        unverified.addAll(assigned);
                    }
                }
            });
            long nextGauge = 0;
            long nextTopicCheck = System.nanoTime();
            while (running) {
                if (System.nanoTime() - nextTopicCheck >= 0) {
                    nextTopicCheck = System.nanoTime() + checkTopic(consumer).toNanos();
                }
                if (!topicRefused) {
                    takeUpUnverified(consumer);
                    resumeDue(consumer);
                }
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    continue;
                }
                if (!records.isEmpty()) {
                    handleAndCommit(consumer, records, partitions);
                }
                if (System.nanoTime() - nextGauge > 0) {
                    verifyStoredOffsets(consumer);
                    measureLag(consumer);
                    nextGauge = System.nanoTime() + config.gaugeInterval().toNanos();
                }
            }
        }
    }

    /** Where a partition's records stopped: the offset to commit (the next to handle), and for how long to pause. */
    private record Stop(TopicPartition partition, long first, long next, Duration pause, Set<IdempotencyKey> rowKeys) {
    }

    private void handleAndCommit(KafkaConsumer<byte[], byte[]> consumer, ConsumerRecords<byte[], byte[]> records,
                                 ExecutorService partitions) {
        // Start no record after half of max.poll.interval: the rest is handed back to the next poll (or owner).
        long deadline = System.nanoTime() + config.maxPollInterval().toNanos() / 2;
        List<Future<Stop>> work = new ArrayList<>();
        for (TopicPartition partition : records.partitions()) {
            List<ConsumerRecord<byte[], byte[]>> batch = records.records(partition);
            work.add(partitions.submit(() -> handlePartition(partition, batch, deadline)));
        }
        Map<TopicPartition, OffsetAndMetadata> commits = new HashMap<>();
        List<Stop> stops = new ArrayList<>();
        for (Future<Stop> future : work) {
            Stop stop;
            try {
                stop = future.get();
            } catch (Exception e) {
                throw new IllegalStateException("a partition's records could not be handled", e);
            }
            stops.add(stop);
            if (stop.next() > stop.first()) {
                commits.put(stop.partition(), new OffsetAndMetadata(stop.next(), STORED_IN_DATABASE));
            }
        }
        if (!commits.isEmpty() && !config.offsetCommitDelay().isZero()) {
            LOG.infof("holding the offset commit %s (chargeonce.kafka.offset-commit-delay): %s", config.offsetCommitDelay(), commits);
            sleep(config.offsetCommitDelay().toMillis());
        }
        Set<TopicPartition> sought = storeOffsets(consumer, commits, stops);
        if (!commits.isEmpty()) {
            try {
                consumer.commitSync(commits);
                LOG.debugf("offsets committed: %s", commits);
            } catch (CommitFailedException | RebalanceInProgressException e) {
                // Rebalanced meanwhile: the next owner reads these records again and finds their rows.
                LOG.warnf("offsets not committed (%s); the partitions' next owner gets the records again", e.getMessage());
            }
        }
        for (Stop stop : stops) {
            TopicPartition partition = stop.partition();
            long last = records.records(partition).getLast().offset();
            if (!sought.contains(partition) && stop.next() <= last && consumer.assignment().contains(partition)) {
                consumer.seek(partition, stop.next());
                if (stop.pause() != null) {
                    consumer.pause(List.of(partition));
                    pausedUntil.put(partition, System.nanoTime() + stop.pause().toNanos());
                }
            }
        }
    }

    /**
     * Takes up assigned partitions: where Kafka's committed offset is one this consumer stored in the database too
     * and the database's is behind it, the database lost the rows of the records between (a failover to a standby
     * that missed them, a restore), and they are read again from there. Throws when the database cannot say.
     */
    private void takeUp(KafkaConsumer<byte[], byte[]> consumer, Collection<TopicPartition> assigned) {
        if (assigned.isEmpty()) {
            return;
        }
        Map<Integer, Long> stored = offsets.stored(config.groupId(), config.commandsTopic());
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new HashSet<>(assigned));
        for (TopicPartition partition : assigned) {
            OffsetAndMetadata kafka = committed.get(partition);
            Long databaseNext = stored.get(partition.partition());
            OptionalLong from = readAgainFrom(databaseNext, kafka, () -> beginning(consumer, partition));
            if (from.isPresent()) {
                LOG.warnf("partition %s: the database's offset %d is behind Kafka's %d (commits lost by a failover or a"
                        + " restore): reading the records from %d again", partition, databaseNext, kafka.offset(), from.getAsLong());
                consumer.seek(partition, from.getAsLong());
                metrics.rewound();
            }
            boolean databaseCurrent = kafka == null || STORED_IN_DATABASE.equals(kafka.metadata());
            if (databaseNext != null && databaseCurrent) {
                storedNext.put(partition, databaseNext);
            } else {
                storedNext.remove(partition); // none, or stale: the next store writes over it
            }
        }
    }

    /**
     * Where to read a partition again from when it is taken up; empty: from Kafka's committed offset. Only an offset
     * this consumer committed (its metadata says it is in the database too) is compared: one committed by anything
     * else is newer than the database's by design, and reading from the database's would undo it.
     */
    static OptionalLong readAgainFrom(Long databaseNext, OffsetAndMetadata committed, java.util.function.LongSupplier beginning) {
        if (committed == null || !STORED_IN_DATABASE.equals(committed.metadata())) {
            return OptionalLong.empty();
        }
        if (databaseNext == null) {
            // This consumer stored offsets for the partition and the database has none: it lost them all (a restore
            // to before the first), and with them the rows of any record: all of them are read again.
            return OptionalLong.of(beginning.getAsLong());
        }
        return databaseNext < committed.offset() ? OptionalLong.of(databaseNext) : OptionalLong.empty();
    }

    /** The first offset the partition still has. */
    private static long beginning(KafkaConsumer<byte[], byte[]> consumer, TopicPartition partition) {
        return consumer.beginningOffsets(List.of(partition)).getOrDefault(partition, 0L);
    }

    /** Retries the comparison of partitions the database could not be read for, and resumes them once compared. */
    private void takeUpUnverified(KafkaConsumer<byte[], byte[]> consumer) {
        if (unverified.isEmpty() || System.nanoTime() - nextVerifyAttempt < 0) {
            return;
        }
        List<TopicPartition> waiting = new ArrayList<>(unverified);
        waiting.retainAll(consumer.assignment());
        try {
            takeUp(consumer, waiting);
        } catch (RuntimeException e) {
            nextVerifyAttempt = System.nanoTime() + config.retryBackoff().toNanos();
            return;
        }
        unverified.clear();
        waiting.removeIf(pausedUntil::containsKey);
        consumer.resume(waiting);
        LOG.infof("partitions %s compared with the database: resumed", waiting);
    }

    /**
     * Stores the offsets about to be committed in the database first, in a statement that also checks that the
     * rows of the records they acknowledge are there: a partition whose database offset fell behind what this
     * consumer stored there, or whose records' rows are missing (lost after the last store: a failover under the
     * batch), is read again from the database's offset instead; one whose offset could not be stored is read again
     * from its batch's first record (the claims find the rows).
     * Those are taken out of {@code commits}; returns the partitions sought here.
     */
    private Set<TopicPartition> storeOffsets(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, OffsetAndMetadata> commits,
                                             List<Stop> stops) {
        Set<TopicPartition> sought = new HashSet<>();
        for (Iterator<Map.Entry<TopicPartition, OffsetAndMetadata>> it = commits.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<TopicPartition, OffsetAndMetadata> commit = it.next();
            TopicPartition partition = commit.getKey();
            long next = commit.getValue().offset();
            Stop stop = stops.stream().filter(s -> s.partition().equals(partition)).findFirst().orElseThrow();
            try {
                ConsumedOffsets.Advance advance = offsets.advance(config.groupId(), partition.topic(), partition.partition(),
                        storedNext.get(partition), next, config.clientId(), stop.rowKeys());
                if (advance.stored()) {
                    storedNext.put(partition, next);
                    continue;
                }
                // From the database's offset, and never past this batch's first record (whose rows are missing).
                OptionalLong before = advance.before();
                rewind(consumer, partition, before.isPresent() && before.getAsLong() > stop.first() ? OptionalLong.of(stop.first()) : before);
            } catch (RuntimeException e) {
                long first = stop.first();
                LOG.warnf("offset of %s not stored (%s): its records from %d are read again in %s", partition, e.getMessage(),
                        first, config.retryBackoff());
                consumer.seek(partition, first);
                consumer.pause(List.of(partition));
                pausedUntil.put(partition, System.nanoTime() + config.retryBackoff().toNanos());
            }
            it.remove();
            sought.add(partition);
        }
        return sought;
    }

    /**
     * Between batches: a database that lost commits while this consumer kept its partitions (a failover without a
     * rebalance) shows offsets behind the ones stored here; those partitions are read again from there.
     */
    private void verifyStoredOffsets(KafkaConsumer<byte[], byte[]> consumer) {
        if (storedNext.isEmpty()) {
            return;
        }
        Map<Integer, Long> stored;
        try {
            stored = offsets.stored(config.groupId(), config.commandsTopic());
        } catch (RuntimeException e) {
            return; // the database is down: the next look compares
        }
        for (TopicPartition partition : consumer.assignment()) {
            Long mine = storedNext.get(partition);
            Long database = stored.get(partition.partition());
            if (mine != null && (database == null || database < mine)) {
                rewind(consumer, partition, database == null ? OptionalLong.empty() : OptionalLong.of(database));
            }
        }
    }

    /**
     * Reads a partition again from the database's offset; when it has none, it lost every offset stored for the
     * partition (by any owner): from the partition's beginning.
     */
    private void rewind(KafkaConsumer<byte[], byte[]> consumer, TopicPartition partition, OptionalLong databaseNext) {
        long from = databaseNext.isPresent() ? databaseNext.getAsLong() : beginning(consumer, partition);
        LOG.warnf("partition %s: the database's offset is behind what this consumer stored there (%s; commits lost by a"
                + " failover or a restore): reading the records from %d again", partition, storedNext.get(partition), from);
        consumer.seek(partition, from);
        if (databaseNext.isPresent()) {
            storedNext.put(partition, from);
        } else {
            storedNext.remove(partition);
        }
        metrics.rewound();
    }

    private Stop handlePartition(TopicPartition partition, List<ConsumerRecord<byte[], byte[]>> batch, long deadline) {
        long first = batch.getFirst().offset();
        long next = first;
        Set<IdempotencyKey> rows = new HashSet<>(); // the keys of the rows the acknowledged records have: checked when their offset is stored
        for (ConsumerRecord<byte[], byte[]> record : batch) {
            if (!running || System.nanoTime() - deadline > 0) {
                return new Stop(partition, first, next, null, rows);
            }
            CommandHandler.Decision decision;
            try {
                decision = handler.handle(new CommandHandler.Command(record.topic(), record.partition(), record.offset(),
                        record.key(), record.value()));
            } catch (RuntimeException e) {
                LOG.errorf(e, "command at %s-%d@%d failed; tried again in %s", record.topic(), record.partition(),
                        record.offset(), config.retryBackoff());
                decision = new CommandHandler.Decision.Retry("error", config.retryBackoff());
            }
            switch (decision) {
                case CommandHandler.Decision.Ack ack -> {
                    metrics.record(ack.result());
                    rows.add(handler.rowKey(record.key()));
                }
                case CommandHandler.Decision.DeadLetter letter -> {
                    try {
                        deadLetters.send(record, letter.reason());
                    } catch (Exception e) {
                        LOG.warnf("dead letter for %s-%d@%d not sent (%s); tried again", record.topic(), record.partition(),
                                record.offset(), e.getMessage());
                        metrics.record("retried");
                        return new Stop(partition, first, next, config.retryBackoff(), rows);
                    }
                    LOG.warnf("poison record %s-%d@%d sent to %s: %s", record.topic(), record.partition(), record.offset(),
                            config.deadLetterTopic(), letter.reason());
                    metrics.record("dead_lettered");
                }
                case CommandHandler.Decision.Retry retry -> {
                    LOG.infof("command at %s-%d@%d not claimable now (%s); tried again in %s", record.topic(),
                            record.partition(), record.offset(), retry.reason(), retry.after());
                    metrics.record("retried");
                    return new Stop(partition, first, next, retry.after(), rows);
                }
            }
            next = record.offset() + 1;
        }
        return new Stop(partition, first, next, null, rows);
    }

    private void resumeDue(KafkaConsumer<byte[], byte[]> consumer) {
        if (pausedUntil.isEmpty()) {
            return;
        }
        long now = System.nanoTime();
        List<TopicPartition> due = new ArrayList<>();
        pausedUntil.forEach((partition, until) -> {
            if (now - until >= 0) {
                due.add(partition);
            }
        });
        due.forEach(pausedUntil::remove);
        due.retainAll(consumer.assignment());
        if (!due.isEmpty()) {
            consumer.resume(due);
        }
    }

    private void measureLag(KafkaConsumer<byte[], byte[]> consumer) {
        long lag = 0;
        for (TopicPartition partition : consumer.assignment()) {
            lag += consumer.currentLag(partition).orElse(0);
        }
        metrics.lag(lag);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package dev.chargeonce.kafka;

import dev.chargeonce.idempotency.IdempotencyKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.jboss.logging.Logger;

/**
 * The records of one poll: handled partition by partition in parallel (in order within a partition, each through
 * {@link CommandHandler}), then the offsets after the last acknowledged record of each partition stored in the
 * database and committed to Kafka, before the next poll. A partition whose records stopped early (a record not
 * claimable now, a dead letter not sent, the poll's time up, shutting down) is sought back to the first record not
 * handled, and paused when the stop asks for it.
 */
final class CommandBatches {

    /** The consumer's category: these lines are the consumer's, wherever the code that writes them lives. */
    private static final Logger LOG = Logger.getLogger(CommandConsumer.class);

    /** Where a partition's records stopped: the offset to commit (the next to handle), and for how long to pause. */
    record Stop(TopicPartition partition, long first, long next, Duration pause, Set<IdempotencyKey> rowKeys) {
    }

    private final KafkaConfig config;
    private final CommandHandler handler;
    private final DeadLetters deadLetters;
    private final KafkaMetrics metrics;
    /** False once the service shuts down: no record is started then. */
    private final BooleanSupplier running;

    CommandBatches(KafkaConfig config, CommandHandler handler, DeadLetters deadLetters, KafkaMetrics metrics,
                   BooleanSupplier running) {
        this.config = config;
        this.handler = handler;
        this.deadLetters = deadLetters;
        this.metrics = metrics;
        this.running = running;
    }

    /** Handles one poll's records, one virtual thread of {@code workers} per partition, and commits what was handled. */
    void handleAndCommit(KafkaConsumer<byte[], byte[]> consumer, AssignedPartitions assigned,
                         ConsumerRecords<byte[], byte[]> records, ExecutorService workers) {
        // Start no record after half of max.poll.interval: the rest is handed back to the next poll (or owner).
        long deadline = System.nanoTime() + config.maxPollInterval().toNanos() / 2;
        List<Future<Stop>> work = new ArrayList<>();
        for (TopicPartition partition : records.partitions()) {
            List<ConsumerRecord<byte[], byte[]>> batch = records.records(partition);
            work.add(workers.submit(() -> handlePartition(partition, batch, deadline)));
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
                commits.put(stop.partition(), new OffsetAndMetadata(stop.next(), AssignedPartitions.STORED_IN_DATABASE));
            }
        }
        if (!commits.isEmpty() && !config.offsetCommitDelay().isZero()) {
            LOG.infof("holding the offset commit %s (chargeonce.kafka.offset-commit-delay): %s", config.offsetCommitDelay(), commits);
            CommandConsumer.sleep(config.offsetCommitDelay().toMillis());
        }
        Set<TopicPartition> sought = assigned.storeOffsets(commits, stops);
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
                    assigned.pause(partition, stop.pause());
                }
            }
        }
    }

    private Stop handlePartition(TopicPartition partition, List<ConsumerRecord<byte[], byte[]>> batch, long deadline) {
        long first = batch.getFirst().offset();
        long next = first;
        Set<IdempotencyKey> rows = new HashSet<>(); // the keys of the rows the acknowledged records have: checked when their offset is stored
        for (ConsumerRecord<byte[], byte[]> record : batch) {
            if (!running.getAsBoolean() || System.nanoTime() - deadline > 0) {
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
}

package dev.chargeonce.kafka;

import dev.chargeonce.idempotency.ConsumedOffsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.jboss.logging.Logger;

/**
 * What one {@link KafkaConsumer} of {@link CommandConsumer} knows of the partitions assigned to it, and where their
 * offsets stand: the offset it last stored in the database or found there, which partitions are paused until when,
 * which could not be compared with the database yet. Takes partitions up when they are assigned, stores offsets in
 * the database before Kafka's commit, and reads a partition again from the database's offset when the database lost
 * commits (a failover, a restore). The poll thread's only: none of it is shared.
 */
final class AssignedPartitions {

    /** The consumer's category: these lines are the consumer's, wherever the code that writes them lives. */
    private static final Logger LOG = Logger.getLogger(CommandConsumer.class);

    /**
     * The metadata of every offset this consumer commits to Kafka: the offset is in the database too. A committed
     * offset without it was committed by something else (a release before V1.12.0, an operator's
     * {@code kafka-consumer-groups --reset-offsets}): Kafka's offset is then the truth, and the database's is stale.
     */
    static final String STORED_IN_DATABASE = "chargeonce:stored-in-database";

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final KafkaConfig config;
    private final ConsumedOffsets offsets;
    private final KafkaMetrics metrics;
    private final Map<TopicPartition, Long> pausedUntil = new HashMap<>();
    /** Per assigned partition, the offset this consumer last stored in the database or found there. */
    private final Map<TopicPartition, Long> storedNext = new HashMap<>();
    /** Assigned partitions not compared with the database yet (it could not be read): paused until they are. */
    private final Set<TopicPartition> unverified = new HashSet<>();
    private long nextVerifyAttempt;

    AssignedPartitions(KafkaConsumer<byte[], byte[]> consumer, KafkaConfig config, ConsumedOffsets offsets, KafkaMetrics metrics) {
        this.consumer = consumer;
        this.config = config;
        this.offsets = offsets;
        this.metrics = metrics;
    }

    // ---- a rebalance ---------------------------------------------------------------------------------------------

    /** Partitions taken away (inside {@code poll}): what was known of them goes. */
    void revoked(Collection<TopicPartition> revoked) {
        pausedUntil.keySet().removeAll(revoked);
        storedNext.keySet().removeAll(revoked);
        unverified.removeAll(revoked);
    }

    /**
     * Partitions given (inside {@code poll}): taken up ({@link #takeUp}), or, when the database cannot say, paused
     * until they can be ({@link #takeUpUnverified}). Not a reason to leave the group (a rebalance of every member).
     */
    void assigned(Collection<TopicPartition> assigned) {
        try {
            takeUp(assigned);
        } catch (RuntimeException e) {
            LOG.warnf("partitions %s not compared with the database (%s): paused until they are", assigned, e.getMessage());
            consumer.pause(assigned);
            unverified.addAll(assigned);
        }
    }

    /**
     * Takes up assigned partitions: where Kafka's committed offset is one this consumer stored in the database too
     * and the database's is behind it, the database lost the rows of the records between (a failover to a standby
     * that missed them, a restore), and they are read again from there. Throws when the database cannot say.
     */
    private void takeUp(Collection<TopicPartition> assigned) {
        if (assigned.isEmpty()) {
            return;
        }
        Map<Integer, Long> stored = offsets.stored(config.groupId(), config.commandsTopic());
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new HashSet<>(assigned));
        for (TopicPartition partition : assigned) {
            OffsetAndMetadata kafka = committed.get(partition);
            Long databaseNext = stored.get(partition.partition());
            OptionalLong from = readAgainFrom(databaseNext, kafka, () -> beginning(partition));
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
    static OptionalLong readAgainFrom(Long databaseNext, OffsetAndMetadata committed, LongSupplier beginning) {
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
    private long beginning(TopicPartition partition) {
        return consumer.beginningOffsets(List.of(partition)).getOrDefault(partition, 0L);
    }

    /** Retries the comparison of partitions the database could not be read for, and resumes them once compared. */
    void takeUpUnverified() {
        if (unverified.isEmpty() || System.nanoTime() - nextVerifyAttempt < 0) {
            return;
        }
        List<TopicPartition> waiting = new ArrayList<>(unverified);
        waiting.retainAll(consumer.assignment());
        try {
            takeUp(waiting);
        } catch (RuntimeException e) {
            nextVerifyAttempt = System.nanoTime() + config.retryBackoff().toNanos();
            return;
        }
        unverified.clear();
        waiting.removeIf(pausedUntil::containsKey);
        consumer.resume(waiting);
        LOG.infof("partitions %s compared with the database: resumed", waiting);
    }

    // ---- pauses --------------------------------------------------------------------------------------------------

    /** Pauses a partition for {@code pause}: {@link #resumeDue} resumes it once that is over. */
    void pause(TopicPartition partition, Duration pause) {
        consumer.pause(List.of(partition));
        pausedUntil.put(partition, System.nanoTime() + pause.toNanos());
    }

    /** Paused for a while, or not compared with the database yet: not to be resumed with the others. */
    boolean held(TopicPartition partition) {
        return pausedUntil.containsKey(partition) || unverified.contains(partition);
    }

    /** Resumes the partitions whose pause is over. */
    void resumeDue() {
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

    // ---- offsets in the database ---------------------------------------------------------------------------------

    /**
     * Stores the offsets about to be committed in the database first, in a statement that also checks that the
     * rows of the records they acknowledge are there: a partition whose database offset fell behind what this
     * consumer stored there, or whose records' rows are missing (lost after the last store: a failover under the
     * batch), is read again from the database's offset instead; one whose offset could not be stored is read again
     * from its batch's first record (the claims find the rows).
     * Those are taken out of {@code commits}; returns the partitions sought here.
     */
    Set<TopicPartition> storeOffsets(Map<TopicPartition, OffsetAndMetadata> commits, List<CommandBatches.Stop> stops) {
        Set<TopicPartition> sought = new HashSet<>();
        for (Iterator<Map.Entry<TopicPartition, OffsetAndMetadata>> it = commits.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<TopicPartition, OffsetAndMetadata> commit = it.next();
            TopicPartition partition = commit.getKey();
            long next = commit.getValue().offset();
            CommandBatches.Stop stop = stops.stream().filter(s -> s.partition().equals(partition)).findFirst().orElseThrow();
            try {
                ConsumedOffsets.Advance advance = offsets.advance(config.groupId(), partition.topic(), partition.partition(),
                        storedNext.get(partition), next, config.clientId(), stop.rowKeys());
                if (advance.stored()) {
                    storedNext.put(partition, next);
                    continue;
                }
                // From the database's offset, and never past this batch's first record (whose rows are missing).
                OptionalLong before = advance.before();
                rewind(partition, before.isPresent() && before.getAsLong() > stop.first() ? OptionalLong.of(stop.first()) : before);
            } catch (RuntimeException e) {
                long first = stop.first();
                LOG.warnf("offset of %s not stored (%s): its records from %d are read again in %s", partition, e.getMessage(),
                        first, config.retryBackoff());
                consumer.seek(partition, first);
                pause(partition, config.retryBackoff());
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
    void verifyStoredOffsets() {
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
                rewind(partition, database == null ? OptionalLong.empty() : OptionalLong.of(database));
            }
        }
    }

    /**
     * Reads a partition again from the database's offset; when it has none, it lost every offset stored for the
     * partition (by any owner): from the partition's beginning.
     */
    private void rewind(TopicPartition partition, OptionalLong databaseNext) {
        long from = databaseNext.isPresent() ? databaseNext.getAsLong() : beginning(partition);
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
}

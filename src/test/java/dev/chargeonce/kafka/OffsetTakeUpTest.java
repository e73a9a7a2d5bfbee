package dev.chargeonce.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.junit.jupiter.api.Test;

/**
 * When a partition is taken up, the database's offset is compared with Kafka's only when Kafka's was committed by
 * this consumer (stored in the database too): anything else that moved Kafka's offset (an earlier release, an
 * operator's reset) is newer than the database's by design, and reading from the database's would undo it.
 */
class OffsetTakeUpTest {

    static OffsetAndMetadata ours(long offset) {
        return new OffsetAndMetadata(offset, AssignedPartitions.STORED_IN_DATABASE);
    }

    @Test
    void aDatabaseBehindAnOffsetThisConsumerCommittedLostTheRowsBetween() {
        assertEquals(OptionalLong.of(3), AssignedPartitions.readAgainFrom(3L, ours(6), () -> 0));
    }

    @Test
    void aDatabaseLevelWithOrAheadOfKafkaLostNothing() {
        assertEquals(OptionalLong.empty(), AssignedPartitions.readAgainFrom(6L, ours(6), () -> 0));
        assertEquals(OptionalLong.empty(), AssignedPartitions.readAgainFrom(9L, ours(6), () -> 0), "Kafka's commit failed after the database's");
    }

    @Test
    void anOffsetSomethingElseCommittedIsTheTruth() {
        assertEquals(OptionalLong.empty(), AssignedPartitions.readAgainFrom(3L, new OffsetAndMetadata(600), () -> 0), "an operator's reset forward");
        assertEquals(OptionalLong.empty(), AssignedPartitions.readAgainFrom(3L, new OffsetAndMetadata(600, ""), () -> 0), "an earlier release");
    }

    @Test
    void aDatabaseWithoutTheOffsetsThisConsumerStoredLostThemAllAndEveryRecordIsReadAgain() {
        assertEquals(OptionalLong.of(2), AssignedPartitions.readAgainFrom(null, ours(6), () -> 2), "from the partition's beginning");
    }

    @Test
    void nothingToCompareWithIsNothingToReadAgain() {
        assertEquals(OptionalLong.empty(), AssignedPartitions.readAgainFrom(null, new OffsetAndMetadata(6), () -> 0), "an earlier release's");
        // A new group, or Kafka forgot the group's offsets (expired, deleted, a topic made again): from the earliest
        // record. The database's offset is not trusted then: for a topic made again under the same name it would
        // skip new records. TopicRetention keeps every record from outliving its row, so reading again is safe.
        assertEquals(OptionalLong.empty(), AssignedPartitions.readAgainFrom(3L, null, () -> 0), "a new group");
    }
}

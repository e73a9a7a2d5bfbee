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
        return new OffsetAndMetadata(offset, CommandConsumer.STORED_IN_DATABASE);
    }

    @Test
    void aDatabaseBehindAnOffsetThisConsumerCommittedLostTheRowsBetween() {
        assertEquals(OptionalLong.of(3), CommandConsumer.readAgainFrom(3L, ours(6), () -> 0));
    }

    @Test
    void aDatabaseLevelWithOrAheadOfKafkaLostNothing() {
        assertEquals(OptionalLong.empty(), CommandConsumer.readAgainFrom(6L, ours(6), () -> 0));
        assertEquals(OptionalLong.empty(), CommandConsumer.readAgainFrom(9L, ours(6), () -> 0), "Kafka's commit failed after the database's");
    }

    @Test
    void anOffsetSomethingElseCommittedIsTheTruth() {
        assertEquals(OptionalLong.empty(), CommandConsumer.readAgainFrom(3L, new OffsetAndMetadata(600), () -> 0), "an operator's reset forward");
        assertEquals(OptionalLong.empty(), CommandConsumer.readAgainFrom(3L, new OffsetAndMetadata(600, ""), () -> 0), "an earlier release");
    }

    @Test
    void aDatabaseWithoutTheOffsetsThisConsumerStoredLostThemAllAndEveryRecordIsReadAgain() {
        assertEquals(OptionalLong.of(2), CommandConsumer.readAgainFrom(null, ours(6), () -> 2), "from the partition's beginning");
    }

    @Test
    void nothingToCompareWithIsNothingToReadAgain() {
        assertEquals(OptionalLong.empty(), CommandConsumer.readAgainFrom(null, new OffsetAndMetadata(6), () -> 0), "an earlier release's");
        assertEquals(OptionalLong.empty(), CommandConsumer.readAgainFrom(null, null, () -> 0), "a new group");
    }

    /**
     * Kafka forgets a group's offsets (an empty group for longer than the broker's {@code offsets.retention.minutes},
     * a group deleted by hand): the group would start from {@code earliest} and claim again commands whose rows the
     * key retention has purged, new charges. The database keeps the group's offsets: they are where it goes on.
     */
    @Test
    void offsetsKafkaForgotAreTakenFromTheDatabase() {
        assertEquals(OptionalLong.of(3), CommandConsumer.readAgainFrom(3L, null, () -> 0));
    }
}

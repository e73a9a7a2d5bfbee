package dev.chargeonce.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * A commands topic must drop every record before its row is purged (a record read again then would be charged
 * again): retention.ms + segment.ms (+ how far in the future a CreateTime record may be stamped) + a day for the
 * broker to get round to it, below the key retention; no compaction.
 */
class TopicRetentionTest {

    static final Duration ROWS_KEPT = Duration.ofDays(180);

    /** What a Kafka 4.x broker reports for a topic without overrides, plus {@code overrides}. */
    static Optional<String> problem(String... overrides) {
        Map<String, String> topic = new HashMap<>(Map.of("cleanup.policy", "delete", "retention.ms", days(7), "segment.ms", days(7),
                "message.timestamp.type", "CreateTime", "message.timestamp.after.max.ms", "3600000"));
        for (int i = 0; i < overrides.length; i += 2) {
            topic.put(overrides[i], overrides[i + 1]);
        }
        return TopicRetention.problem("commands", topic, ROWS_KEPT);
    }

    static String days(long d) {
        return Long.toString(Duration.ofDays(d).toMillis());
    }

    @Test
    void kafkasDefaultsDropRecordsLongBeforeTheRows() {
        assertEquals(Optional.empty(), problem(), "7 days + a 7-day segment + 1 hour");
        assertEquals(Optional.empty(), problem("retention.ms", days(30), "segment.ms", days(1)));
        assertEquals(Optional.empty(), problem("retention.ms", days(171), "segment.ms", days(7)), "178 days + 1 hour + a day's margin");
    }

    @Test
    void aTopicThatKeepsRecordsForEverIsRefused() {
        assertTrue(problem("retention.ms", "-1").orElseThrow().contains("retention.ms=-1"));
    }

    @Test
    void aRecordThatCanOutliveItsRowIsRefusedCountingTheSegmentAndTheMargin() {
        assertTrue(problem("retention.ms", days(180)).isPresent(), "as long as the rows");
        assertTrue(problem("retention.ms", days(175)).isPresent(), "a segment is deleted whole: its first record lives retention + segment");
        assertTrue(problem("retention.ms", days(172), "segment.ms", days(7)).isPresent(), "179 days: within the day the broker may take");
    }

    @Test
    void aProducersClockCountsUnlessTheBrokerStampsTheRecords() {
        assertTrue(problem("message.timestamp.after.max.ms", Long.toString(Long.MAX_VALUE)).orElseThrow().contains("for ever"),
                "a record stamped far in the future keeps its segment (the default before Kafka 3.6/4.0)");
        Map<String, String> noBound = new HashMap<>(Map.of("retention.ms", days(7), "segment.ms", days(7)));
        assertTrue(TopicRetention.problem("commands", noBound, ROWS_KEPT).isPresent(), "a broker that does not say: no bound");
        assertEquals(Optional.empty(), problem("message.timestamp.type", "LogAppendTime",
                "message.timestamp.after.max.ms", Long.toString(Long.MAX_VALUE)), "the broker's clock stamps the records");
    }

    @Test
    void aCompactedTopicIsRefused() {
        assertTrue(problem("cleanup.policy", "compact").orElseThrow().contains("compact"));
        assertTrue(problem("cleanup.policy", "compact,delete", "retention.ms", days(1)).isPresent());
    }
}

package dev.chargeonce.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A commands topic must drop every record before its row is purged (a record read again then would be charged again). */
class TopicRetentionTest {

    static final Duration ROWS_KEPT = Duration.ofDays(180);

    static Optional<String> problem(Map<String, String> topic) {
        return TopicRetention.problem("commands", topic, ROWS_KEPT);
    }

    static String days(long d) {
        return Long.toString(Duration.ofDays(d).toMillis());
    }

    @Test
    void kafkasDefaultsDropRecordsLongBeforeTheRows() {
        assertEquals(Optional.empty(), problem(Map.of()), "7 days + a 7-day segment");
        assertEquals(Optional.empty(), problem(Map.of("cleanup.policy", "delete", "retention.ms", days(30), "segment.ms", days(1))));
        assertEquals(Optional.empty(), problem(Map.of("retention.ms", days(172), "segment.ms", days(7))), "179 days in all");
    }

    @Test
    void aTopicThatKeepsRecordsForEverIsRefused() {
        assertTrue(problem(Map.of("retention.ms", "-1")).orElseThrow().contains("retention.ms=-1"));
    }

    @Test
    void aRecordThatCanOutliveItsRowIsRefusedCountingTheSegment() {
        assertTrue(problem(Map.of("retention.ms", days(180))).isPresent(), "as long as the rows");
        assertTrue(problem(Map.of("retention.ms", days(175), "segment.ms", days(7))).isPresent(),
                "a segment is deleted whole: its first record lives retention + segment");
    }

    @Test
    void aCompactedTopicIsRefused() {
        assertTrue(problem(Map.of("cleanup.policy", "compact")).orElseThrow().contains("compact"));
        assertTrue(problem(Map.of("cleanup.policy", "compact,delete", "retention.ms", days(1))).isPresent());
    }
}

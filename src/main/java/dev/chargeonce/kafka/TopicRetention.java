package dev.chargeonce.kafka;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;

/**
 * A command record must not outlive its row. A group reads a partition from its earliest record when Kafka has no
 * offset for it (a new group, an empty group's offsets expired after the broker's {@code offsets.retention.minutes},
 * a group deleted by hand, a topic made again): a record read again whose row the key retention already purged
 * would be claimed again, and charged again once Stripe has forgotten its key. So the commands topic must drop every
 * record before the service drops its row: {@code retention.ms} plus {@code segment.ms} (Kafka deletes whole
 * segments, so a record lives up to both) shorter than the key retention, and no compaction (a compacted topic keeps
 * the last record of every key for ever). The consumer does not consume a topic that breaks this; it says why.
 *
 * <p>Why not resume from the database's offsets instead: a topic deleted and made again under the same name has no
 * Kafka offsets either, and an old offset would skip its first records (lost commands); telling the two apart needs
 * the topic's id stored with the offsets (not done: see README, "Kafka ingress").
 */
final class TopicRetention {

    private static final long KAFKA_DEFAULT_RETENTION_MS = TimeUnit.DAYS.toMillis(7);
    private static final long KAFKA_DEFAULT_SEGMENT_MS = TimeUnit.DAYS.toMillis(7);

    private TopicRetention() {
    }

    /**
     * Time the broker may take past a record's retention to delete it: its retention check runs every
     * {@code log.retention.check.interval.ms} (5 minutes by default), tiered storage deletes remote segments later
     * still. A margin of a day covers both.
     */
    static final Duration DELETION_MARGIN = Duration.ofDays(1);

    /** What is wrong with the topic's settings ({@code topicConfig}: its effective configuration), if anything. */
    static Optional<String> problem(String topic, Map<String, String> topicConfig, Duration keysKeptFor) {
        String policy = topicConfig.getOrDefault("cleanup.policy", "delete");
        if (policy.contains("compact")) {
            return Optional.of("topic " + topic + " has cleanup.policy=" + policy + ": a compacted topic keeps the last"
                    + " record of every key for ever, longer than the rows (kept " + keysKeptFor + "); a record read"
                    + " again after its row is purged would be charged again. Use cleanup.policy=delete.");
        }
        long retention = parse(topicConfig.get("retention.ms"), KAFKA_DEFAULT_RETENTION_MS);
        if (retention < 0) {
            return Optional.of("topic " + topic + " has retention.ms=" + retention + " (records kept for ever), longer"
                    + " than the rows (kept " + keysKeptFor + "); a record read again after its row is purged would be"
                    + " charged again. Set retention.ms + segment.ms below " + budget(keysKeptFor) + ".");
        }
        long segment = parse(topicConfig.get("segment.ms"), KAFKA_DEFAULT_SEGMENT_MS);
        // A segment goes when its newest record is older than retention.ms, by the records' timestamps: with
        // CreateTime, a producer may stamp a record up to message.timestamp.after.max.ms in the future.
        boolean createTime = !"LogAppendTime".equals(topicConfig.getOrDefault("message.timestamp.type", "CreateTime"));
        long future = createTime ? Math.max(0, parse(topicConfig.get("message.timestamp.after.max.ms"), Long.MAX_VALUE)) : 0;
        long lives = saturatingAdd(saturatingAdd(retention, segment), future);
        if (saturatingAdd(lives, DELETION_MARGIN.toMillis()) > keysKeptFor.toMillis()) {
            return Optional.of("topic " + topic + " may keep a record up to retention.ms + segment.ms"
                    + (createTime ? " + message.timestamp.after.max.ms (CreateTime)" : "") + " = "
                    + (lives == Long.MAX_VALUE ? "for ever" : Duration.ofMillis(lives).toString())
                    + ", too close to how long the rows are kept (" + keysKeptFor + "); a record read again after its"
                    + " row is purged would be charged again. Keep that sum below " + budget(keysKeptFor)
                    + " (or use message.timestamp.type=LogAppendTime).");
        }
        return Optional.empty();
    }

    private static Duration budget(Duration keysKeptFor) {
        return keysKeptFor.minus(DELETION_MARGIN);
    }

    private static long saturatingAdd(long a, long b) {
        long sum = a + b;
        return ((a ^ sum) & (b ^ sum)) < 0 ? Long.MAX_VALUE : sum;
    }

    /** The topic's effective configuration (its overrides and the broker's defaults), read from the broker. */
    static Map<String, String> read(Map<String, Object> adminConfig, String topic, Duration timeout) throws Exception {
        Admin admin = Admin.create(adminConfig);
        try {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config config = admin.describeConfigs(List.of(resource)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS).get(resource);
            return config.entries().stream().filter(e -> e.value() != null)
                    .collect(Collectors.toMap(ConfigEntry::name, ConfigEntry::value, (a, b) -> a));
        } finally {
            admin.close(Duration.ZERO); // never waits for a call still pending (shutdown must not hang here)
        }
    }

    private static long parse(String value, long otherwise) {
        try {
            return value == null ? otherwise : Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            return otherwise;
        }
    }
}

package dev.chargeonce.idempotency;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Every statement on {@code kafka_offsets}: the Kafka ingress' offsets, stored on the primary after the rows of the
 * records before them are committed and before the offsets are committed to Kafka. The database loses them only
 * together with those rows (one write-ahead log, replayed in order), so an offset found behind what a consumer
 * stored says exactly which records lost their rows. The Kafka package decides what to do about it; it owns no SQL.
 */
@ApplicationScoped
public class ConsumedOffsets {

    private static final String STORED = "SELECT partition, next_offset FROM kafka_offsets WHERE group_id = ? AND topic = ?";

    /**
     * Stores the partition's next offset unless the database holds less than the consumer stored last (the rows
     * before it were lost since), or lacks a row of a record the offset acknowledges (lost after the last store);
     * returns what the database held before, and whether it stored.
     */
    private static final String ADVANCE = """
            WITH prev AS (
                SELECT next_offset FROM kafka_offsets WHERE group_id = ? AND topic = ? AND partition = ? FOR UPDATE),
            rows_there AS (
                SELECT count(DISTINCT k.key_no) AS n
                  FROM unnest(?::text[], ?::int[]) AS k(identity, key_no)
                  JOIN stripe_intents s ON s.stripe_identity = k.identity AND s.client_id = ?),
            stored AS (
                INSERT INTO kafka_offsets (group_id, topic, partition, next_offset)
                SELECT ?, ?, ?, ? WHERE coalesce((SELECT next_offset FROM prev), -1) >= ?
                                    AND (SELECT n FROM rows_there) = ?
                ON CONFLICT (group_id, topic, partition)
                DO UPDATE SET next_offset = EXCLUDED.next_offset, updated_at = statement_timestamp()
                RETURNING 1)
            SELECT (SELECT next_offset FROM prev) AS before, EXISTS (SELECT 1 FROM stored) AS stored
            """;

    private final AgroalDataSource primary;
    private final KeyIdentities identities;

    ConsumedOffsets(AgroalDataSource primary, KeyIdentities identities) {
        this.primary = primary;
        this.identities = identities;
    }

    /** The next offsets the database has for the group's partitions of {@code topic}, by partition. */
    public Map<Integer, Long> stored(String group, String topic) {
        Map<Integer, Long> stored = new HashMap<>();
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(STORED)) {
            ps.setString(1, group);
            ps.setString(2, topic);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    stored.put(rs.getInt(1), rs.getLong(2));
                }
            }
            return stored;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /**
     * What {@link #advance} found.
     *
     * @param stored whether {@code next} is stored now
     * @param before the database's offset before (empty: it had none)
     */
    public record Advance(boolean stored, OptionalLong before) {
    }

    /**
     * Stores {@code next} as the partition's next offset, unless the database has less than {@code expected} (what
     * this consumer stored, or found, last; null when it knows of nothing) or lacks the row of one of the keys
     * {@code rowKeys} (of the records {@code next} acknowledges, under {@code clientId}): then it stores
     * nothing, and what it has is where the lost records start.
     */
    public Advance advance(String group, String topic, int partition, Long expected, long next, String clientId,
                           java.util.Set<IdempotencyKey> rowKeys) {
        // Each key's row under any identity it may have; counted by key (the keys that have a row), not by row.
        java.util.List<String> rowIdentities = new java.util.ArrayList<>();
        java.util.List<Integer> keyNumbers = new java.util.ArrayList<>();
        int keyNo = 0;
        for (IdempotencyKey key : rowKeys) {
            for (String identity : identities.lookup(Operation.CHARGE, clientId, key)) {
                rowIdentities.add(identity);
                keyNumbers.add(keyNo);
            }
            keyNo++;
        }
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(ADVANCE)) {
            ps.setString(1, group);
            ps.setString(2, topic);
            ps.setInt(3, partition);
            ps.setArray(4, c.createArrayOf("text", rowIdentities.toArray()));
            ps.setArray(5, c.createArrayOf("int4", keyNumbers.toArray()));
            ps.setString(6, clientId);
            ps.setString(7, group);
            ps.setString(8, topic);
            ps.setInt(9, partition);
            ps.setLong(10, next);
            ps.setLong(11, expected == null ? -1 : expected);
            ps.setInt(12, rowKeys.size());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long before = rs.getLong(1);
                OptionalLong held = rs.wasNull() ? OptionalLong.empty() : OptionalLong.of(before);
                return new Advance(rs.getBoolean(2), held);
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }
}

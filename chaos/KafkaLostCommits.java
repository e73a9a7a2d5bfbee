package chaos;

import static chaos.Harness.log;

import dev.chargeonce.testing.KafkaTestClients;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;

/**
 * Lost commits on the Kafka path: what a failover to an asynchronous standby (or a restore) leaves of the commands'
 * last commits. The harness owns the database, so it makes that state itself, every 4-9 s while the chaos runs: for
 * one partition of the commands topic (one time in four: every partition), the rows of the last 1-3 commands whose
 * offsets were stored, with every row of a record at or after theirs (records read since the last store), the 422s
 * queued for records there, and those rows' results, queued or sent, disappear, and the database's stored offset
 * goes back to the first lost record, in one transaction. Kafka's committed offset stays where the consumers put it
 * (at or behind the database's: they store there first). A partition with no row before its stored offset yet (the
 * group is slow under the kills) but rows of records read since loses those, its offset staying where it is: a
 * failover between their commits and the offset's next store ("under a batch").
 *
 * <p>Only a consistent suffix by offset goes. A consumer stores a partition's offset once the rows of every record
 * before it are committed and reads on from there, so the state right after a store has the rows of the records
 * before that offset and none claimed since: the loss keeps every row of a record before the new stored offset and
 * takes every one at or after it. The group's offsets are locked for the transaction (a consumer storing one
 * meanwhile waits, as it would across the failover); the rows' DELETE waits for a finish that holds one, so its
 * queued result is seen and taken too.
 *
 * <p>What was lost (event ids, charge ids, whether the result had been published) is kept for the audit
 * ({@link #audit}), and every loss is written to {@code lost-commits.log}.
 */
final class KafkaLostCommits implements Runnable {

    /** A command whose row a loss took; {@code acknowledged}: its record was before the stored offset. */
    record LostCommand(String eventId, String chargeId, String status, int partition, long offset, boolean acknowledged,
                       boolean resultPublished) {
    }

    /** One loss: per partition the stored offset before and after, and Kafka's committed offset then. */
    record Loss(long atMillis, boolean allPartitions, Map<Integer, long[]> offsets, List<LostCommand> commands,
                List<String> refusals) {
    }

    private final String jdbc;
    private final String group;
    private final String topic;
    private final String client;
    private final KafkaTestClients kafka;
    private final Random random;
    private final Path logFile;
    final AtomicBoolean stop = new AtomicBoolean();
    final List<Loss> losses = Collections.synchronizedList(new ArrayList<>());
    /** Switches that failed (a statement the loss could not run): each is a violation of the run, not of the service. */
    final List<String> failures = Collections.synchronizedList(new ArrayList<>());

    KafkaLostCommits(String jdbc, String group, String topic, String client, KafkaTestClients kafka, Random random, Path logFile) {
        this.jdbc = jdbc;
        this.group = group;
        this.topic = topic;
        this.client = client;
        this.kafka = kafka;
        this.random = random;
        this.logFile = logFile;
    }

    int count() {
        return losses.size();
    }

    @Override
    public void run() {
        while (!stop.get()) {
            boolean lost;
            try {
                lost = loseOnce();
            } catch (RuntimeException e) {
                failures.add("lost commit: " + e);
                lost = true;
            }
            // Not yet (nothing stored, rows locked by a claim): again soon; after a loss, the next in 4-9 s.
            long pause = lost ? 4_000 + random.nextInt(5_000) : 1_000;
            for (long until = System.currentTimeMillis() + pause; !stop.get() && System.currentTimeMillis() < until; ) {
                Harness.sleep(100);
            }
        }
    }

    /** One loss; false when there was nothing to lose yet or the rows were busy (tried again shortly). */
    boolean loseOnce() {
        // Kafka's offsets before the loss: the consumers commit there only after the database, so these are at or
        // behind the database's stored offsets, and the loss leaves them alone.
        Map<Integer, Long> kafkaCommitted = kafka.committed(group, topic);
        try (Connection c = DriverManager.getConnection(jdbc, "postgres", "postgres")) {
            c.setAutoCommit(false);
            try {
                Loss loss = lose(c, kafkaCommitted);
                if (loss == null) {
                    c.rollback();
                    return false;
                }
                c.commit();
                losses.add(loss);
                record(loss);
                return true;
            } catch (SQLException e) {
                c.rollback();
                // 55P03 lock_timeout, 40P01 deadlock: a claim or a finish held the rows; the loss comes a bit later.
                if ("55P03".equals(e.getSQLState()) || "40P01".equals(e.getSQLState())) {
                    return false;
                }
                throw e;
            }
        } catch (SQLException e) {
            failures.add("lost commit: " + e.getMessage());
            return true;
        }
    }

    private Loss lose(Connection c, Map<Integer, Long> kafkaCommitted) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SET LOCAL lock_timeout = '5s'")) {
            ps.execute();
        }
        Map<Integer, Long> stored = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT partition, next_offset FROM kafka_offsets WHERE group_id = ? AND topic = ? ORDER BY partition FOR UPDATE")) {
            ps.setString(1, group);
            ps.setString(2, topic);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    stored.put(rs.getInt(1), rs.getLong(2));
                }
            }
        }
        List<Integer> partitions = new ArrayList<>(stored.keySet());
        Collections.shuffle(partitions, random);
        boolean all = random.nextInt(4) == 0;
        Map<Integer, long[]> offsets = new TreeMap<>();
        List<LostCommand> commands = new ArrayList<>();
        List<String> refusals = new ArrayList<>();
        for (int partition : partitions) {
            long storedNext = stored.get(partition);
            Long from = lossStart(c, partition, storedNext, 1 + random.nextInt(3));
            if (from == null && readSince(c, partition, storedNext)) {
                // No row before the stored offset (the group is slow under the kills), but rows of records read since:
                // a failover between their commits and the next store loses them and leaves the offset where it is.
                from = storedNext;
            }
            if (from == null) {
                continue;
            }
            commands.addAll(deleteRows(c, partition, from, storedNext));
            refusals.addAll(deleteRefusals(c, partition, from));
            try (PreparedStatement ps = c.prepareStatement(
                    "UPDATE kafka_offsets SET next_offset = ? WHERE group_id = ? AND topic = ? AND partition = ?")) {
                ps.setLong(1, from);
                ps.setString(2, group);
                ps.setString(3, topic);
                ps.setInt(4, partition);
                ps.executeUpdate();
            }
            offsets.put(partition, new long[]{storedNext, from, kafkaCommitted.getOrDefault(partition, -1L)});
            if (!all) {
                break;
            }
        }
        return offsets.isEmpty() ? null : new Loss(System.currentTimeMillis(), all, offsets, commands, refusals);
    }

    /**
     * Where the loss starts on a partition: the record of the {@code n}-th last command whose row's record is before
     * the stored offset (fewer when it has fewer); null when it has none.
     */
    private Long lossStart(Connection c, int partition, long storedNext, int n) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT min(o) FROM (SELECT split_part(origin, '@', 2)::bigint AS o"
                + " FROM stripe_intents WHERE client_id = ? AND origin LIKE ? AND split_part(origin, '@', 2)::bigint < ?"
                + " ORDER BY o DESC LIMIT ?) last")) {
            ps.setString(1, client);
            ps.setString(2, originPrefix(partition) + "%");
            ps.setLong(3, storedNext);
            ps.setInt(4, n);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long from = rs.getLong(1);
                return rs.wasNull() ? null : from;
            }
        }
    }

    /** Whether the partition has rows of records at or after its stored offset (read, the offset not stored yet). */
    private boolean readSince(Connection c, int partition, long storedNext) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT EXISTS (SELECT 1 FROM stripe_intents WHERE client_id = ?"
                + " AND origin LIKE ? AND split_part(origin, '@', 2)::bigint >= ?)")) {
            ps.setString(1, client);
            ps.setString(2, originPrefix(partition) + "%");
            ps.setLong(3, storedNext);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    /** Every row of a record at or after {@code from} on the partition, and its results queued or sent. */
    private List<LostCommand> deleteRows(Connection c, int partition, long from, long storedNext) throws SQLException {
        List<String[]> rows = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("DELETE FROM stripe_intents WHERE client_id = ? AND origin LIKE ?"
                + " AND split_part(origin, '@', 2)::bigint >= ? RETURNING id, idempotency_key, status, split_part(origin, '@', 2)")) {
            ps.setString(1, client);
            ps.setString(2, originPrefix(partition) + "%");
            ps.setLong(3, from);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new String[]{rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)});
                }
            }
        }
        // After the rows' DELETE, which waited for any finish holding them: a result that finish queued is seen here.
        Map<String, Boolean> published = new TreeMap<>();
        try (PreparedStatement ps = c.prepareStatement("DELETE FROM kafka_outbox WHERE client_id = ? AND charge_id = ANY (?)"
                + " RETURNING charge_id, sent_at IS NOT NULL")) {
            ps.setString(1, client);
            ps.setArray(2, c.createArrayOf("text", rows.stream().map(r -> r[0]).toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    published.merge(rs.getString(1), rs.getBoolean(2), Boolean::logicalOr);
                }
            }
        }
        List<LostCommand> lost = new ArrayList<>();
        for (String[] r : rows) {
            long offset = Long.parseLong(r[3]);
            lost.add(new LostCommand(r[1], r[0], r[2], partition, offset, offset < storedNext, published.getOrDefault(r[0], false)));
        }
        return lost;
    }

    /** The 422s queued for records at or after {@code from} (another body under a known event id). */
    private List<String> deleteRefusals(Connection c, int partition, long from) throws SQLException {
        List<String> refused = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("DELETE FROM kafka_outbox WHERE client_id = ? AND charge_id IS NULL"
                + " AND origin LIKE ? AND split_part(origin, '@', 2)::bigint >= ? RETURNING event_id")) {
            ps.setString(1, client);
            ps.setString(2, originPrefix(partition) + "%");
            ps.setLong(3, from);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    refused.add(rs.getString(1));
                }
            }
        }
        return refused;
    }

    /** Every command a loss took, by event id (a command lost twice is there once, its losses in order). */
    Map<String, List<LostCommand>> lostByEvent() {
        Map<String, List<LostCommand>> byEvent = new TreeMap<>();
        synchronized (losses) {
            losses.forEach(loss -> loss.commands().forEach(l -> byEvent.computeIfAbsent(l.eventId(), k -> new ArrayList<>()).add(l)));
        }
        return byEvent;
    }

    /**
     * The audit of what the losses took, once the group caught up: each lost command read again and finished, its
     * row back under the charge id it was lost with, and that charge id the only one the results topic names for it
     * (results published before the loss and after it alike). {@code rows}: event id → {charge id, status, ...};
     * {@code chargeIdsOfEvent}: the charge ids of the results published under each event id.
     */
    void audit(Map<String, String[]> rows, Map<String, Set<String>> chargeIdsOfEvent, BiConsumer<Boolean, String> check) {
        lostByEvent().forEach((event, lost) -> {
            String[] row = rows.get(event);
            LostCommand first = lost.get(0);
            check.accept(row != null, event + ": its row lost (p" + first.partition() + "@" + first.offset() + ") and never made again");
            for (LostCommand l : lost) {
                check.accept(l.chargeId().equals(first.chargeId()), event + ": lost as " + first.chargeId() + ", later as " + l.chargeId());
            }
            if (row != null) {
                check.accept(row[0].equals(first.chargeId()), event + ": lost as charge " + first.chargeId() + ", back as " + row[0]);
                check.accept(row[1].equals("completed") || row[1].equals("failed"), event + ": lost, back but " + row[1]);
            }
            Set<String> named = chargeIdsOfEvent.getOrDefault(event, Set.of());
            check.accept(named.equals(Set.of(first.chargeId())), event + ": lost as charge " + first.chargeId()
                    + ", the results topic names " + named);
        });
    }

    /** The report's line: the losses and what they took. */
    String summary() {
        List<Loss> all = List.copyOf(losses);
        List<LostCommand> commands = all.stream().flatMap(l -> l.commands().stream()).toList();
        return "lost commits: " + all.size() + " (" + all.stream().filter(l -> !l.allPartitions()).count() + " of one partition, "
                + all.stream().filter(Loss::allPartitions).count() + " of every partition; "
                + all.stream().mapToLong(l -> l.offsets().values().stream().filter(o -> o[1] < o[0]).count()).sum()
                + " partitions' stored offsets moved back, "
                + all.stream().mapToLong(l -> l.offsets().values().stream().filter(o -> o[1] == o[0]).count()).sum()
                + " losses under a batch: only rows read after the stored offset), "
                + commands.size() + " commands lost with them (" + lostByEvent().size() + " distinct; "
                + commands.stream().filter(LostCommand::acknowledged).count() + " acknowledged, "
                + commands.stream().filter(l -> !l.acknowledged()).count() + " read after the stored offset; "
                + commands.stream().filter(LostCommand::resultPublished).count() + " whose result had been published), "
                + all.stream().mapToInt(l -> l.refusals().size()).sum() + " refusals lost";
    }

    /** The origin of a row a record of the partition claimed ({@code CommandHandler.Command#origin}), up to the offset. */
    private String originPrefix(int partition) {
        return "kafka:" + topic + "-" + partition + "@";
    }

    private void record(Loss loss) {
        StringBuilder line = new StringBuilder(String.format("[%tT] lost commit %d (%s):", loss.atMillis(), losses.size(),
                loss.allPartitions() ? "every partition" : "one partition"));
        loss.offsets().forEach((p, o) -> line.append(String.format(" p%d stored %d -> %d (Kafka's committed %d);", p, o[0], o[1], o[2])));
        line.append(' ').append(loss.commands().size()).append(" rows");
        log(line.toString());
        for (LostCommand l : loss.commands()) {
            line.append(String.format("%n    %s %s %s p%d@%d %s%s", l.eventId(), l.chargeId(), l.status(), l.partition(), l.offset(),
                    l.acknowledged() ? "acknowledged" : "in flight", l.resultPublished() ? ", result published" : ""));
        }
        loss.refusals().forEach(e -> line.append(String.format("%n    refusal of %s", e)));
        try {
            Files.writeString(logFile, line + System.lineSeparator(), StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            failures.add("could not write " + logFile + ": " + e.getMessage());
        }
    }
}

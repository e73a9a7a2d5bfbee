package dev.chargeonce.testing;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * A real streaming standby of a PostgreSQL the tests started ({@link TestPostgres}), on its own port: the lagging read
 * replica ({@link TestReplica}) and the standby a failover promotes ({@code KafkaFailoverIT}) are both made here.
 *
 * <p>zonky ships only {@code initdb}, {@code pg_ctl} and {@code postgres} (no {@code pg_basebackup}), so the base
 * backup is taken with the low-level API of PostgreSQL 14: {@code pg_start_backup} in one session, a file copy of
 * the primary's data directory, {@code pg_stop_backup} in the same session, whose label file becomes the copy's
 * {@code backup_label}. A physical replication slot, created first, keeps every WAL segment the standby needs.
 * The copy is made by this JVM's user, exactly like zonky's own {@code initdb} output (as root, zonky runs the
 * server in a user namespace: files owned by the invoking user are the server's own), and started through zonky,
 * which skips {@code initdb} because {@code postgresql.conf} is there.
 *
 * <p>The standby streams from {@code replicationPort}: the primary's own port, or a {@link TcpProxy} in front of it
 * that a test cuts so the standby misses the commits that follow (what an asynchronous standby promoted by a
 * failover has lost).
 */
public final class StreamingStandby implements AutoCloseable {

    /** Copied as empty directories (PostgreSQL docs, "Making a Base Backup Using the Low Level API"). */
    private static final Set<String> EMPTIED_DIRECTORIES = Set.of("pg_wal", "pg_replslot", "pg_dynshmem", "pg_notify",
            "pg_serial", "pg_snapshots", "pg_stat_tmp", "pg_subtrans");
    /** Files of the running primary (or of zonky) that must not reach the standby. */
    private static final Set<String> SKIPPED_FILES = Set.of("postmaster.pid", "postmaster.opts", "epg-lock",
            "backup_label", "tablespace_map", "standby.signal", "recovery.signal");

    private final EmbeddedPostgres server;
    private final Path dataDirectory;
    private final int primaryPort;

    private StreamingStandby(EmbeddedPostgres server, Path dataDirectory, int primaryPort) {
        this.server = server;
        this.dataDirectory = dataDirectory;
        this.primaryPort = primaryPort;
    }

    /**
     * Takes a base backup of the primary on {@code primaryPort} and starts it as a hot standby streaming through
     * {@code replicationPort} from slot {@code slot} (made, or made again), replaying every commit {@code applyDelay}
     * late; returns once it has replayed what the primary had written.
     */
    public static StreamingStandby start(int primaryPort, int replicationPort, String slot, Duration applyDelay) {
        Path dataDirectory = null;
        try {
            dataDirectory = Files.createTempDirectory("chargeonce-standby-");
            baseBackupInto(primaryPort, slot, dataDirectory);
            String settings = """

                    # --- StreamingStandby: a streaming standby of a test primary ---
                    primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'
                    primary_slot_name = '%s'
                    recovery_min_apply_delay = '%dms'
                    hot_standby = on
                    """.formatted(replicationPort, slot, slot, applyDelay.toMillis());
            Files.writeString(dataDirectory.resolve("postgresql.auto.conf"), settings, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            Files.createFile(dataDirectory.resolve("standby.signal"));
            EmbeddedPostgres server = EmbeddedPostgres.builder()
                    .setDataDirectory(dataDirectory)
                    .setCleanDataDirectory(false)
                    // Hot standby needs at least the primary's values of these.
                    .setServerConfig("max_connections", "300")
                    .setServerConfig("max_wal_senders", "10")
                    .setServerConfig("wal_level", "replica")
                    .setServerConfig("fsync", "off")
                    .setPGStartupWait(Duration.ofSeconds(60))
                    // close() stops it and then deletes the copy, in that order.
                    .setRegisterShutdownHook(false)
                    .start();
            StreamingStandby standby = new StreamingStandby(server, dataDirectory, primaryPort);
            Runtime.getRuntime().addShutdownHook(new Thread(standby::close, "standby-cleanup-" + server.getPort()));
            standby.awaitCaughtUp(Duration.ofSeconds(60));
            return standby;
        } catch (IOException e) {
            deleteQuietly(dataDirectory);
            throw new UncheckedIOException("could not start the standby", e);
        } catch (SQLException e) {
            deleteQuietly(dataDirectory);
            throw new IllegalStateException("could not take the base backup for the standby", e);
        }
    }

    public int port() {
        return server.getPort();
    }

    /** A connection to a database on the standby (read-only while it is one). */
    public Connection connect(String database) throws SQLException {
        return connectTo(port(), database);
    }

    /**
     * Waits until the standby has replayed everything the primary had written when this was called (so a new
     * database and its schema exist there, or the last commits before a cut of the replication link).
     */
    public void awaitCaughtUp(Duration timeout) {
        String target;
        try (Connection c = connectTo(primaryPort, "postgres"); Statement s = c.createStatement();
             // The insert position: with synchronous_commit=off (zonky's default) a commit may not be written yet.
             ResultSet rs = s.executeQuery("SELECT pg_current_wal_insert_lsn()")) {
            rs.next();
            target = rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try (Connection c = connect("postgres"); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '" + target + "') >= 0")) {
                rs.next();
                if (rs.getBoolean(1)) {
                    return;
                }
            } catch (SQLException e) {
                // still starting up
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the standby did not replay up to " + target + " within " + timeout);
            }
            sleep(100);
        }
    }

    /**
     * The standby's lag as its own clock sees it: {@code now() - pg_last_xact_replay_timestamp()}, or zero when it
     * has replayed all it received (an idle primary is not lag).
     */
    public Duration lag() {
        try (Connection c = connect("postgres"); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("""
                SELECT CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000 END""")) {
            rs.next();
            return Duration.ofMillis(Math.round(rs.getDouble(1)));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Promotes the standby ({@code pg_promote}, what a failover does) and waits until it takes writes. */
    public void promote(Duration timeout) throws SQLException {
        try (Connection c = connect("postgres"); Statement s = c.createStatement()) {
            s.execute("SELECT pg_promote(true, " + Math.max(1, timeout.toSeconds()) + ")");
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try (Connection c = connect("postgres"); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT pg_is_in_recovery()")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the standby was not promoted within " + timeout);
            }
            sleep(100);
        }
    }

    /** Stops the standby and deletes its data directory. */
    @Override
    public synchronized void close() {
        try {
            server.close();
        } catch (IOException ignored) {
            // stopped already
        }
        deleteQuietly(dataDirectory);
    }

    // ---- the base backup ---------------------------------------------------------------------------------------

    private static void baseBackupInto(int primaryPort, String slot, Path target) throws SQLException, IOException {
        try (Connection session = connectTo(primaryPort, "postgres"); Statement s = session.createStatement()) {
            Path source;
            try (ResultSet rs = s.executeQuery("SHOW data_directory")) {
                rs.next();
                source = Path.of(rs.getString(1));
            }
            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + slot + "'")) {
                rs.next();
                if (rs.getLong(1) > 0) {
                    s.execute("SELECT pg_drop_replication_slot('" + slot + "')");
                }
            }
            // Reserve WAL now: everything from here on stays on the primary until the standby has received it.
            s.execute("SELECT pg_create_physical_replication_slot('" + slot + "', true)");
            // Non-exclusive backup: it lives as long as this session, which must also stop it.
            s.execute("SELECT pg_start_backup('chargeonce-test-standby', true, false)");
            copyDataDirectory(source, target);
            try (ResultSet rs = s.executeQuery("SELECT labelfile, spcmapfile FROM pg_stop_backup(false, false)")) {
                rs.next();
                Files.writeString(target.resolve("backup_label"), rs.getString("labelfile"));
                String tablespaceMap = rs.getString("spcmapfile");
                if (tablespaceMap != null && !tablespaceMap.isBlank()) {
                    Files.writeString(target.resolve("tablespace_map"), tablespaceMap);
                }
            }
        }
    }

    private static void copyDataDirectory(Path source, Path target) throws IOException {
        Files.walkFileTree(source, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                Path copy = target.resolve(source.relativize(dir).toString());
                if (!dir.equals(source)) {
                    Files.createDirectories(copy);
                    Files.setPosixFilePermissions(copy, Files.getPosixFilePermissions(dir));
                }
                if (EMPTIED_DIRECTORIES.contains(source.relativize(dir).toString())) {
                    if (dir.getFileName().toString().equals("pg_wal")) {
                        Files.createDirectories(copy.resolve("archive_status"));
                    }
                    return FileVisitResult.SKIP_SUBTREE;
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                String name = file.getFileName().toString();
                if (SKIPPED_FILES.contains(name) || name.startsWith("pgsql_tmp") || name.equals("pg_internal.init")) {
                    return FileVisitResult.CONTINUE;
                }
                try {
                    Files.copy(file, target.resolve(source.relativize(file).toString()), StandardCopyOption.COPY_ATTRIBUTES);
                } catch (NoSuchFileException e) {
                    // dropped while we copied (a temporary file): WAL replay recreates whatever matters
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                if (e instanceof NoSuchFileException) {
                    return FileVisitResult.CONTINUE;
                }
                throw e;
            }
        });
    }

    static Connection connectTo(int port, String database) throws SQLException {
        return DriverManager.getConnection(TestPostgres.jdbcUrl(port, database), "postgres", "postgres");
    }

    private static void deleteQuietly(Path directory) {
        if (directory == null || !Files.exists(directory)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (DirectoryNotEmptyException | NoSuchFileException ignored) {
                    // a file the server wrote while stopping; the temp directory is reclaimed anyway
                } catch (IOException ignored) {
                    // best effort
                }
            });
        } catch (IOException ignored) {
            // best effort
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

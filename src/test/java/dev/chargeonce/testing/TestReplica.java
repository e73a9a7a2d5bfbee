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
 * A real streaming replica of {@link TestPostgres}, on its own port, that replays every commit
 * {@link #APPLY_DELAY} late ({@code recovery_min_apply_delay}): the lagging read replica of the incident, reliably
 * behind. One per test JVM, started on first use.
 *
 * <p>zonky ships only {@code initdb}, {@code pg_ctl} and {@code postgres} (no {@code pg_basebackup}), so the base
 * backup is taken with the low-level API of PostgreSQL 14: {@code pg_start_backup} in one session, a file copy of
 * the primary's data directory, {@code pg_stop_backup} in the same session, whose label file becomes the copy's
 * {@code backup_label}. A physical replication slot, created first, keeps every WAL segment the standby needs.
 * The copy is made by this JVM's user, exactly like zonky's own {@code initdb} output (as root, zonky runs the
 * server in a user namespace: files owned by the invoking user are the server's own), and started through zonky,
 * which skips {@code initdb} because {@code postgresql.conf} is there.
 */
public final class TestReplica {

    /** How far behind the replica replays every commit. */
    public static final Duration APPLY_DELAY = Duration.ofSeconds(3);

    private static final String SLOT = "chargeonce_test_replica";
    /** Copied as empty directories (PostgreSQL docs, "Making a Base Backup Using the Low Level API"). */
    private static final Set<String> EMPTIED_DIRECTORIES = Set.of("pg_wal", "pg_replslot", "pg_dynshmem", "pg_notify",
            "pg_serial", "pg_snapshots", "pg_stat_tmp", "pg_subtrans");
    /** Files of the running primary (or of zonky) that must not reach the standby. */
    private static final Set<String> SKIPPED_FILES = Set.of("postmaster.pid", "postmaster.opts", "epg-lock",
            "backup_label", "tablespace_map", "standby.signal", "recovery.signal");

    private static EmbeddedPostgres server;
    private static Path dataDirectory;

    private TestReplica() {
    }

    public static synchronized EmbeddedPostgres server() {
        if (server == null) {
            try {
                long started = System.nanoTime();
                dataDirectory = Files.createTempDirectory("chargeonce-replica-");
                baseBackupInto(dataDirectory);
                configureStandby(dataDirectory);
                server = EmbeddedPostgres.builder()
                        .setDataDirectory(dataDirectory)
                        .setCleanDataDirectory(false)
                        // Hot standby needs at least the primary's values of these.
                        .setServerConfig("max_connections", "300")
                        .setServerConfig("max_wal_senders", "10")
                        .setServerConfig("wal_level", "replica")
                        .setServerConfig("fsync", "off")
                        .setPGStartupWait(Duration.ofSeconds(60))
                        // Our own hook stops it and then deletes the copy, in that order.
                        .setRegisterShutdownHook(false)
                        .start();
                Runtime.getRuntime().addShutdownHook(new Thread(TestReplica::deleteDataDirectory, "test-replica-cleanup"));
                awaitCaughtUp(Duration.ofSeconds(60));
                System.out.printf("test replica: streaming from port %d on port %d, apply delay %s, ready in %d ms%n",
                        TestPostgres.port(), server.getPort(), APPLY_DELAY, (System.nanoTime() - started) / 1_000_000);
            } catch (IOException e) {
                throw new UncheckedIOException("could not start the test replica", e);
            } catch (SQLException e) {
                throw new IllegalStateException("could not take the base backup for the test replica", e);
            }
        }
        return server;
    }

    public static int port() {
        return server().getPort();
    }

    /**
     * The service's config for a replica data source on {@code port} (the replica's own, or a proxy in front of
     * it) and {@code database}.
     */
    public static Map<String, String> serviceConfig(int port, String database) {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("quarkus.datasource.replica.jdbc.url", TestPostgres.jdbcUrl(port, database));
        config.put("quarkus.datasource.replica.username", "postgres");
        config.put("quarkus.datasource.replica.password", "postgres");
        return config;
    }

    /** A connection to a database on the replica (read-only: it is a hot standby). */
    public static Connection connect(String database) throws SQLException {
        return DriverManager.getConnection(TestPostgres.jdbcUrl(port(), database), "postgres", "postgres");
    }

    /**
     * Waits until the replica has replayed everything the primary had written when this was called (so a new
     * database and its schema exist there): about {@link #APPLY_DELAY}.
     */
    public static void awaitCaughtUp(Duration timeout) {
        String target;
        try (Connection c = primary(); Statement s = c.createStatement();
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
                throw new IllegalStateException("the test replica did not replay up to " + target + " within " + timeout);
            }
            sleep(100);
        }
    }

    /**
     * The replica's lag as its own clock sees it: {@code now() - pg_last_xact_replay_timestamp()}, or zero when it
     * has replayed all it received (an idle primary is not lag).
     */
    public static Duration lag() {
        try (Connection c = connect("postgres"); Statement s = c.createStatement(); ResultSet rs = s.executeQuery("""
                SELECT CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000 END""")) {
            rs.next();
            return Duration.ofMillis(Math.round(rs.getDouble(1)));
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    // ---- the base backup ---------------------------------------------------------------------------------------

    private static void baseBackupInto(Path target) throws SQLException, IOException {
        try (Connection session = primary(); Statement s = session.createStatement()) {
            Path source;
            try (ResultSet rs = s.executeQuery("SHOW data_directory")) {
                rs.next();
                source = Path.of(rs.getString(1));
            }
            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_replication_slots WHERE slot_name = '" + SLOT + "'")) {
                rs.next();
                if (rs.getLong(1) > 0) {
                    s.execute("SELECT pg_drop_replication_slot('" + SLOT + "')");
                }
            }
            // Reserve WAL now: everything from here on stays on the primary until the standby has received it.
            s.execute("SELECT pg_create_physical_replication_slot('" + SLOT + "', true)");
            // Non-exclusive backup: it lives as long as this session, which must also stop it.
            s.execute("SELECT pg_start_backup('chargeonce-test-replica', true, false)");
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

    private static void configureStandby(Path directory) throws IOException {
        String settings = """

                # --- test replica (TestReplica): a streaming standby of the test primary, deliberately behind ---
                primary_conninfo = 'host=127.0.0.1 port=%d user=postgres application_name=%s'
                primary_slot_name = '%s'
                recovery_min_apply_delay = '%dms'
                hot_standby = on
                """.formatted(TestPostgres.port(), SLOT, SLOT, APPLY_DELAY.toMillis());
        Files.writeString(directory.resolve("postgresql.auto.conf"), settings, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        Files.createFile(directory.resolve("standby.signal"));
    }

    private static Connection primary() throws SQLException {
        return DriverManager.getConnection(TestPostgres.jdbcUrl(TestPostgres.port(), "postgres"), "postgres", "postgres");
    }

    private static void deleteDataDirectory() {
        try {
            if (server != null) {
                server.close();
            }
        } catch (IOException ignored) {
            // the JVM is ending
        }
        if (dataDirectory == null) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dataDirectory)) {
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

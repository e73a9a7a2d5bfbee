package dev.chargeonce.waiting;

import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.logging.Logger;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The one listening connection of this instance: {@code LISTEN chargeonce_key_changed} on the primary, fanned out
 * in memory to the requests waiting for a row ({@code Prefer: wait}). The NOTIFY comes from the trigger of
 * migration V1.7.0 when an awaited row moves, at the commit of the statement that moved it, from whichever
 * instance moved it: a waiter on another instance wakes within milliseconds.
 *
 * <p>The connection is its own (not the pool's: it is held for the instance's life) and one platform thread reads
 * it, blocked on the socket; the waiters hold neither a connection nor a platform thread. When the connection is
 * lost, every waiter is woken (a notification may have been missed; each looks at its row again) and it connects
 * again; while it is down {@link #listening} is false and requests do not wait.
 */
@ApplicationScoped
public class KeyChangeListener {

    static final String CHANNEL = "chargeonce_key_changed";
    private static final Logger LOG = Logger.getLogger(KeyChangeListener.class);

    private final Map<String, Set<CompletableFuture<Void>>> waiters = new ConcurrentHashMap<>();
    private volatile boolean listening;
    private volatile boolean triggersSend = true;
    private volatile boolean stopping;
    private volatile Connection connection;
    private Thread reader;

    void start(@Observes StartupEvent event) {
        reader = Thread.ofPlatform().name("key-change-listener").daemon().start(this::listen);
    }

    void stop(@Observes ShutdownEvent event) {
        stopping = true;
        Connection c = connection;
        if (c != null) {
            try {
                c.close();
            } catch (SQLException e) {
                // closing anyway
            }
        }
        if (reader != null) {
            reader.interrupt();
        }
        wakeAll();
    }

    /** Whether a notification would reach this instance now: waiting makes sense only then. */
    public boolean listening() {
        return listening;
    }

    /**
     * Whether a row's move is notified at all: the wake-up triggers exist (V1.7.0). On Citus they do not (V1.15.0:
     * they would fire on the worker holding the shard, whose listeners are not this instance), and a waiter looks at
     * its row again on a back-off instead ({@link WaitThenReplay}). Read at every (re)connection.
     */
    public boolean movesNotified() {
        return triggersSend;
    }

    /**
     * A wake-up for the next move of a row. Register before looking at the row (then no move between the look and
     * the wait is missed), and close it when done.
     */
    public Registration register(String rowId) {
        CompletableFuture<Void> moved = new CompletableFuture<>();
        // Added inside the map's atomic step: a set emptied and removed by another waiter's close is never reused.
        waiters.compute(rowId, (id, set) -> {
            Set<CompletableFuture<Void>> into = set != null ? set : ConcurrentHashMap.newKeySet();
            into.add(moved);
            return into;
        });
        if (!listening) {
            moved.complete(null); // registered while the connection is down: a notification may be missed, look again
        }
        return new Registration(rowId, moved);
    }

    /** A waiter's wake-up: complete when its row moved or the listener lost its connection. */
    public final class Registration implements AutoCloseable {
        private final String rowId;
        final CompletableFuture<Void> moved;

        Registration(String rowId, CompletableFuture<Void> moved) {
            this.rowId = rowId;
            this.moved = moved;
        }

        @Override
        public void close() {
            waiters.computeIfPresent(rowId, (id, set) -> {
                set.remove(moved);
                return set.isEmpty() ? null : set;
            });
        }
    }

    private void listen() {
        long backoffMillis = 200;
        while (!stopping) {
            try (Connection c = connect(); Statement s = c.createStatement()) {
                s.execute("LISTEN " + CHANNEL);
                // the tables the service's statements name (its search path), not a copy of the schema elsewhere
                try (var rs = s.executeQuery("SELECT count(*) FROM pg_trigger WHERE"
                        + " (tgrelid, tgname) IN (('stripe_intents'::regclass, 'stripe_intents_wake_waiters'),"
                        + " ('stripe_refunds'::regclass, 'stripe_refunds_wake_waiters'))")) {
                    triggersSend = rs.next() && rs.getInt(1) == 2;
                }
                if (!triggersSend) {
                    LOG.infof("no wake-up triggers in this database (Citus): waiting requests look at their row on a back-off");
                }
                connection = c;
                listening = true;
                backoffMillis = 200;
                LOG.debugf("listening on %s", CHANNEL);
                PGConnection pg = c.unwrap(PGConnection.class);
                while (!stopping) {
                    // Blocks on the socket until a notification comes, at most 5 s; a quiet connection is then
                    // checked with a round trip, so that a dead one (a failover, a dropped idle connection) is seen
                    // within seconds, not at the kernel's keepalive hours later.
                    PGNotification[] notifications = pg.getNotifications(5_000);
                    if (notifications == null || notifications.length == 0) {
                        s.execute("SELECT 1");
                        continue;
                    }
                    for (PGNotification n : notifications) {
                        wake(n.getParameter());
                    }
                }
            } catch (SQLException | RuntimeException e) {
                if (!stopping) {
                    LOG.warnf("the key-change listener lost its connection (%s); waiting requests look again", e.getMessage());
                }
            } finally {
                listening = false;
                connection = null;
                wakeAll();
            }
            try {
                Thread.sleep(backoffMillis);
            } catch (InterruptedException e) {
                return;
            }
            backoffMillis = Math.min(backoffMillis * 2, 5_000);
        }
    }

    private void wake(String rowId) {
        Set<CompletableFuture<Void>> set = waiters.get(rowId);
        if (set != null) {
            set.forEach(f -> f.complete(null));
        }
    }

    private void wakeAll() {
        waiters.values().forEach(set -> set.forEach(f -> f.complete(null)));
    }

    /** A connection of its own to the primary, as the data source is configured (its driver too: dev mode's). */
    private static Connection connect() throws SQLException {
        var config = ConfigProvider.getConfig();
        String url = config.getValue("quarkus.datasource.jdbc.url", String.class);
        Properties properties = new Properties();
        config.getOptionalValue("quarkus.datasource.username", String.class).ifPresent(u -> properties.setProperty("user", u));
        config.getOptionalValue("quarkus.datasource.password", String.class).ifPresent(p -> properties.setProperty("password", p));
        // The data source's own JDBC properties (sslmode and the like), then this connection's: a socket timeout above
        // the 5 s wait for notifications, so that a round trip that hangs fails.
        for (String name : config.getPropertyNames()) {
            String prefix = "quarkus.datasource.jdbc.additional-jdbc-properties.";
            if (name.startsWith(prefix)) {
                config.getOptionalValue(name, String.class).ifPresent(v -> properties.setProperty(name.substring(prefix.length()), v));
            }
        }
        // Its reads wait up to 5 s for a notification by design: the pool's read watchdog (socketFactory) is not for it.
        properties.remove("socketFactory");
        properties.remove("watchedReadLimit");
        properties.setProperty("connectTimeout", "3");
        properties.setProperty("socketTimeout", "15");
        properties.setProperty("tcpKeepAlive", "true");
        properties.setProperty("ApplicationName", "chargeonce-key-change-listener");
        Optional<String> driver = config.getOptionalValue("quarkus.datasource.jdbc.driver", String.class);
        if (driver.isPresent() && !driver.get().equals("org.postgresql.Driver")) {
            try {
                Driver d = (Driver) Class.forName(driver.get(), true, Thread.currentThread().getContextClassLoader())
                        .getDeclaredConstructor().newInstance();
                return d.connect(url, properties);
            } catch (ReflectiveOperationException e) {
                throw new SQLException("cannot load the data source's driver " + driver.get(), e);
            }
        }
        return DriverManager.getConnection(url, properties);
    }
}

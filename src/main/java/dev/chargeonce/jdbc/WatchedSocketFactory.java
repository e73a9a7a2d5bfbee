package dev.chargeonce.jdbc;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.net.SocketFactory;
import org.jboss.logging.Logger;

/**
 * PostgreSQL's sockets (pgjdbc's {@code socketFactory}), every read of which is bounded by one watchdog thread instead
 * of a timer per read.
 *
 * <p>Why: a database that stops answering without closing the connection (a network partition, a failover that moved
 * the address, a frozen host) must be noticed, or a request would hold its connection and its lease for as long as
 * TCP keeps trying. pgjdbc's {@code socketTimeout} does it with {@code SO_TIMEOUT}, and on a virtual thread a read
 * with a timeout parks with a timeout: every statement schedules a task on the JDK's {@code DelayScheduler}, cancels it
 * and wakes that scheduler's thread twice. CPU profiles under load put that at about a tenth of the service's CPU per
 * replay (one statement) and per new charge (three). Here a read only stamps when it started and when it ended (two
 * volatile writes); a daemon thread looks at the sockets that are reading a few times a second and closes one whose
 * read has blocked longer than the limit, which fails the statement as {@code socketTimeout} does (pgjdbc reports an
 * I/O error, SQLSTATE 08006, and the pool drops the connection).
 *
 * <p>Configured with the connection property {@value #READ_LIMIT} (seconds, default 10), the same meaning as
 * {@code socketTimeout}: no read, hence no statement, waits longer for the database. Writes are not bounded (neither
 * are they by {@code socketTimeout}); a write blocks only when the kernel's send buffer is full.
 */
public final class WatchedSocketFactory extends SocketFactory {

    /** Connection property: how long, in seconds, one read may wait for the database before its connection is closed. */
    public static final String READ_LIMIT = "watchedReadLimit";

    private static final Logger LOG = Logger.getLogger(WatchedSocketFactory.class);
    private static final Watchdog WATCHDOG = new Watchdog();

    private final long limitNanos;

    /** pgjdbc passes the connection's properties (see its {@code ObjectFactory}). */
    public WatchedSocketFactory(Properties info) {
        this(seconds(info.getProperty(READ_LIMIT, "10")));
    }

    WatchedSocketFactory(long limitNanos) {
        this.limitNanos = limitNanos;
        WATCHDOG.lookEvery(limitNanos);
    }

    private static long seconds(String value) {
        double seconds;
        try {
            seconds = Double.parseDouble(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(READ_LIMIT + " must be a number of seconds, not '" + value + "'", e);
        }
        if (!(seconds > 0)) {
            throw new IllegalArgumentException(READ_LIMIT + " must be more than 0 seconds, not '" + value + "'");
        }
        return Math.max(TimeUnit.MILLISECONDS.toNanos(1), (long) (seconds * 1e9));
    }

    /** Reads closed by the watchdog since the JVM started: each one a database that did not answer within its limit. */
    public static long readsClosed() {
        return WATCHDOG.closed.get();
    }

    @Override
    public Socket createSocket() {
        return new WatchedSocket(limitNanos);
    }

    @Override
    public Socket createSocket(String host, int port) throws IOException {
        return connected(new InetSocketAddress(host, port));
    }

    @Override
    public Socket createSocket(String host, int port, InetAddress localHost, int localPort) throws IOException {
        return connected(new InetSocketAddress(host, port), new InetSocketAddress(localHost, localPort));
    }

    @Override
    public Socket createSocket(InetAddress host, int port) throws IOException {
        return connected(new InetSocketAddress(host, port));
    }

    @Override
    public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort) throws IOException {
        return connected(new InetSocketAddress(address, port), new InetSocketAddress(localAddress, localPort));
    }

    private Socket connected(SocketAddress remote) throws IOException {
        Socket socket = createSocket();
        socket.connect(remote);
        return socket;
    }

    private Socket connected(SocketAddress remote, SocketAddress local) throws IOException {
        Socket socket = createSocket();
        socket.bind(local);
        socket.connect(remote);
        return socket;
    }

    /** A socket that says when a read started, for as long as the read lasts. */
    static final class WatchedSocket extends Socket {

        private static final long NOT_READING = Long.MIN_VALUE;

        private final long limitNanos;
        private volatile long readingSince = NOT_READING;
        private InputStream input;

        WatchedSocket(long limitNanos) {
            this.limitNanos = limitNanos;
        }

        @Override
        public void connect(SocketAddress endpoint, int timeout) throws IOException {
            super.connect(endpoint, timeout);
            WATCHDOG.watch(this);
        }

        @Override
        public synchronized InputStream getInputStream() throws IOException {
            if (input == null) {
                input = new FilterInputStream(super.getInputStream()) {
                    @Override
                    public int read() throws IOException {
                        readingSince = System.nanoTime();
                        try {
                            return super.read();
                        } finally {
                            readingSince = NOT_READING;
                        }
                    }

                    @Override
                    public int read(byte[] b, int off, int len) throws IOException {
                        readingSince = System.nanoTime();
                        try {
                            return in.read(b, off, len);
                        } finally {
                            readingSince = NOT_READING;
                        }
                    }
                };
            }
            return input;
        }

        @Override
        public synchronized void close() throws IOException {
            WATCHDOG.forget(this);
            super.close();
        }

        /** True when a read has waited longer than the limit at {@code now}. */
        boolean overdue(long now) {
            long since = readingSince;
            return since != NOT_READING && now - since > limitNanos;
        }
    }

    /** One daemon thread for every watched socket of the JVM. */
    static final class Watchdog {

        private final Set<WatchedSocket> sockets = ConcurrentHashMap.newKeySet();
        private final AtomicLong closed = new AtomicLong();
        /** How often to look: a tenth of the smallest limit, within 20 ms and 500 ms. */
        private volatile long intervalNanos = TimeUnit.MILLISECONDS.toNanos(500);
        private volatile boolean started;

        void lookEvery(long limitNanos) {
            long interval = Math.max(TimeUnit.MILLISECONDS.toNanos(20), Math.min(limitNanos / 10, intervalNanos));
            intervalNanos = interval;
        }

        void watch(WatchedSocket socket) {
            sockets.add(socket);
            if (!started) {
                start();
            }
        }

        void forget(WatchedSocket socket) {
            sockets.remove(socket);
        }

        private synchronized void start() {
            if (!started) {
                Thread.ofPlatform().daemon().name("chargeonce-db-read-watchdog").start(this::run);
                started = true;
            }
        }

        private void run() {
            while (true) {
                LockSupport.parkNanos(intervalNanos);
                try {
                    long now = System.nanoTime();
                    for (WatchedSocket socket : sockets) {
                        if (socket.overdue(now)) {
                            closeOverdue(socket);
                        }
                    }
                } catch (Throwable e) {
                    // Whatever went wrong with one look (a log handler that threw), the watchdog must keep looking:
                    // without it a silent database would hold reads for as long as TCP keeps the connection.
                    LOG.debugf(e, "the database read watchdog's look failed; it looks again");
                }
            }
        }

        private void closeOverdue(WatchedSocket socket) {
            closed.incrementAndGet();
            LOG.warnf("the database did not answer a read within %d ms on %s: its connection is closed (the statement fails"
                    + " as unavailable)", TimeUnit.NANOSECONDS.toMillis(socket.limitNanos), socket.getRemoteSocketAddress());
            try {
                socket.close();
            } catch (IOException | RuntimeException e) {
                LOG.debugf(e, "closing an overdue database socket");
            }
        }
    }
}

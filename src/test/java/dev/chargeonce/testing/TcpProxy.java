package dev.chargeonce.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy the test owns, in front of a server it started: {@link #cut()} drops every connection and refuses
 * new ones (a database outage as the service sees it), {@link #restore()} lets traffic through again,
 * {@link #retarget(int)} sends it elsewhere.
 */
public final class TcpProxy implements AutoCloseable {

    private final ServerSocket listener;
    private volatile int targetPort;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final AtomicLong connectionsAccepted = new AtomicLong();
    private final AtomicLong bytesToTarget = new AtomicLong();
    private volatile boolean cut;
    private volatile boolean silent;
    private volatile boolean closed;

    public TcpProxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.listener = new ServerSocket();
        listener.setReuseAddress(true);
        listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 512);
        Thread.ofPlatform().daemon().name("tcp-proxy-" + port()).start(this::accept);
    }

    public int port() {
        return listener.getLocalPort();
    }

    /** Connections let through to the target so far. */
    public long connectionsAccepted() {
        return connectionsAccepted.get();
    }

    /** Bytes the clients sent to the target so far (every statement, every handshake, every validation). */
    public long bytesToTarget() {
        return bytesToTarget.get();
    }

    public void cut() {
        cut = true;
        for (Socket s : open) {
            closeQuietly(s);
        }
        open.clear();
    }

    public void restore() {
        if (silent) {
            // What was sent into the silence is gone: the connections it hung are dead, as after a partition that
            // outlived TCP's patience. Closed here, so that nothing half-delivered reaches either side later.
            cut();
            silent = false;
        }
        cut = false;
    }

    /**
     * The database stops answering without closing anything (a network partition, a frozen host): open connections
     * stay open, and every byte either side sends is read by the proxy and dropped; new connections are accepted and
     * hear nothing. Only a timeout of the client notices. {@link #restore()} closes the connections it hung.
     */
    public void silence() {
        silent = true;
    }

    /**
     * New connections go to {@code port} from now on (a failover: the address the service knows now leads to the
     * promoted standby); open ones are left as they are, {@link #cut()} first to drop them.
     */
    public void retarget(int port) {
        targetPort = port;
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                if (cut) {
                    client.setSoLinger(true, 0);
                    closeQuietly(client);
                    continue;
                }
                Socket upstream = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
                open.add(client);
                open.add(upstream);
                connectionsAccepted.incrementAndGet();
                Thread.ofVirtual().start(() -> pump(client, upstream, bytesToTarget));
                Thread.ofVirtual().start(() -> pump(upstream, client, new AtomicLong()));
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to, AtomicLong bytes) {
        byte[] buffer = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while (!cut && (n = in.read(buffer)) >= 0) {
                if (silent) {
                    continue; // dropped, as a partition drops it
                }
                bytes.addAndGet(n);
                out.write(buffer, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // a side closed: close both below
        } finally {
            closeQuietly(from);
            closeQuietly(to);
            open.remove(from);
            open.remove(to);
        }
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        cut();
        listener.close();
    }
}

package dev.chargeonce.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for the processes and servers a test starts ({@link ServiceProcess}, the Stripe stand-in, an OIDC provider):
 * free ones, never the same one twice in a JVM, and out of the way of the ports the kernel hands to outgoing
 * connections. JDK only, like {@link ServiceProcess}, which the scripts compile with plain {@code javac}.
 */
public final class FreePorts {

    /** Every port handed out in this JVM: a port handed out is the caller's, even before it binds it. */
    private static final Set<Integer> HANDED_OUT = new HashSet<>();

    private FreePorts() {
    }

    /**
     * A free loopback port below the kernel's ephemeral range. A port from that range (what {@code new
     * ServerSocket(0)} hands out) can meanwhile become the local end of an outgoing connection, even one of the
     * service's own JDBC connections, and then the service, or its restart after {@code kill -9}, cannot bind it.
     */
    public static synchronized int freePort() {
        int ephemeralLow = 32768;
        try (BufferedReader in = Files.newBufferedReader(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
            int parsed = Integer.parseInt(in.readLine().trim().split("\\s+")[0]);
            if (parsed > 4_096) {
                ephemeralLow = parsed;
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or unreadable: keep the usual default
        }
        int low = Math.max(1024, Math.min(20_000, ephemeralLow - 2_000));
        // Test JVMs run side by side (failsafe's forks): each takes ports from its own slice of the range, so that
        // two of them never hand out the same port (each remembers only its own).
        int forks = Integer.getInteger("chargeonce.test.forks", 1);
        int fork = Math.floorMod(Integer.getInteger("chargeonce.test.fork", 1) - 1, forks);
        int slice = (ephemeralLow - low) / forks;
        low += fork * slice;
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 500; attempt++) {
            int port = low + random.nextInt(slice);
            if (!HANDED_OUT.add(port)) {
                continue;
            }
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress("0.0.0.0", port));
                return port;
            } catch (IOException e) {
                // in use: try another
            }
        }
        throw new IllegalStateException("no free port below " + ephemeralLow);
    }
}

package dev.chargeonce.testing;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The packaged service ({@code java -jar target/quarkus-app/quarkus-run.jar}) as a real OS process that a test
 * can {@code kill -9}, stop with SIGTERM and start again on the same ports: the API's ({@link #uri}) and the
 * management interface's ({@link #managementUri}: health, metrics), each a free one of its own. Its log goes to
 * {@code target/process-logs/<name>-<n>.log}.
 */
public final class ServiceProcess implements AutoCloseable {

    private static final Path JAR = Path.of("target", "quarkus-app", "quarkus-run.jar");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private final String name;
    private final Path jar;
    private final int port;
    private final int managementPort;
    private final Map<String, String> config;
    /** Environment variables on top of the test JVM's own (as a Deployment sets them: k8s/). */
    private final Map<String, String> environment;
    private Process process;
    private int starts;

    private ServiceProcess(String name, Path jar, int port, Map<String, String> config, Map<String, String> environment) {
        this.name = name;
        this.jar = jar;
        this.port = port;
        this.managementPort = freePort();
        this.config = config;
        this.environment = environment;
    }

    /** Starts the service with these config properties (passed as -D system properties) and waits until ready. */
    public static ServiceProcess start(String name, Map<String, String> config) {
        if (!Files.exists(JAR)) {
            throw new IllegalStateException(JAR + " is missing: process tests run after `package` (mvn verify)");
        }
        return start(name, JAR, config);
    }

    /** The same with another build of the service (its {@code quarkus-run.jar}): an earlier release, for an upgrade. */
    public static ServiceProcess start(String name, Path jar, Map<String, String> config) {
        for (int attempt = 1; ; attempt++) {
            ServiceProcess service = new ServiceProcess(name, jar, freePort(), new LinkedHashMap<>(config), Map.of());
            try {
                service.startProcess();
                return service;
            } catch (IllegalStateException e) {
                service.close();
                // A port found free here was taken before the service bound it: on a machine whose ephemeral range
                // reaches below the ports handed out here, an outgoing connection's local end can take it. Or the
                // database handed no connection to the start's migration within the pool's acquisition timeout (3
                // s), on a machine loaded by other suites. Start again (new ports), not a failed test; anything else
                // the start logged fails the test as it is.
                String log = service.log();
                java.util.regex.Matcher cause = START_AGAIN.matcher(log);
                if (attempt == 3 || !cause.find()) {
                    throw e;
                }
                try {
                    Files.move(Path.of("target", "process-logs", name + "-1.log"),
                            Path.of("target", "process-logs", name + "-start-failed-" + attempt + ".log"),
                            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                } catch (IOException moveFailed) {
                    // the next start overwrites it: the message below says what it was
                }
                System.err.println(name + ": the start failed (" + cause.group() + "), starting again on new ports: "
                        + e.getMessage());
            }
        }
    }

    private static final java.util.regex.Pattern START_AGAIN = java.util.regex.Pattern.compile(
            "QuarkusBindException|Address already in use|seems to be in use"
            + "|FlywaySqlUnableToConnectToDbException.*Acquisition timeout while waiting for new connection");

    /**
     * Starts the service with a configuration it must refuse, and returns what it logged before it exited. Fails if
     * it becomes ready instead, or is still running after {@code timeout}.
     */
    public static String startExpectingRefusal(String name, Map<String, String> config, Duration timeout) {
        return startExpectingRefusal(name, config, Map.of(), timeout);
    }

    /** The same with environment variables too: the settings as the manifests in k8s/ give them. */
    public static String startExpectingRefusal(String name, Map<String, String> config, Map<String, String> environment,
                                               Duration timeout) {
        try (ServiceProcess service = new ServiceProcess(name, JAR, freePort(), new LinkedHashMap<>(config), Map.copyOf(environment))) {
            File log = service.launch();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (service.process.isAlive() && System.nanoTime() < deadline) {
                if (service.ready()) {
                    throw new AssertionError(name + " started with a configuration it must refuse; see " + log);
                }
                sleep(200);
            }
            if (service.process.isAlive()) {
                throw new AssertionError(name + " neither refused nor became ready within " + timeout + "; see " + log);
            }
            try {
                return Files.readString(log.toPath());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** Changes (value null: removes) a config property for the next {@link #startProcess()}. */
    public void configure(String key, String value) {
        if (value == null) {
            config.remove(key);
        } else {
            config.put(key, value);
        }
    }

    public void startProcess() {
        awaitReady(Duration.ofSeconds(60), launch());
    }

    public String name() {
        return name;
    }

    /** What the process (its latest start) has written to its log so far. */
    public String log() {
        try {
            return Files.readString(Path.of("target", "process-logs", name + "-" + starts + ".log"));
        } catch (IOException e) {
            return "";
        }
    }

    private File launch() {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.add("-Xmx256m");
        command.add("-Dquarkus.http.port=" + port);
        command.add("-Dquarkus.management.port=" + managementPort);
        command.add("-Dquarkus.log.console.json.enabled=false");
        config.forEach((k, v) -> command.add("-D" + k + "=" + v));
        command.add("-jar");
        command.add(jar.toString());
        File log = Path.of("target", "process-logs", name + "-" + (++starts) + ".log").toFile();
        log.getParentFile().mkdirs();
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log);
            builder.environment().putAll(environment);
            process = builder.start();
        } catch (IOException e) {
            throw new IllegalStateException("could not start " + name, e);
        }
        return log;
    }

    private boolean ready() {
        try {
            return HTTP.send(HttpRequest.newBuilder(managementUri("/q/health/ready")).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private void awaitReady(Duration timeout, File log) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(name + " exited with " + process.exitValue() + "; see " + log
                        + logTail(log));
            }
            if (ready()) {
                return;
            }
            sleep(200);
        }
        throw new IllegalStateException(name + " not ready after " + timeout + "; see " + log + logTail(log));
    }

    /**
     * Why a start failed, on one line for the failure message: CI keeps the test report, not
     * {@code target/process-logs}, and Maven's summary shows a message's first line only. The log's errors and their
     * causes when it has any, else its last lines.
     */
    private static String logTail(File log) {
        try {
            List<String> lines = Files.readAllLines(log.toPath());
            List<String> why = lines.stream()
                    .filter(l -> l.contains("ERROR") || l.startsWith("Caused by") || l.contains("Exception:"))
                    .limit(8).toList();
            if (why.isEmpty()) {
                why = lines.subList(Math.max(0, lines.size() - 8), lines.size());
            }
            return "; it logged: " + String.join(" | ", why);
        } catch (IOException | RuntimeException e) {
            return "; its log is unreadable: " + e;
        }
    }

    /** SIGKILL: no shutdown hook, no graceful anything, exactly like an OOM kill or a node loss. */
    public void kill9() {
        process.destroyForcibly();
        waitFor();
    }

    /**
     * SIGSTOP: the process freezes mid-whatever (a stop-the-world pause, a VM or node freeze) while its sockets stay
     * open; {@link #resume()} lets it run on as if no time had passed.
     */
    public void pause() {
        signal("STOP");
    }

    /** SIGCONT after {@link #pause()}. */
    public void resume() {
        signal("CONT");
    }

    private void signal(String name) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
            if (kill.waitFor() != 0) {
                throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** SIGTERM, as Kubernetes sends it; waits for the process to exit. */
    public int terminate(Duration timeout) {
        process.destroy();
        try {
            if (!process.waitFor(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                waitFor();
                throw new IllegalStateException(name + " did not stop within " + timeout + " after SIGTERM");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return process.exitValue();
    }

    public boolean isAlive() {
        return process != null && process.isAlive();
    }

    public long pid() {
        return process.pid();
    }

    public int port() {
        return port;
    }

    /** A URI on the API port. */
    public URI uri(String path) {
        return URI.create("http://127.0.0.1:" + port + path);
    }

    /** A URI on the management interface's port: {@code /q/health/...}, {@code /q/metrics}. */
    public URI managementUri(String path) {
        return URI.create("http://127.0.0.1:" + managementPort + path);
    }

    private void waitFor() {
        try {
            process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        if (process != null && process.isAlive()) {
            signal("CONT"); // a paused process does not die of SIGKILL until it runs again on some kernels
            process.destroyForcibly();
            waitFor();
        }
    }

    /**
     * A free loopback port below the kernel's ephemeral range. A port from that range (what {@code new
     * ServerSocket(0)} hands out) can meanwhile become the local end of an outgoing connection, even one of the
     * service's own JDBC connections, and then the service, or its restart after {@code kill -9}, cannot bind it.
     */
    public static synchronized int freePort() {
        int ephemeralLow = 32768;
        try (java.io.BufferedReader in = java.nio.file.Files.newBufferedReader(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
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
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 500; attempt++) {
            int port = low + random.nextInt(slice);
            if (!HANDED_OUT.add(port)) {
                continue;
            }
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new java.net.InetSocketAddress("0.0.0.0", port));
                return port;
            } catch (IOException e) {
                // in use: try another
            }
        }
        throw new IllegalStateException("no free port below " + ephemeralLow);
    }

    private static final java.util.Set<Integer> HANDED_OUT = new java.util.HashSet<>();

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package dev.chargeonce.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real single-node Kafka broker (KRaft: broker and controller in one process, no ZooKeeper) on loopback, in a
 * child JVM of its own, from Maven Central's {@code org.apache.kafka:kafka_2.13} (resolved apart from the service by
 * {@code src/test/kafka/pom.xml}, so no Quarkus BOM reaches its classpath). Starts in about 10-15 s; a test class
 * shares one. JDK only, so that the chaos run compiles it too.
 */
public final class KafkaBroker implements AutoCloseable {

    private final Path dir;
    private final Process process;
    private final int port;

    private KafkaBroker(Path dir, Process process, int port) {
        this.dir = dir;
        this.process = process;
        this.port = port;
    }

    /** {@code host:port} for the clients. */
    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    /** The broker's log (its whole output). */
    public Path log() {
        return dir.resolve("broker.log");
    }

    public static KafkaBroker start(Path workDir) {
        try {
            Files.createDirectories(workDir);
            Path dir = Files.createTempDirectory(workDir, "kafka-");
            String classpath = classpath();
            int port = freePort();
            int controller = freePort();
            Path properties = dir.resolve("server.properties");
            Files.writeString(properties, String.join("\n",
                    "process.roles=broker,controller",
                    "node.id=1",
                    "controller.quorum.voters=1@127.0.0.1:" + controller,
                    "listeners=PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controller,
                    "advertised.listeners=PLAINTEXT://127.0.0.1:" + port,
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "inter.broker.listener.name=PLAINTEXT",
                    "log.dirs=" + dir.resolve("data"),
                    "num.partitions=1",
                    "auto.create.topics.enable=false",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "group.initial.rebalance.delay.ms=0",
                    "") + "\n");
            // A random id as Kafka makes one (Uuid.randomUuid): never one that starts with '-', which the format
            // tool's argument parser takes for an option (1 id in 64; it failed a CI run's Kafka chaos at start).
            String clusterId;
            do {
                byte[] uuid = new byte[16];
                new SecureRandom().nextBytes(uuid);
                clusterId = Base64.getUrlEncoder().withoutPadding().encodeToString(uuid);
            } while (clusterId.startsWith("-"));
            Process format = java(classpath, dir.resolve("format.log"), "kafka.tools.StorageTool", "format", "-t", clusterId,
                    "-c", properties.toString());
            if (!format.waitFor(120, TimeUnit.SECONDS) || format.exitValue() != 0) {
                format.destroyForcibly();
                throw new IllegalStateException("kafka storage format failed: " + Files.readString(dir.resolve("format.log")));
            }
            Process broker = java(classpath, dir.resolve("broker.log"), "kafka.Kafka", properties.toString());
            KafkaBroker started = new KafkaBroker(dir, broker, port);
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (!Files.readString(started.log()).contains("Kafka Server started")) {
                if (!broker.isAlive() || System.nanoTime() > deadline) {
                    String log = Files.readString(started.log());
                    started.close();
                    throw new IllegalStateException("the Kafka broker did not start: ..." + log.substring(Math.max(0, log.length() - 4000)));
                }
                Thread.sleep(200);
            }
            return started;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static Process java(String classpath, Path log, String... mainAndArgs) throws IOException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
                "-cp", classpath));
        command.addAll(List.of(mainAndArgs));
        return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    /**
     * The broker's classpath, resolved once by Maven into {@code target/kafka-broker/classpath} (from the project's
     * root: the working directory of the build, of {@code .ci/run} and of the chaos run).
     */
    static synchronized String classpath() throws IOException, InterruptedException {
        Path root = Path.of("").toAbsolutePath();
        Path pom = root.resolve("src/test/kafka/pom.xml");
        if (!Files.exists(pom)) {
            throw new IllegalStateException("run from the project's root: " + pom + " not found");
        }
        Path file = root.resolve("target/kafka-broker/classpath");
        if (!Files.exists(file) || Files.getLastModifiedTime(file).compareTo(Files.getLastModifiedTime(pom)) < 0) {
            Files.createDirectories(file.getParent());
            Path log = file.resolveSibling("resolve.log");
            ProcessBuilder maven = new ProcessBuilder(root.resolve("mvnw").toString(), "-q", "-B", "-ntp", "-f", pom.toString(),
                    "dependency:build-classpath", "-Dmdep.outputFile=" + file).redirectErrorStream(true).redirectOutput(log.toFile());
            maven.environment().put("JAVA_HOME", System.getProperty("java.home"));
            Process resolve = maven.start();
            if (!resolve.waitFor(10, TimeUnit.MINUTES) || resolve.exitValue() != 0) {
                resolve.destroyForcibly();
                Files.deleteIfExists(file);
                throw new IllegalStateException("could not resolve the Kafka broker from Maven: " + Files.readString(log));
            }
        }
        return Files.readString(file).trim();
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        try (var files = Files.walk(dir.resolve("data"))) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException ignored) {
            // best effort: the data lives under target/
        }
    }
}

package dev.chargeonce.testing;

import java.io.File;
import java.io.IOException;
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
import java.util.function.Consumer;

/**
 * The packaged service ({@code java -jar target/quarkus-app/quarkus-run.jar}) as a real OS process that a test
 * can {@code kill -9}, stop with SIGTERM and start again on the same ports: the API's ({@link #uri}) and the
 * management interface's ({@link #managementUri}: health, metrics), each a free one of its own. Its log goes to
 * {@code target/process-logs/<name>-<n>.log}.
 *
 * <p>It is the one launcher of the service for every harness of the project: the process tests, the chaos runs
 * ({@code chaos/}, which also start the naive control and the Stripe stand-in through it: {@link #builder}) and the
 * benchmarks ({@code bench/lib.sh start_chargeonce}, through {@link ServiceLauncher}). JDK only, so that the scripts
 * compile it with plain {@code javac} (with {@link FreePorts}, where its ports come from).
 */
public final class ServiceProcess implements AutoCloseable {

    private static final Path JAR = Path.of("target", "quarkus-app", "quarkus-run.jar");
    private static final Path TEST_LOGS = Path.of("target", "process-logs");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private final String name;
    /** What follows the JVM options: {@code -jar <quarkus-run.jar>}, or {@code -cp <classpath> <main class> <args>}. */
    private final List<String> program;
    /** Whether the program is the packaged service (a Quarkus application told its ports as config properties). */
    private final boolean quarkus;
    private final List<String> jvmOptions;
    private final int port;
    private final int managementPort;
    private final String readyPath;
    private final Path logDirectory;
    /** A log file of its own for every start (the default), or this one file for all of them. */
    private final Path logFile;
    private final Map<String, String> config;
    /** Environment variables on top of the test JVM's own (as a Deployment sets them: k8s/). */
    private final Map<String, String> environment;
    /** Told of every process started, before it is ready (a harness records its children, to kill them if it dies). */
    private final Consumer<Process> onLaunch;
    private Process process;
    private int starts;

    /** Whether the build behind {@code quarkusRunJar} has the Stripe rate budget (its application jar holds the class). */
    private static boolean knowsRateBudget(Path quarkusRunJar) {
        Path app = quarkusRunJar.toAbsolutePath().getParent().resolve("app");
        try (var jars = Files.list(app)) {
            for (Path jar : jars.filter(p -> p.toString().endsWith(".jar")).toList()) {
                try (var zip = new java.util.zip.ZipFile(jar.toFile())) {
                    if (zip.getEntry("dev/chargeonce/ratebudget/BudgetConfig.class") != null) {
                        return true;
                    }
                }
            }
            return false;
        } catch (IOException e) {
            return false;
        }
    }

    private ServiceProcess(Builder b) {
        this.name = b.name;
        this.quarkus = b.mainClass == null;
        this.port = b.port != 0 ? b.port : FreePorts.freePort();
        this.managementPort = !quarkus ? port : b.managementPort != 0 ? b.managementPort : FreePorts.freePort();
        List<String> program = new ArrayList<>();
        if (quarkus) {
            program.addAll(List.of("-jar", b.jar.toString()));
        } else {
            program.addAll(List.of("-cp", b.classpath, b.mainClass));
            program.addAll(b.arguments);
        }
        this.program = List.copyOf(program);
        this.jvmOptions = List.copyOf(b.jvmOptions);
        this.readyPath = b.readyPath != null ? b.readyPath : "/q/health/ready";
        this.logDirectory = b.logDirectory;
        this.logFile = b.logFile;
        Map<String, String> config = new java.util.LinkedHashMap<>(b.config);
        if (quarkus && knowsRateBudget(b.jar)) {
            // The harness's Stripe is the sandbox, which limits no rate unless a run switches it on: the service's
            // rate budget sits far above what any run sends, unless the run sets it. (Not for an earlier release
            // without the budget: it would refuse a setting it does not know.)
            for (String endpoint : List.of("\"payment_intents.create\"", "\"refunds.create\"", "reads")) {
                config.putIfAbsent("chargeonce.stripe.budget.rates." + endpoint, "100000");
            }
            config.putIfAbsent("chargeonce.stripe.budget.global-rate", "1000000");
        }
        this.config = config;
        this.environment = Map.copyOf(b.environment);
        this.onLaunch = b.onLaunch;
    }

    /**
     * A process not started yet: the packaged service unless {@link Builder#mainClass} says otherwise, on free ports
     * unless given, logging to {@code target/process-logs}. {@link #startProcess(Duration)} starts it.
     */
    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** How to run a {@link ServiceProcess}; every setting has the process tests' default. */
    public static final class Builder {
        private final String name;
        private Path jar = JAR;
        private String classpath;
        private String mainClass;
        private final List<String> arguments = new ArrayList<>();
        private final List<String> jvmOptions = new ArrayList<>(List.of("-Xmx256m"));
        private int port;
        private int managementPort;
        private String readyPath;
        private Path logDirectory = TEST_LOGS;
        private Path logFile;
        private final Map<String, String> config = new LinkedHashMap<>();
        private final Map<String, String> environment = new LinkedHashMap<>();
        private Consumer<Process> onLaunch = process -> { };

        private Builder(String name) {
            this.name = name;
        }

        /** Another build of the service (its {@code quarkus-run.jar}): an earlier release, or a benchmark's other build. */
        public Builder jar(Path jar) {
            this.jar = jar;
            return this;
        }

        /**
         * Not the service but another Java program that answers HTTP on {@link #port} (the chaos run's naive control,
         * the Stripe stand-in in a process of its own): no management interface, ready when {@link #readyPath} on
         * that port answers 200. Its arguments are its own business (the port among them, usually).
         */
        public Builder mainClass(String classpath, String mainClass, String... arguments) {
            this.classpath = classpath;
            this.mainClass = mainClass;
            this.arguments.addAll(List.of(arguments));
            return this;
        }

        /** The JVM's options, instead of the default {@code -Xmx256m}. */
        public Builder jvmOptions(List<String> options) {
            jvmOptions.clear();
            jvmOptions.addAll(options);
            return this;
        }

        /** The API's port (default: a free one). */
        public Builder port(int port) {
            this.port = port;
            return this;
        }

        /** The management interface's port (default: a free one). */
        public Builder managementPort(int port) {
            this.managementPort = port;
            return this;
        }

        /** What answers 200 once the process is ready (default {@code /q/health/ready} on the management port). */
        public Builder readyPath(String path) {
            this.readyPath = path;
            return this;
        }

        /** Where its logs go, {@code <name>-<n>.log} for the n-th start (default {@code target/process-logs}). */
        public Builder logDirectory(Path directory) {
            this.logDirectory = directory;
            return this;
        }

        /** One log file for every start (a benchmark's {@code service.log}) instead of one per start. */
        public Builder logFile(Path file) {
            this.logFile = file;
            return this;
        }

        /** Config properties, passed as {@code -D} system properties. */
        public Builder config(Map<String, String> config) {
            this.config.putAll(config);
            return this;
        }

        public Builder environment(Map<String, String> environment) {
            this.environment.putAll(environment);
            return this;
        }

        /** Called with every process started, right after it started (it may kill it and throw: the start fails). */
        public Builder onLaunch(Consumer<Process> onLaunch) {
            this.onLaunch = onLaunch;
            return this;
        }

        /** The process, not started. */
        public ServiceProcess build() {
            return new ServiceProcess(this);
        }
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
            ServiceProcess service = builder(name).jar(jar).config(config).build();
            try {
                service.startProcess();
                return service;
            } catch (IllegalStateException e) {
                service.close();
                // A port found free here was taken before the service bound it: on a machine whose ephemeral range
                // reaches below the ports handed out here, an outgoing connection's local end can take it. Start
                // again (new ports), not a failed test; anything else the start logged fails the test as it is.
                String log = service.log();
                java.util.regex.Matcher cause = START_AGAIN.matcher(log);
                if (attempt == 3 || !cause.find()) {
                    throw e;
                }
                try {
                    Files.move(TEST_LOGS.resolve(name + "-1.log"), TEST_LOGS.resolve(name + "-start-failed-" + attempt + ".log"),
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
            "QuarkusBindException|Address already in use|seems to be in use");

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
        try (ServiceProcess service = builder(name).config(config).environment(environment).build()) {
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

    /** Up to 3 minutes: on Citus, on a busy machine, the migrations alone took more than one. */
    public void startProcess() {
        startProcess(Duration.ofMinutes(3));
    }

    /**
     * Starts the process (again, on the same ports) and waits until it is ready. Throws when it exits first, or is
     * not ready within {@code timeout}: then it is left running ({@link #isAlive()} tells the two apart).
     */
    public void startProcess(Duration timeout) {
        awaitReady(timeout, launch());
    }

    public String name() {
        return name;
    }

    /** What the process (its latest start) has written to its log so far. */
    public String log() {
        try {
            return Files.readString(currentLog());
        } catch (IOException e) {
            return "";
        }
    }

    /** The log of its latest start (or the one it is starting). */
    public Path logPath() {
        return currentLog();
    }

    private Path currentLog() {
        return logFile != null ? logFile : logDirectory.resolve(name + "-" + starts + ".log");
    }

    private File launch() {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.addAll(jvmOptions);
        if (quarkus) {
            command.add("-Dquarkus.http.port=" + port);
            command.add("-Dquarkus.management.port=" + managementPort);
            command.add("-Dquarkus.log.console.json.enabled=false");
        }
        config.forEach((k, v) -> command.add("-D" + k + "=" + v));
        command.addAll(program);
        starts++;
        File log = currentLog().toFile();
        if (log.getParentFile() != null) {
            log.getParentFile().mkdirs();
        }
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log);
            builder.environment().putAll(environment);
            process = builder.start();
        } catch (IOException e) {
            throw new IllegalStateException("could not start " + name, e);
        }
        onLaunch.accept(process);
        return log;
    }

    private boolean ready() {
        try {
            return HTTP.send(HttpRequest.newBuilder(managementUri(readyPath)).timeout(Duration.ofSeconds(2)).build(),
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

    /** The same, waiting at most {@code timeout} for the process to be gone; false when it is still there. */
    public boolean kill9(Duration timeout) {
        Process p = process;
        if (p == null) {
            return true;
        }
        p.destroyForcibly();
        try {
            return p.waitFor(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
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
        if (stop(timeout, null) != Stop.STOPPED) {
            throw new IllegalStateException(name + " did not stop within " + timeout + " after SIGTERM");
        }
        return process.exitValue();
    }

    /** How a {@link #stop} ended. */
    public enum Stop {
        /** It exited within the grace after SIGTERM. */
        STOPPED,
        /** It did not, and was killed (SIGKILL) then. */
        KILLED,
        /** It was still there after SIGKILL too. */
        STILL_RUNNING
    }

    /**
     * SIGTERM, then SIGKILL when the process has not exited within {@code grace}; waits for it to be gone at most
     * {@code afterKill} (null: as long as it takes).
     */
    public Stop stop(Duration grace, Duration afterKill) {
        Process p = process;
        if (p == null) {
            return Stop.STOPPED;
        }
        p.destroy();
        try {
            if (p.waitFor(grace.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)) {
                return Stop.STOPPED;
            }
            p.destroyForcibly();
            if (afterKill == null) {
                p.waitFor();
                return Stop.KILLED;
            }
            return p.waitFor(afterKill.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS) ? Stop.KILLED : Stop.STILL_RUNNING;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return p.isAlive() ? Stop.STILL_RUNNING : Stop.STOPPED;
        }
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

    /** The management interface's port (the API's, for a program that has none). */
    public int managementPort() {
        return managementPort;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

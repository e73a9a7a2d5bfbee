import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * The chaos run of chaos/run.sh: many clients paying against several instances of a target that share one
 * PostgreSQL primary, while instances are killed (-9) and stopped (SIGTERM) and restarted, the database is cut
 * away from instances through TCP proxies this harness owns, and the Stripe stand-in switches faults. Then the
 * faults stop, recovery finishes, and an audit compares what the clients were told, what the rows hold and what
 * Stripe has. Run against chargeonce and against the deliberately naive control (chaos/NaiveService.java).
 *
 * <p>Everything runs on 127.0.0.1. Every process it starts is recorded in {@code <work>/children.pids} and
 * killed on exit (and by run.sh's trap, should this JVM itself die).
 */
public class Chaos {

    // ---- options ------------------------------------------------------------------------------------------------

    static final Map<String, String> OPT = new LinkedHashMap<>();

    static String opt(String name, String fallback) {
        return OPT.getOrDefault(name, fallback);
    }

    static long seconds(String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (v.endsWith("m")) {
            return Long.parseLong(v.substring(0, v.length() - 1)) * 60;
        }
        return Long.parseLong(v.endsWith("s") ? v.substring(0, v.length() - 1) : v);
    }

    static final String ACME_KEY = "sk_acme_0123456789";
    static final String GLOBEX_KEY = "sk_globex_9876543210";
    static final PrintStream OUT = System.out;
    static final Set<Process> CHILDREN = ConcurrentHashMap.newKeySet();
    static Path work;
    static Path results;
    /** Set on the way out: no process is started any more (a restart in flight must not outlive the harness). */
    static volatile boolean stopping;

    public static void main(String[] args) throws Exception {
        for (int i = 0; i + 1 < args.length; i += 2) {
            OPT.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        work = Path.of(opt("work", "/tmp"));
        results = Path.of(opt("results", work.toString()));
        Files.createDirectories(results.resolve("logs"));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            CHILDREN.forEach(Process::destroyForcibly);
        }));

        long duration = seconds(opt("duration", "180s"));
        long naiveDuration = seconds(opt("naive-duration", opt("duration", "180s")));
        long seed = Long.parseLong(opt("seed", Long.toString(System.currentTimeMillis())));
        log("seed " + seed + " (pass --seed " + seed + " to replay the same fault and client schedule)");

        List<Audit> audits = new ArrayList<>();
        Audit real = new Run(Variant.CHARGEONCE, duration, seed).execute();
        audits.add(real);
        Audit naive = null;
        if (!Boolean.parseBoolean(opt("skip-naive", "false"))) {
            naive = new Run(Variant.NAIVE, naiveDuration, seed).execute();
            audits.add(naive);
        }
        String table = Audit.sideBySide(audits);
        OUT.println();
        OUT.println(table);
        Files.writeString(results.resolve("report.md"), table);

        int exit = 0;
        if (real.violations() > 0) {
            OUT.println("FAIL: chargeonce charged twice, lost a payment or answered inconsistently (" + real.violations()
                    + " violations); evidence in " + results);
            exit = 1;
        } else {
            OUT.println("PASS: chargeonce: no duplicate, no loss, every row terminal, every replay identical.");
        }
        if (naive != null) {
            if (naive.duplicatePayments == 0) {
                OUT.println((Boolean.parseBoolean(opt("require-naive-duplicates", "false")) ? "FAIL" : "WARNING")
                        + ": the naive control shows no duplicate: the audit could not prove that it sees them.");
                if (Boolean.parseBoolean(opt("require-naive-duplicates", "false"))) {
                    exit = exit == 0 ? 3 : exit;
                }
            } else {
                OUT.println("Control: the naive check-then-act variant charged " + naive.duplicatePayments
                        + " payments more than once under the same chaos: the audit sees duplicates.");
            }
        }
        CHILDREN.forEach(Process::destroyForcibly);
        System.exit(exit);
    }

    static void log(String message) {
        System.err.printf("[%tT] %s%n", System.currentTimeMillis(), message);
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(Math.max(0, millis));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static String clientsConfig() {
        return "acme:" + sha256(ACME_KEY) + ",globex:" + sha256(GLOBEX_KEY);
    }

    static final Set<Integer> PORTS_TAKEN = ConcurrentHashMap.newKeySet();

    /**
     * A free port below the kernel's ephemeral range, so that an instance can bind it again when it restarts (a port
     * in the ephemeral range may meanwhile be the local end of some outgoing connection).
     */
    static int freePort() {
        int ephemeralLow = 32768;
        // Read the procfs file as a stream: Files.readString trusts its reported size and can return a truncated value.
        try (java.io.BufferedReader in = Files.newBufferedReader(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
            String line = in.readLine();
            int parsed = Integer.parseInt(line.trim().split("\\s+")[0]);
            if (parsed > 4_096) {
                ephemeralLow = parsed;
            }
        } catch (IOException | RuntimeException e) {
            // keep the usual default
        }
        int low = Math.max(1024, Math.min(20_000, ephemeralLow - 2_000));
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int i = 0; i < 500; i++) {
            int port = low + random.nextInt(ephemeralLow - low);
            if (PORTS_TAKEN.contains(port)) {
                continue;
            }
            try (ServerSocket s = new ServerSocket()) {
                s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
                PORTS_TAKEN.add(port);
                return port;
            } catch (IOException e) {
                // taken: try another
            }
        }
        throw new IllegalStateException("no free port below " + ephemeralLow);
    }

    static synchronized void recordChild(Process p) {
        if (stopping) {
            p.destroyForcibly();
            throw new IllegalStateException("the harness is stopping");
        }
        CHILDREN.add(p);
        try {
            Files.writeString(work.resolve("children.pids"), p.pid() + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    // ---- the two targets -------------------------------------------------------------------------------------------

    enum Variant {
        CHARGEONCE("chargeonce", "chargeonce", "/q/health/ready"),
        NAIVE("naive check-then-act", "naive", "/health");

        final String label;
        final String database;
        final String readyPath;

        Variant(String label, String database, String readyPath) {
            this.label = label;
            this.database = database;
            this.readyPath = readyPath;
        }
    }

    /** A TCP proxy in front of PostgreSQL: cut() drops every connection and refuses new ones until restore(). */
    static final class TcpProxy implements AutoCloseable {
        final ServerSocket listener;
        final int targetPort;
        final Set<Socket> open = ConcurrentHashMap.newKeySet();
        volatile boolean cut;
        volatile boolean closed;

        TcpProxy(int targetPort) throws IOException {
            this.targetPort = targetPort;
            listener = new ServerSocket();
            listener.setReuseAddress(true);
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 512);
            Thread.ofPlatform().daemon().name("proxy-" + port()).start(this::accept);
        }

        int port() {
            return listener.getLocalPort();
        }

        void cut() {
            cut = true;
            for (Socket s : open) {
                closeQuietly(s);
            }
            open.clear();
        }

        void restore() {
            cut = false;
        }

        void accept() {
            while (!closed) {
                try {
                    Socket client = listener.accept();
                    if (cut) {
                        client.setSoLinger(true, 0);
                        closeQuietly(client);
                        continue;
                    }
                    Socket upstream;
                    try {
                        upstream = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                    } catch (IOException e) {
                        closeQuietly(client);
                        continue;
                    }
                    client.setTcpNoDelay(true);
                    upstream.setTcpNoDelay(true);
                    open.add(client);
                    open.add(upstream);
                    Thread.ofVirtual().start(() -> pump(client, upstream));
                    Thread.ofVirtual().start(() -> pump(upstream, client));
                } catch (IOException e) {
                    if (closed) {
                        return;
                    }
                }
            }
        }

        void pump(Socket from, Socket to) {
            byte[] buffer = new byte[16 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while (!cut && (n = in.read(buffer)) >= 0) {
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // one side closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
                open.remove(from);
                open.remove(to);
            }
        }

        static void closeQuietly(Socket s) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closed already
            }
        }

        @Override
        public void close() throws IOException {
            closed = true;
            cut();
            listener.close();
        }
    }

    /** One instance of the target: a process on a fixed port, reaching the database through its own proxies. */
    static final class Instance {
        final Variant variant;
        final int index;
        final int port;
        final TcpProxy primaryProxy;
        final TcpProxy replicaProxy;
        final String stripeBase;
        volatile Process process;
        volatile boolean busy; // being stopped or started by the fault schedule
        int starts;

        Instance(Variant variant, int index, TcpProxy primaryProxy, TcpProxy replicaProxy, String stripeBase) {
            this.variant = variant;
            this.index = index;
            this.port = freePort();
            this.primaryProxy = primaryProxy;
            this.replicaProxy = replicaProxy;
            this.stripeBase = stripeBase;
        }

        String name() {
            return variant.database + "-" + index;
        }

        List<String> command() {
            String java = opt("java", "java");
            List<String> cmd = new ArrayList<>();
            cmd.add(java);
            if (variant == Variant.CHARGEONCE) {
                String db = "jdbc:postgresql://127.0.0.1:" + primaryProxy.port() + "/" + variant.database;
                cmd.addAll(List.of("-Xmx256m", "-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port=" + port,
                        "-Dquarkus.log.console.json.enabled=false",
                        "-Dquarkus.datasource.jdbc.url=" + db, "-Dquarkus.datasource.username=postgres",
                        "-Dquarkus.datasource.password=x",
                        "-Dchargeonce.stripe.api-key=sk_test_sandbox", "-Dchargeonce.stripe.api-base=" + stripeBase,
                        "-Dchargeonce.auth.clients=" + clientsConfig(),
                        // Short leases and a fast recovery worker, so that crashes resolve within the run.
                        "-Dchargeonce.idempotency.lease=" + opt("lease", "3s"),
                        "-Dchargeonce.recovery.enabled=true", "-Dchargeonce.recovery.interval=1s",
                        "-Dchargeonce.recovery.initial-delay=1s", "-Dchargeonce.shutdown.grace=5s",
                        // The stand-in runs on this host's clock, so the lookup needs no clock-skew margin; with the
                        // default 10 minutes, the lookup after a Stripe 5xx pages through every PaymentIntent this run
                        // created in 10 minutes and gives up past 50 pages (see README, Chaos).
                        "-Dchargeonce.stripe.lookup-skew=" + opt("lookup-skew", "10s")));
                if (replicaProxy != null) {
                    cmd.addAll(List.of("-Dquarkus.datasource.replica.jdbc.url=jdbc:postgresql://127.0.0.1:" + replicaProxy.port()
                            + "/" + variant.database, "-Dquarkus.datasource.replica.username=postgres",
                            "-Dquarkus.datasource.replica.password=x"));
                }
                cmd.addAll(List.of("-jar", opt("service-jar", "target/quarkus-app/quarkus-run.jar")));
            } else {
                String primary = "jdbc:postgresql://127.0.0.1:" + primaryProxy.port() + "/" + variant.database;
                String lookup = replicaProxy == null ? primary
                        : "jdbc:postgresql://127.0.0.1:" + replicaProxy.port() + "/" + variant.database;
                cmd.addAll(List.of("-Xmx256m", "-cp", opt("naive-classpath", ""), "NaiveService", Integer.toString(port),
                        primary, lookup, stripeBase, clientsConfig()));
            }
            return cmd;
        }

        /** Starts the process and waits until it is ready (or gives up after the timeout, leaving it running). */
        synchronized void start(Duration timeout) {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                File logFile = results.resolve("logs").resolve(name() + "-" + (++starts) + ".log").toFile();
                try {
                    process = new ProcessBuilder(command()).redirectErrorStream(true).redirectOutput(logFile).start();
                } catch (IOException e) {
                    throw new IllegalStateException("cannot start " + name(), e);
                }
                recordChild(process);
                while (System.nanoTime() < deadline && process.isAlive()) {
                    if (Http.ready(URI.create("http://127.0.0.1:" + port + variant.readyPath))) {
                        return;
                    }
                    sleep(150);
                }
                if (process.isAlive()) {
                    return; // not ready in time (database cut?): leave it running, clients will retry
                }
                log(name() + " exited during start (see " + logFile + "); starting again");
                sleep(500);
            }
        }

        void kill9() {
            Process p = process;
            if (p != null) {
                p.destroyForcibly();
                try {
                    p.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        void terminate() {
            Process p = process;
            if (p != null) {
                p.destroy();
                try {
                    if (!p.waitFor(15, TimeUnit.SECONDS)) {
                        log(name() + " did not stop within 15 s of SIGTERM; killing it");
                        p.destroyForcibly();
                        p.waitFor(10, TimeUnit.SECONDS);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        boolean alive() {
            Process p = process;
            return p != null && p.isAlive();
        }

        URI charges() {
            return URI.create("http://127.0.0.1:" + port + "/v1/charges");
        }
    }

    // ---- HTTP ----------------------------------------------------------------------------------------------------

    record Answer(int status, String body, boolean replayed, String retryAfter) {
        boolean isFinal() {
            return status == 201 || status == 402 || status == 400 || status == 422;
        }

        String describe() {
            return status + (replayed ? " (replayed)" : "") + " " + (body == null ? "" : body.length() > 300 ? body.substring(0, 300) + "…" : body);
        }
    }

    static final class Http {
        static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(1)).executor(Executors.newVirtualThreadPerTaskExecutor()).build();

        static Answer post(URI uri, String apiKey, String key, String body, Duration timeout) {
            HttpRequest request = HttpRequest.newBuilder(uri).timeout(timeout)
                    .header("Authorization", "Bearer " + apiKey).header("Idempotency-Key", key)
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
            try {
                HttpResponse<String> r = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
                return new Answer(r.statusCode(), r.body(), r.headers().firstValue("Idempotent-Replayed").isPresent(),
                        r.headers().firstValue("Retry-After").orElse(null));
            } catch (IOException e) {
                return new Answer(-1, e.getClass().getSimpleName(), false, null);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Answer(-1, "interrupted", false, null);
            }
        }

        static Answer get(URI uri, String apiKey, Duration timeout) {
            try {
                HttpResponse<String> r = CLIENT.send(HttpRequest.newBuilder(uri).timeout(timeout)
                        .header("Authorization", "Bearer " + apiKey).GET().build(), HttpResponse.BodyHandlers.ofString());
                return new Answer(r.statusCode(), r.body(), false, null);
            } catch (IOException e) {
                return new Answer(-1, e.getClass().getSimpleName(), false, null);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Answer(-1, "interrupted", false, null);
            }
        }

        static String call(String method, URI uri) throws IOException {
            try {
                HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30));
                b = method.equals("POST") ? b.POST(HttpRequest.BodyPublishers.noBody()) : b.GET();
                HttpResponse<String> r = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    throw new IOException(method + " " + uri + " -> " + r.statusCode() + " " + r.body());
                }
                return r.body();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            }
        }

        static boolean ready(URI uri) {
            try {
                HttpResponse<Void> r = CLIENT.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(2)).build(),
                        HttpResponse.BodyHandlers.discarding());
                return r.statusCode() == 200;
            } catch (IOException e) {
                return false;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    /** The Stripe stand-in (dev.chargeonce.sandbox.StripeSandbox) as its own process, and its control plane. */
    static final class Stripe {
        final int port = freePort();
        Process process;

        void start() throws IOException {
            process = new ProcessBuilder(opt("java", "java"), "-Xmx1g", "-cp", opt("sandbox-jar", ""),
                    "dev.chargeonce.sandbox.StripeSandbox", Integer.toString(port), "0")
                    .redirectErrorStream(true).redirectOutput(results.resolve("logs").resolve("stripe-" + port + ".log").toFile()).start();
            recordChild(process);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (System.nanoTime() < deadline) {
                try {
                    Http.call("GET", URI.create(base() + "/_sandbox/stats"));
                    return;
                } catch (IOException e) {
                    sleep(100);
                }
            }
            throw new IllegalStateException("Stripe stand-in did not start");
        }

        String base() {
            return "http://127.0.0.1:" + port;
        }

        void faults(String query) {
            try {
                Http.call("POST", URI.create(base() + "/_sandbox/faults?" + query));
            } catch (IOException e) {
                log("sandbox faults " + query + " failed: " + e.getMessage());
            }
        }

        String get(String path) throws IOException {
            return Http.call("GET", URI.create(base() + path));
        }

        void stop() {
            if (process != null) {
                process.destroyForcibly();
            }
        }
    }

    // ---- clients and payments ----------------------------------------------------------------------------------------

    /** One logical payment: one client, one Idempotency-Key, one body; everything every request of it was told. */
    static final class Payment {
        final String id;
        final String client;
        final String apiKey;
        final String key;
        final String body;
        final String conflictingBody;
        final AtomicReference<Answer> firstFinal = new AtomicReference<>();
        final List<Answer> finals = Collections.synchronizedList(new ArrayList<>());
        final List<Answer> conflictAnswers = Collections.synchronizedList(new ArrayList<>());
        /** GET /v1/charges/{id} asked right after the 201 (read-your-writes, through the replica when configured). */
        final List<Answer> readsAfterSuccess = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger requests = new AtomicInteger();
        volatile boolean duplicatedConcurrently;

        Payment(String id, String client, String apiKey, String key, long amount, String paymentMethod) {
            this.id = id;
            this.client = client;
            this.apiKey = apiKey;
            this.key = key;
            this.body = body(amount, paymentMethod);
            this.conflictingBody = body(amount + 1, paymentMethod);
        }

        String body(long amount, String paymentMethod) {
            return "{\"amount\":" + amount + ",\"currency\":\"usd\",\"payment_method\":\"" + paymentMethod
                    + "\",\"metadata\":{\"chaos_payment\":\"" + id + "\"}}";
        }

        void record(Answer a) {
            if (a.isFinal()) {
                firstFinal.compareAndSet(null, a);
                finals.add(a);
            }
        }
    }

    /** Counts of every answer clients got, by status (-1: connection failed or timed out). */
    static final class Tally {
        final Map<Integer, AtomicLong> byStatus = new ConcurrentHashMap<>();
        final AtomicLong requests = new AtomicLong();

        void count(Answer a) {
            requests.incrementAndGet();
            byStatus.computeIfAbsent(a.status(), s -> new AtomicLong()).incrementAndGet();
        }

        long of(int status) {
            AtomicLong n = byStatus.get(status);
            return n == null ? 0 : n.get();
        }

        long other() {
            long known = of(201) + of(402) + of(409) + of(422) + of(503) + of(-1);
            return requests.get() - known;
        }
    }

    /** The fault schedule's log: what was done, when. */
    static final class FaultLog {
        final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
        final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
        final long t0 = System.currentTimeMillis();

        void note(String kind, String detail) {
            counts.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
            String line = String.format(Locale.ROOT, "%7.2fs %s %s", (System.currentTimeMillis() - t0) / 1000.0, kind, detail);
            events.add(line);
        }

        int of(String kind) {
            AtomicInteger n = counts.get(kind);
            return n == null ? 0 : n.get();
        }
    }

    // ---- one run against one variant --------------------------------------------------------------------------------

    static final class Run {
        final Variant variant;
        final long durationSeconds;
        final SplittableRandom random;
        final Stripe stripe = new Stripe();
        final List<Instance> instances = new ArrayList<>();
        final List<Payment> payments = Collections.synchronizedList(new ArrayList<>());
        final Tally tally = new Tally();
        final FaultLog faults = new FaultLog();
        final ExecutorService background = Executors.newVirtualThreadPerTaskExecutor();
        final AtomicLong latencyGeneration = new AtomicLong();
        volatile boolean faultsOn = true;
        long endAt;

        Run(Variant variant, long durationSeconds, long seed) {
            this.variant = variant;
            this.durationSeconds = durationSeconds;
            this.random = new SplittableRandom(seed);
        }

        synchronized SplittableRandom rnd() {
            return random.split();
        }

        Audit execute() throws Exception {
            log("=== " + variant.label + ": " + durationSeconds + " s of chaos ===");
            prepareDatabase();
            stripe.start();
            int n = Integer.parseInt(opt("instances", "2"));
            int pgPort = Integer.parseInt(opt("pg-port", "5432"));
            int replicaPort = Integer.parseInt(opt("replica-port", "0"));
            boolean replicaForThis = replicaPort > 0 && (variant == Variant.NAIVE
                    || Boolean.parseBoolean(opt("service-replica", "false")));
            for (int i = 0; i < n; i++) {
                instances.add(new Instance(variant, i, new TcpProxy(pgPort), replicaForThis ? new TcpProxy(replicaPort) : null,
                        stripe.base()));
            }
            for (Instance instance : instances) {
                instance.start(Duration.ofSeconds(90));
                if (!instance.alive()) {
                    throw new IllegalStateException(instance.name() + " did not start; see " + results.resolve("logs"));
                }
            }
            log(n + " instances up" + (!replicaForThis ? "" : variant == Variant.NAIVE ? ", key lookups on the lagging replica"
                    : ", replica datasource configured (GETs; the idempotency path stays on the primary)"));

            long start = System.currentTimeMillis();
            endAt = start + durationSeconds * 1000;
            Thread scheduler = Thread.ofVirtual().start(this::faultSchedule);
            int clients = Integer.parseInt(opt("clients", "24"));
            List<Thread> workers = new ArrayList<>();
            for (int i = 0; i < clients; i++) {
                SplittableRandom r = rnd();
                workers.add(Thread.ofVirtual().start(() -> clientLoop(r)));
            }
            Thread progress = Thread.ofVirtual().start(() -> {
                while (System.currentTimeMillis() < endAt) {
                    sleep(15_000);
                    log(String.format(Locale.ROOT, "  %s: %d payments, %d requests, faults %s", variant.database,
                            payments.size(), tally.requests.get(), faults.counts));
                }
            });
            for (Thread w : workers) {
                w.join();
            }
            scheduler.join();
            progress.interrupt();
            long chaosMillis = System.currentTimeMillis() - start;

            // ---- the faults stop; every instance comes back; recovery finishes
            faultsOn = false;
            background.shutdown();
            background.awaitTermination(120, TimeUnit.SECONDS);
            for (Instance instance : instances) {
                instance.primaryProxy.restore();
                if (instance.replicaProxy != null) {
                    instance.replicaProxy.restore();
                }
            }
            stripe.faults("latency_ms=0&fail_before=0&fail_after=0&drop_after=0&rate_limit=0");
            for (Instance instance : instances) {
                if (!instance.alive()) {
                    instance.start(Duration.ofSeconds(90));
                }
            }
            log("chaos over after " + chaosMillis / 1000 + " s; waiting for recovery to finish every row");
            long recoveryStart = System.currentTimeMillis();
            long recoveryDeadline = recoveryStart + seconds(opt("recovery-timeout", "120s")) * 1000;
            long unfinished;
            while ((unfinished = unfinishedRows()) > 0 && System.currentTimeMillis() < recoveryDeadline) {
                sleep(500);
            }
            long recoveryMillis = System.currentTimeMillis() - recoveryStart;
            log("rows not terminal after " + recoveryMillis + " ms: " + unfinished);

            // ---- every client asks once more: the final answer must be the one it got first
            finalRound();

            Audit audit = Audit.of(this, chaosMillis, recoveryMillis, unfinished);
            Files.writeString(results.resolve(variant.database + "-faults.log"), String.join("\n", faults.events) + "\n");
            for (Instance instance : instances) {
                instance.kill9();
                instance.primaryProxy.close();
                if (instance.replicaProxy != null) {
                    instance.replicaProxy.close();
                }
            }
            stripe.stop();
            return audit;
        }

        void prepareDatabase() throws SQLException {
            if (variant == Variant.NAIVE) {
                try (Connection c = Audit.connect(variant); Statement s = c.createStatement()) {
                    // The naive table: enough columns for the same audit query; a unique key, as a careful-looking
                    // naive design would have. It does not help: the Stripe call happens before the INSERT.
                    s.execute("""
                            CREATE TABLE IF NOT EXISTS stripe_intents (
                                id text PRIMARY KEY, client_id text NOT NULL, idempotency_key text NOT NULL,
                                fingerprint text NOT NULL, status text NOT NULL, response_status integer,
                                response_body text, payment_intent_id text,
                                needs_reconciliation boolean NOT NULL DEFAULT false,
                                created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                                UNIQUE (client_id, idempotency_key))""");
                }
                // Let the lagging replica catch up with the new table before the naive service looks at it.
                sleep(Long.parseLong(opt("replica-delay-ms", "0")) + 1000);
            }
        }

        long unfinishedRows() {
            try (Connection c = Audit.connect(variant); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT count(*) FROM stripe_intents WHERE status NOT IN ('completed', 'failed') OR needs_reconciliation")) {
                rs.next();
                return rs.getLong(1);
            } catch (SQLException e) {
                return Long.MAX_VALUE;
            }
        }

        // ---- clients

        Instance anyInstance(SplittableRandom r) {
            return instances.get(r.nextInt(instances.size()));
        }

        Payment newPayment(SplittableRandom r) {
            boolean acme = r.nextBoolean();
            int roll = r.nextInt(100);
            String pm = roll < 90 ? "pm_card_visa" : roll < 97 ? "pm_card_chargeDeclined" : "pm_card_authenticationRequired";
            String id = "pay_" + UUID.randomUUID().toString().replace("-", "").substring(0, 20);
            Payment p = new Payment(id, acme ? "acme" : "globex", acme ? ACME_KEY : GLOBEX_KEY,
                    "chaos-" + UUID.randomUUID(), 100 + r.nextInt(99_900), pm);
            payments.add(p);
            return p;
        }

        Answer send(Payment p, String body, SplittableRandom r, Duration timeout) {
            p.requests.incrementAndGet();
            Answer a = Http.post(anyInstance(r).charges(), p.apiKey, p.key, body, timeout);
            tally.count(a);
            return a;
        }

        /** Retries until a final answer (or the deadline): timeouts are random, as impatient clients' are. */
        void driveUntilFinal(Payment p, SplittableRandom r, long deadline) {
            while (p.firstFinal.get() == null && System.currentTimeMillis() < deadline) {
                Duration timeout = Duration.ofMillis(300 + r.nextInt(3_700));
                Answer a = send(p, p.body, r, timeout);
                p.record(a);
                if (a.isFinal()) {
                    return;
                }
                long backoff = a.status() == -1 ? 50 + r.nextInt(400) : 100 + r.nextInt(700);
                sleep(backoff);
            }
        }

        void clientLoop(SplittableRandom r) {
            while (System.currentTimeMillis() < endAt) {
                Payment p = newPayment(r);
                List<Thread> duplicates = new ArrayList<>();
                if (r.nextInt(100) < 15) {
                    // The same request sent concurrently: a double click, a proxy retry, two pods of the caller.
                    p.duplicatedConcurrently = true;
                    int extra = 1 + r.nextInt(3);
                    for (int i = 0; i < extra; i++) {
                        SplittableRandom dr = r.split();
                        duplicates.add(Thread.ofVirtual().start(() -> driveUntilFinal(p, dr, endAt)));
                    }
                }
                driveUntilFinal(p, r, endAt);
                for (Thread d : duplicates) {
                    try {
                        d.join();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
                if (p.firstFinal.get() == null) {
                    continue; // the final round asks again
                }
                Answer first = p.firstFinal.get();
                if (variant == Variant.CHARGEONCE && first.status() == 201 && r.nextInt(100) < 20) {
                    readAfterSuccess(p, first, r);
                }
                if (r.nextInt(100) < 20) {
                    Answer replay = send(p, p.body, r, Duration.ofSeconds(5));
                    p.record(replay);
                }
                if (r.nextInt(100) < 3) {
                    // Same key, another body: must be refused (422), never charged.
                    for (int i = 0; i < 5; i++) {
                        Answer a = send(p, p.conflictingBody, r, Duration.ofSeconds(5));
                        if (a.isFinal()) {
                            p.conflictAnswers.add(a);
                            break;
                        }
                        sleep(200);
                    }
                }
            }
        }

        /** A GET of the charge right after its 201, on any instance: must never be 404 (read-your-writes). */
        void readAfterSuccess(Payment p, Answer created, SplittableRandom r) {
            String chargeId = Json.field(created.body(), "id");
            for (int i = 0; i < 5; i++) {
                Instance instance = anyInstance(r);
                Answer a = Http.get(URI.create("http://127.0.0.1:" + instance.port + "/v1/charges/" + chargeId), p.apiKey,
                        Duration.ofSeconds(5));
                tally.count(a);
                if (a.status() == 200 || a.status() == 404) {
                    p.readsAfterSuccess.add(a);
                    return;
                }
                sleep(200);
            }
        }

        void finalRound() throws InterruptedException {
            log("final round: every client asks once more for its " + payments.size() + " payments");
            Semaphore parallel = new Semaphore(32);
            long deadline = System.currentTimeMillis() + seconds(opt("final-round-timeout", "120s")) * 1000;
            try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
                for (Payment p : List.copyOf(payments)) {
                    pool.submit(() -> {
                        parallel.acquireUninterruptibly();
                        try {
                            SplittableRandom r = new SplittableRandom(p.key.hashCode());
                            while (System.currentTimeMillis() < deadline) {
                                Answer a = send(p, p.body, r, Duration.ofSeconds(10));
                                p.record(a);
                                if (a.isFinal()) {
                                    return;
                                }
                                sleep(300);
                            }
                        } finally {
                            parallel.release();
                        }
                    });
                }
            }
        }

        // ---- faults

        void faultSchedule() {
            SplittableRandom r = rnd();
            while (System.currentTimeMillis() < endAt - 1_000) {
                sleep(400 + r.nextInt(1_800));
                if (System.currentTimeMillis() >= endAt - 1_000) {
                    break;
                }
                int roll = r.nextInt(100);
                if (roll < 18) {
                    killAndRestart(r, true);
                } else if (roll < 24) {
                    killAndRestart(r, false);
                } else if (roll < 42) {
                    cutDatabase(r);
                } else if (roll < 55) {
                    latencySpike(r);
                } else if (roll < 67) {
                    int n = 1 + r.nextInt(5);
                    stripe.faults("fail_before=" + n);
                    faults.note("stripe_500_before_charging", "next " + n + " creates");
                } else if (roll < 79) {
                    int n = 1 + r.nextInt(5);
                    stripe.faults("fail_after=" + n);
                    faults.note("stripe_500_after_charging", "next " + n + " creates");
                } else if (roll < 91) {
                    int n = 1 + r.nextInt(5);
                    stripe.faults("drop_after=" + n);
                    faults.note("stripe_drop_after_charging", "next " + n + " creates");
                } else {
                    int n = 1 + r.nextInt(10);
                    stripe.faults("rate_limit=" + n);
                    faults.note("stripe_429", "next " + n + " creates");
                }
            }
        }

        void killAndRestart(SplittableRandom r, boolean kill9) {
            List<Instance> candidates = instances.stream().filter(i -> !i.busy && i.alive()).toList();
            if (candidates.isEmpty()) {
                return;
            }
            Instance victim = candidates.get(r.nextInt(candidates.size()));
            victim.busy = true;
            long down = 300 + r.nextInt(3_000);
            faults.note(kill9 ? "kill_9" : "sigterm", victim.name() + ", restart after " + down + " ms");
            background.submit(() -> {
                try {
                    if (kill9) {
                        victim.kill9();
                    } else {
                        victim.terminate();
                    }
                    sleep(down);
                    victim.start(Duration.ofSeconds(60));
                } finally {
                    victim.busy = false;
                }
            });
        }

        void cutDatabase(SplittableRandom r) {
            boolean all = r.nextInt(100) < 30;
            List<Instance> targets = all ? instances : List.of(anyInstance(r));
            long outage = 300 + r.nextInt(4_700);
            faults.note("db_cut", (all ? "all instances" : targets.get(0).name()) + " for " + outage + " ms");
            for (Instance i : targets) {
                i.primaryProxy.cut();
                if (i.replicaProxy != null && r.nextBoolean()) {
                    i.replicaProxy.cut();
                }
            }
            background.submit(() -> {
                sleep(outage);
                for (Instance i : targets) {
                    i.primaryProxy.restore();
                    if (i.replicaProxy != null) {
                        i.replicaProxy.restore();
                    }
                }
            });
        }

        void latencySpike(SplittableRandom r) {
            long latency = r.nextInt(100) < 10 ? 8_500 + r.nextInt(2_000) : 300 + r.nextInt(5_000);
            long span = 1_000 + r.nextInt(5_000);
            long generation = latencyGeneration.incrementAndGet();
            stripe.faults("latency_ms=" + latency);
            faults.note("stripe_latency_spike", latency + " ms for " + span + " ms");
            background.submit(() -> {
                sleep(span);
                if (latencyGeneration.get() == generation) {
                    stripe.faults("latency_ms=0");
                }
            });
        }
    }

    // ---- the audit ------------------------------------------------------------------------------------------------

    record Row(String id, String client, String key, String status, Integer responseStatus, String responseBody,
               String paymentIntentId, boolean needsReconciliation) {
    }

    record Intent(String id, String status, String chargeId, String paymentId) {
        boolean charged() {
            return "succeeded".equals(status);
        }
    }

    static final class Audit {
        final String label;
        long chaosSeconds;
        long recoveryMillis;
        long unfinishedAfterRecovery;
        int instances;
        Tally tally;
        FaultLog faults;
        long payments, concurrentDuplicates, succeededForClient, declinedForClient, neverFinal;
        long stripeCreates, intents, chargedIntents;
        long rows, rowsCompleted, rowsFailed, rowsNotTerminal;
        long duplicatePayments, doubleCharged, extraIntents;
        long toldSucceededStripeHasNot, chargedButNotToldSucceeded, rowDisagreesWithStripe, orphanIntents;
        long replayMismatches, rowAnswerMismatches, conflictsSent, conflictsRefused, conflictsCharged, unexpectedFinal;
        long readsAfterSuccess, readsNotFound, readsDiffering;
        /** Evidence by kind, most serious kinds first, at most 50 examples of each. */
        final Map<String, List<String>> evidence = new LinkedHashMap<>();

        Audit(String label) {
            this.label = label;
        }

        long violations() {
            return duplicatePayments + doubleCharged + toldSucceededStripeHasNot + chargedButNotToldSucceeded
                    + rowDisagreesWithStripe + orphanIntents + rowsNotTerminal + replayMismatches + rowAnswerMismatches
                    + conflictsCharged + neverFinal + unexpectedFinal + readsNotFound + readsDiffering;
        }

        static Connection connect(Variant variant) throws SQLException {
            return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + opt("pg-port", "5432") + "/" + variant.database,
                    "postgres", "x");
        }

        void note(String kind, String what) {
            List<String> examples = evidence.computeIfAbsent(kind, k -> new ArrayList<>());
            if (examples.size() < 50) {
                examples.add(what);
            }
        }

        String evidenceText() {
            StringBuilder out = new StringBuilder();
            for (String kind : List.of("DUPLICATE", "LOSS", "CHARGED BUT TOLD OTHERWISE", "ROW/STRIPE DISAGREE",
                    "REPLAY DIFFERS", "ROW HOLDS ANOTHER ANSWER", "KEY REUSE ACCEPTED",
                    "READ AFTER SUCCESS NOT FOUND", "READ AFTER SUCCESS DIFFERS", "NO FINAL ANSWER",
                    "ROW NOT TERMINAL", "UNEXPECTED FINAL ANSWER", "ORPHAN PAYMENTINTENT")) {
                List<String> examples = evidence.get(kind);
                if (examples != null) {
                    out.append("== ").append(kind).append(" (first ").append(examples.size()).append(")\n");
                    examples.forEach(e -> out.append(e).append('\n'));
                }
            }
            return out.toString();
        }

        static Audit of(Run run, long chaosMillis, long recoveryMillis, long unfinished) throws Exception {
            Audit a = new Audit(run.variant.label);
            a.chaosSeconds = chaosMillis / 1000;
            a.recoveryMillis = recoveryMillis;
            a.unfinishedAfterRecovery = unfinished;
            a.instances = run.instances.size();
            a.tally = run.tally;
            a.faults = run.faults;

            // Stripe's side: every PaymentIntent, with the charge id the service wrote and the payment the client wrote.
            String ledgerJson = run.stripe.get("/_sandbox/ledger");
            Files.writeString(results.resolve(run.variant.database + "-ledger.json"), ledgerJson);
            List<Intent> ledger = new ArrayList<>();
            for (Object o : (List<?>) ((Map<?, ?>) Json.parse(ledgerJson)).get("data")) {
                Map<?, ?> pi = (Map<?, ?>) o;
                Map<?, ?> md = (Map<?, ?>) pi.get("metadata");
                ledger.add(new Intent((String) pi.get("id"), (String) pi.get("status"),
                        md == null ? null : (String) md.get("chargeonce_charge_id"), md == null ? null : (String) md.get("chaos_payment")));
            }
            Map<?, ?> stats = (Map<?, ?>) Json.parse(run.stripe.get("/_sandbox/stats"));
            a.stripeCreates = ((Number) stats.get("create_requests")).longValue();
            a.intents = ledger.size();
            a.chargedIntents = ledger.stream().filter(Intent::charged).count();

            // The database's side: client + Idempotency-Key -> charge id, status, stored answer.
            Map<String, Row> rowByPayment = new TreeMap<>();
            Map<String, Row> rowByCharge = new TreeMap<>();
            try (Connection c = connect(run.variant); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                    "SELECT id, client_id, idempotency_key, status, response_status, response_body, payment_intent_id, "
                            + "needs_reconciliation FROM stripe_intents")) {
                while (rs.next()) {
                    int rsStatus = rs.getInt(5);
                    Row row = new Row(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                            rs.wasNull() ? null : rsStatus, rs.getString(6), rs.getString(7), rs.getBoolean(8));
                    rowByPayment.put(row.client() + "\n" + row.key(), row);
                    rowByCharge.put(row.id(), row);
                }
            }
            a.rows = rowByPayment.size();
            for (Row row : rowByPayment.values()) {
                if ("completed".equals(row.status()) && !row.needsReconciliation()) {
                    a.rowsCompleted++;
                } else if ("failed".equals(row.status()) && !row.needsReconciliation()) {
                    a.rowsFailed++;
                } else {
                    a.rowsNotTerminal++;
                    a.note("ROW NOT TERMINAL", row.toString());
                }
            }

            Map<String, List<Intent>> byPayment = new TreeMap<>();
            for (Intent pi : ledger) {
                byPayment.computeIfAbsent(String.valueOf(pi.paymentId()), k -> new ArrayList<>()).add(pi);
                if (pi.chargeId() == null || !rowByCharge.containsKey(pi.chargeId())) {
                    a.orphanIntents++;
                    a.note("ORPHAN PAYMENTINTENT", pi + " names a charge the database does not have");
                }
            }

            for (Payment p : List.copyOf(run.payments)) {
                a.payments++;
                if (p.duplicatedConcurrently) {
                    a.concurrentDuplicates++;
                }
                Row row = rowByPayment.get(p.client + "\n" + p.key);
                List<Intent> pis = byPayment.getOrDefault(p.id, List.of());
                List<Intent> charged = pis.stream().filter(Intent::charged).toList();
                Answer first = p.firstFinal.get();
                String where = "payment " + p.id + " (client " + p.client + ", key " + p.key + ", row "
                        + (row == null ? "none" : row.id() + " " + row.status()) + ")";

                if (pis.size() > 1) {
                    a.duplicatePayments++;
                    a.extraIntents += pis.size() - 1;
                    a.note("DUPLICATE", where + " has " + pis.size() + " PaymentIntents at Stripe: " + pis);
                }
                if (charged.size() > 1) {
                    a.doubleCharged++;
                }
                if (first == null) {
                    a.neverFinal++;
                    a.note("NO FINAL ANSWER", where);
                    continue;
                }
                if (first.status() == 201) {
                    a.succeededForClient++;
                    String pi = Json.field(first.body(), "payment_intent");
                    if (charged.stream().noneMatch(i -> i.id().equals(pi))) {
                        a.toldSucceededStripeHasNot++;
                        a.note("LOSS", where + " was told succeeded with " + pi + " but Stripe has no such charge: " + pis);
                    }
                } else {
                    if (first.status() == 402) {
                        a.declinedForClient++;
                    } else {
                        a.unexpectedFinal++;
                        a.note("UNEXPECTED FINAL ANSWER", where + ": " + first.describe());
                    }
                    if (!charged.isEmpty()) {
                        a.chargedButNotToldSucceeded++;
                        a.note("CHARGED BUT TOLD OTHERWISE", where + " got " + first.describe() + " but Stripe charged " + charged);
                    }
                }
                for (Answer later : List.copyOf(p.finals)) {
                    if (later.status() != first.status() || !later.body().equals(first.body())) {
                        a.replayMismatches++;
                        a.note("REPLAY DIFFERS", where + "\n    first: " + first.describe() + "\n    later: " + later.describe());
                        break;
                    }
                }
                if (row != null && row.responseStatus() != null
                        && (row.responseStatus() != first.status() || !first.body().equals(row.responseBody()))) {
                    a.rowAnswerMismatches++;
                    a.note("ROW HOLDS ANOTHER ANSWER", where + "\n    client: " + first.describe() + "\n    row: "
                            + row.responseStatus() + " " + row.responseBody());
                }
                if (row != null && "completed".equals(row.status())) {
                    if (charged.size() != 1 || !charged.get(0).id().equals(row.paymentIntentId())) {
                        a.rowDisagreesWithStripe++;
                        a.note("ROW/STRIPE DISAGREE", where + " row says " + row.paymentIntentId() + ", Stripe has " + pis);
                    }
                }
                for (Answer read : List.copyOf(p.readsAfterSuccess)) {
                    a.readsAfterSuccess++;
                    if (read.status() == 404) {
                        a.readsNotFound++;
                        a.note("READ AFTER SUCCESS NOT FOUND", where + ": GET after " + first.describe() + " answered " + read.describe());
                    } else if (!java.util.Objects.equals(Json.field(read.body(), "payment_intent"), Json.field(first.body(), "payment_intent"))
                            || !"succeeded".equals(Json.field(read.body(), "status"))) {
                        a.readsDiffering++;
                        a.note("READ AFTER SUCCESS DIFFERS", where + ": POST " + first.describe() + " / GET " + read.describe());
                    }
                }
                if (!p.conflictAnswers.isEmpty()) {
                    a.conflictsSent++;
                    for (Answer c : p.conflictAnswers) {
                        if (c.status() == 422) {
                            a.conflictsRefused++;
                        } else {
                            a.conflictsCharged++;
                            a.note("KEY REUSE ACCEPTED", where + " other body answered " + c.describe());
                        }
                    }
                }
            }
            Files.writeString(results.resolve(run.variant.database + "-audit.txt"), a.evidenceText());
            log(a.label + ": " + a.violations() + " violations; evidence in " + results.resolve(run.variant.database + "-audit.txt"));
            return a;
        }

        static String sideBySide(List<Audit> audits) {
            List<String[]> lines = new ArrayList<>();
            Map<String, java.util.function.Function<Audit, Object>> metrics = new LinkedHashMap<>();
            metrics.put("chaos duration (s) / instances", x -> x.chaosSeconds + " / " + x.instances);
            metrics.put("logical payments (with concurrent duplicates)", x -> x.payments + " (" + x.concurrentDuplicates + ")");
            metrics.put("requests sent", x -> x.tally.requests.get());
            metrics.put("answers 201 / 402 / 409 / 422 / 503", x -> x.tally.of(201) + " / " + x.tally.of(402) + " / "
                    + x.tally.of(409) + " / " + x.tally.of(422) + " / " + x.tally.of(503));
            metrics.put("answers lost (timeout, connection) / other (GETs: 200)", x -> x.tally.of(-1) + " / " + x.tally.other());
            metrics.put("faults: kill -9 / SIGTERM / DB cuts", x -> x.faults.of("kill_9") + " / " + x.faults.of("sigterm")
                    + " / " + x.faults.of("db_cut"));
            metrics.put("faults: Stripe latency spikes / 500 before / 500 after / drops / 429",
                    x -> x.faults.of("stripe_latency_spike") + " / " + x.faults.of("stripe_500_before_charging") + " / "
                            + x.faults.of("stripe_500_after_charging") + " / " + x.faults.of("stripe_drop_after_charging")
                            + " / " + x.faults.of("stripe_429"));
            metrics.put("recovery after the chaos (ms) / rows left", x -> x.recoveryMillis + " / " + x.unfinishedAfterRecovery);
            metrics.put("Stripe: create requests / PaymentIntents / charged", x -> x.stripeCreates + " / " + x.intents + " / " + x.chargedIntents);
            metrics.put("clients told succeeded / declined", x -> x.succeededForClient + " / " + x.declinedForClient);
            metrics.put("rows completed / failed", x -> x.rowsCompleted + " / " + x.rowsFailed);
            metrics.put("**payments with more than one PaymentIntent**", x -> x.duplicatePayments);
            metrics.put("**payments charged more than once**", x -> x.doubleCharged);
            metrics.put("**told succeeded, Stripe has no such charge**", x -> x.toldSucceededStripeHasNot);
            metrics.put("**charged at Stripe, client told otherwise**", x -> x.chargedButNotToldSucceeded);
            metrics.put("PaymentIntents naming no known charge", x -> x.orphanIntents);
            metrics.put("completed rows disagreeing with Stripe", x -> x.rowDisagreesWithStripe);
            metrics.put("rows not terminal at the audit", x -> x.rowsNotTerminal);
            metrics.put("payments without a final answer", x -> x.neverFinal);
            metrics.put("payments whose answers differ (replay ≠ first)", x -> x.replayMismatches);
            metrics.put("first answer ≠ the row's stored answer", x -> x.rowAnswerMismatches);
            metrics.put("key reused with another body: sent / 422 / accepted", x -> x.conflictsSent + " / " + x.conflictsRefused
                    + " / " + x.conflictsCharged);
            metrics.put("unexpected final answers", x -> x.unexpectedFinal);
            metrics.put("GET right after 201: asked / 404 / other payment", x -> x.readsAfterSuccess == 0 ? "– (not asked)"
                    : x.readsAfterSuccess + " / " + x.readsNotFound + " / " + x.readsDiffering);
            metrics.put("**verdict**", x -> x.violations() == 0 ? "no duplicate, no loss" : x.violations() + " violations");
            StringBuilder out = new StringBuilder("| | ");
            for (Audit a : audits) {
                out.append(a.label).append(" | ");
            }
            out.append("\n|---|");
            out.append("---:|".repeat(audits.size())).append('\n');
            metrics.forEach((name, f) -> {
                out.append("| ").append(name).append(" | ");
                for (Audit a : audits) {
                    out.append(f.apply(a)).append(" | ");
                }
                out.append('\n');
            });
            return out.toString();
        }
    }

    // ---- a small JSON reader (the ledger and the answers), JDK only ------------------------------------------------

    static final class Json {
        final String s;
        int i;

        Json(String s) {
            this.s = s;
        }

        static Object parse(String text) {
            Json j = new Json(text);
            Object v = j.value();
            return v;
        }

        /** A top-level string field of a JSON object, or null. */
        static String field(String json, String name) {
            try {
                Object o = parse(json);
                return o instanceof Map<?, ?> m && m.get(name) instanceof String v ? v : null;
            } catch (RuntimeException e) {
                return null;
            }
        }

        void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        Object value() {
            ws();
            char c = s.charAt(i);
            switch (c) {
                case '{' -> {
                    Map<String, Object> m = new LinkedHashMap<>();
                    i++;
                    ws();
                    if (s.charAt(i) == '}') {
                        i++;
                        return m;
                    }
                    while (true) {
                        ws();
                        String k = string();
                        ws();
                        i++; // :
                        m.put(k, value());
                        ws();
                        if (s.charAt(i++) == '}') {
                            return m;
                        }
                    }
                }
                case '[' -> {
                    List<Object> l = new ArrayList<>();
                    i++;
                    ws();
                    if (s.charAt(i) == ']') {
                        i++;
                        return l;
                    }
                    while (true) {
                        l.add(value());
                        ws();
                        if (s.charAt(i++) == ']') {
                            return l;
                        }
                    }
                }
                case '"' -> {
                    return string();
                }
                default -> {
                    int start = i;
                    while (i < s.length() && ",}] \n\r\t".indexOf(s.charAt(i)) < 0) {
                        i++;
                    }
                    String t = s.substring(start, i);
                    return switch (t) {
                        case "null" -> null;
                        case "true" -> Boolean.TRUE;
                        case "false" -> Boolean.FALSE;
                        default -> Double.parseDouble(t);
                    };
                }
            }
        }

        String string() {
            StringBuilder b = new StringBuilder();
            i++; // opening quote
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c == '\\') {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n' -> b.append('\n');
                        case 't' -> b.append('\t');
                        case 'r' -> b.append('\r');
                        case 'b' -> b.append('\b');
                        case 'f' -> b.append('\f');
                        case 'u' -> {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                            i += 4;
                        }
                        default -> b.append(e);
                    }
                } else {
                    b.append(c);
                }
            }
        }
    }
}

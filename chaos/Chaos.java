// The test suite's JDK-only helpers, compiled with the harness by chaos/run.sh: the TCP proxy in front of PostgreSQL
// that cut() drops every connection of and refuses new ones until restore(), and its free-port picker.
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TcpProxy;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
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
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

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
    /**
     * The webhook endpoint's signing secrets: the instances accept both (a rotation in progress), the stand-in signs
     * with the newer one. The naive control has no webhook endpoint: its stand-in delivers no events.
     */
    static final String WEBHOOK_SECRET = "whsec_chaos_current";
    static final String WEBHOOK_SECRETS = "whsec_chaos_previous," + WEBHOOK_SECRET;
    static final String GLOBEX_KEY = "sk_globex_9876543210";
    /**
     * The event types the service follows: the webhook endpoint's subscription (README "Webhooks") and what its
     * catch-up lists (EventCatchUp: ChargeStripeSide's and RefundStripeSide's eventTypes()). Every such event Stripe
     * made must reach the inbox. The stand-in also makes {@code payment_intent.created}, which no subscription names
     * and the catch-up does not list, and delivers every event it makes: one of those the inbox lacks is reported,
     * not counted.
     */
    static final List<String> PAYMENT_INTENT_EVENTS = List.of("payment_intent.succeeded", "payment_intent.payment_failed",
            "payment_intent.canceled", "payment_intent.processing", "payment_intent.requires_action");
    static final List<String> REFUND_EVENTS = List.of("refund.created", "refund.updated", "refund.failed",
            "charge.refund.updated", "charge.refunded");
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

        checkStripeSettings();
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

        // The verdict. A run proves something only if the chaos happened (every fault switch worked, enough faults
        // and payments, every kind of fault in a full-length run) and the audit demonstrably sees duplicates (the
        // control shows them): otherwise it is a FAIL too, never a PASS of a run that tested nothing.
        List<String> failures = new ArrayList<>();
        int exit = 0;
        if (real.violations() > real.refundViolations()) {
            failures.add("chargeonce charged twice, lost a payment, answered inconsistently, let a charge's state differ from Stripe's"
                    + " or never recorded an event ("
                    + (real.violations() - real.refundViolations())
                    + " violations); evidence in " + results.resolve("chargeonce-audit.txt"));
            exit = 1;
        }
        if (real.refundViolations() > 0) {
            failures.add("chargeonce refunded twice, over a charge, or otherwise than it answered (" + real.refundViolations()
                    + " refund violations: duplicates=" + real.refundDuplicates + ", over-refunds=" + real.overRefunds
                    + "); evidence in " + results.resolve("chargeonce-audit.txt"));
            exit = 1;
        }
        int minFaults = Integer.parseInt(opt("min-faults", "15"));
        int minPayments = Integer.parseInt(opt("min-payments", "50"));
        for (Audit a : audits) {
            List<String> own = a.harnessFailures(minFaults, minPayments);
            failures.addAll(own);
            if (!own.isEmpty() && exit == 0) {
                exit = 2;
            }
        }
        boolean requireNaive = Boolean.parseBoolean(opt("require-naive-duplicates", "true"));
        if (naive != null && naive.duplicatePayments == 0) {
            String what = "the naive control shows no duplicate: the audit could not prove that it sees them";
            if (requireNaive) {
                failures.add(what);
                exit = exit == 0 ? 3 : exit;
            } else {
                OUT.println("WARNING: " + what + " (not required: --allow-naive-without-duplicates).");
            }
        }
        StringBuilder verdict = new StringBuilder();
        if (failures.isEmpty()) {
            verdict.append("PASS: chargeonce: no duplicate, no loss, every row terminal or parked after a lost commit, ")
                    .append("every replay consistent, every charge's state Stripe's and never backwards, every event recorded, ")
                    .append("no refund made twice or over its charge; every fault switch worked, minimums met.\n");
        } else {
            for (String f : failures) {
                verdict.append("FAIL: ").append(f).append('\n');
            }
        }
        if (naive != null && naive.duplicatePayments > 0) {
            verdict.append("Control: the naive check-then-act variant charged ").append(naive.duplicatePayments)
                    .append(" payments more than once under the same chaos: the audit sees duplicates.\n");
        } else if (naive == null) {
            verdict.append("NOTE: the naive control did not run (--no-naive): nothing shows that the audit sees duplicates.\n");
        }
        if (real.refundsAudited) {
            verdict.append(real.refundSummary()).append('\n');
        }
        if (real.unfollowedEventsNeverRecorded > 0) {
            verdict.append("NOTE: ").append(real.unfollowedEventsNeverRecorded).append(" events of a type the service does not")
                    .append(" follow (payment_intent.created) never reached its inbox (every delivery failed; no subscription")
                    .append(" names the type and the catch-up does not list it): reported, not counted as violations.\n");
        }
        OUT.print(verdict);
        Files.writeString(results.resolve("report.md"), table + "\n" + verdict);
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

    /** The key-hash secret (version 1) the instances are given: chargeonce.idempotency.key-hash-secrets. */
    static final String KEY_HASH_SECRET = "Y2hhcmdlb25jZSBjaGFvcyBrZXkgaGFzaCBzZWNyZXQsIHYx";
    /** Every key of this run by its identity: the rows keep only the identity (KeyIdentities), the audit needs the key. */
    static final Map<String, String> KEYS_BY_IDENTITY = new ConcurrentHashMap<>();

    /** KeyIdentities, version 1: "k001-" and 48 hex characters of HMAC-SHA256(secret, client + "\n" + Idempotency-Key). */
    static String identity(String client, String key) {
        return remember(hmacIdentity(client + "\n" + key), key);
    }

    /** The same of "refund\n" + client + "\n" + refund key. */
    static String refundIdentity(String client, String key) {
        return remember(hmacIdentity("refund\n" + client + "\n" + key), key);
    }

    private static String remember(String identity, String key) {
        if (key != null) { // a row of no key of this run (the audit reports it) has nothing to remember
            KEYS_BY_IDENTITY.put(identity, key);
        }
        return identity;
    }

    private static String hmacIdentity(String text) {
        try {
            javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
            mac.init(new javax.crypto.spec.SecretKeySpec(java.util.Base64.getDecoder().decode(KEY_HASH_SECRET), "HmacSHA256"));
            return "k001-" + HexFormat.of().formatHex(mac.doFinal(text.getBytes(StandardCharsets.UTF_8))).substring(0, 48);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * What a row's key column holds: this service keeps the identity (the key is looked up among the run's), the
     * naive control the key itself.
     */
    static String keyColumn(Variant variant) {
        return variant == Variant.CHARGEONCE ? "stripe_identity" : "idempotency_key";
    }

    static String keyOf(Variant variant, String column) {
        return variant == Variant.CHARGEONCE ? KEYS_BY_IDENTITY.get(column) : column;
    }

    static String clientsConfig() {
        return "acme:" + sha256(ACME_KEY) + ",globex:" + sha256(GLOBEX_KEY);
    }

    // ---- how long the stand-in may work on one create, and what the instances are told about it --------------------

    /** The longest latency spike the schedule injects (Run.latencySpike): the stand-in runs the request that long. */
    static final int LONGEST_LATENCY_MS = 10_500;
    /** The longest {@code slow:<ms>} plan step the schedule injects (Run.slowStepMillis). */
    static final int LONGEST_SLOW_STEP_MS = 9_000;

    /**
     * chargeonce.stripe.request-max-duration is the service's belief of how long Stripe may still execute a request
     * after it was sent: once it has passed since the key's last send, a list of the key's PaymentIntents is taken
     * as final and the next Stripe attempt may be sent. It MUST exceed the longest the stand-in can execute one
     * request here (the longest latency spike or slow step above, 10.5 s); otherwise the instances are configured to
     * believe a request is over while it still runs, and a second PaymentIntent would be the configuration's fault,
     * not the service's. Raising those faults means raising this setting (Chaos option --request-max-duration) too.
     */
    static void checkStripeSettings() {
        long maxDurationMs = seconds(opt("request-max-duration", "15s")) * 1000;
        long longestInjected = Math.max(LONGEST_LATENCY_MS, LONGEST_SLOW_STEP_MS);
        // One second of margin: on a busy machine the stand-in may start a request's clock late.
        if (maxDurationMs <= longestInjected + 1_000) {
            throw new IllegalStateException("request-max-duration " + maxDurationMs + " ms does not exceed the longest"
                    + " request the stand-in executes in this run (" + longestInjected + " ms) by a second");
        }
        log("instances: lease " + opt("lease", "10s") + ", Stripe connect/read timeout " + opt("stripe-connect-timeout", "1s")
                + "/" + opt("stripe-read-timeout", "2s") + ", request-max-duration " + maxDurationMs + " ms (longest injected "
                + longestInjected + " ms), lookup-skew " + opt("lookup-skew", "10s") + "; webhooks: secrets " + WEBHOOK_SECRETS
                + ", catch-up every " + opt("catch-up-interval", "5s") + " (overlap " + opt("catch-up-overlap", "30m")
                + "), 3-D Secure expiry " + opt("requires-action-expiry", "20s") + ", pending re-checks "
                + opt("pending-recheck", "2s,5s") + ", sync worker every " + opt("sync-interval", "2s"));
    }

    /**
     * A free port below the kernel's ephemeral range, so that an instance can bind it again when it restarts (a port
     * in the ephemeral range may meanwhile be the local end of some outgoing connection): the test suite's own.
     */
    static int freePort() {
        return ServiceProcess.freePort();
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

    /** One instance of the target: a process on a fixed port, reaching the database through its own proxies. */
    static final class Instance {
        final Variant variant;
        final int index;
        final int port;
        /** chargeonce's health (and metrics) are on its management interface, a port of its own; the naive one has none. */
        final int managementPort;
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
            this.managementPort = variant == Variant.CHARGEONCE ? freePort() : port;
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
                        "-Dquarkus.management.host=127.0.0.1", "-Dquarkus.management.port=" + managementPort,
                        "-Dquarkus.log.console.json.enabled=false",
                        "-Dquarkus.datasource.jdbc.url=" + db, "-Dquarkus.datasource.username=postgres",
                        "-Dquarkus.datasource.password=x",
                        "-Dchargeonce.stripe.api-key=sk_test_sandbox", "-Dchargeonce.stripe.api-base=" + stripeBase,
                        "-Dchargeonce.auth.clients=" + clientsConfig(),
                        "-Dchargeonce.idempotency.key-hash-version=1",
                        "-Dchargeonce.idempotency.key-hash-secrets=1:" + KEY_HASH_SECRET,
                        // Short Stripe timeouts, and the shortest lease the service accepts with them (it refuses a
                        // lease not longer than one whole create call: 3 tries x (connect + read) + 2 x 350 ms = 9.7 s),
                        // so that crashes resolve within the run. See checkStripeSettings() for request-max-duration.
                        "-Dchargeonce.idempotency.lease=" + opt("lease", "10s"),
                        "-Dchargeonce.stripe.connect-timeout=" + opt("stripe-connect-timeout", "1s"),
                        "-Dchargeonce.stripe.read-timeout=" + opt("stripe-read-timeout", "2s"),
                        "-Dchargeonce.stripe.request-max-duration=" + opt("request-max-duration", "15s"),
                        "-Dchargeonce.recovery.enabled=true", "-Dchargeonce.recovery.interval=1s",
                        "-Dchargeonce.recovery.initial-delay=1s", "-Dchargeonce.shutdown.grace=5s",
                        // The stand-in runs on this host's clock, so the lookup needs no clock-skew margin; with the
                        // default 10 minutes, the lookup after a Stripe 5xx pages through every PaymentIntent this run
                        // created in 10 minutes and gives up past 50 pages (see README, Chaos).
                        "-Dchargeonce.stripe.lookup-skew=" + opt("lookup-skew", "10s"),
                        // Webhooks (README, Chaos): the secrets, a catch-up every few seconds whose overlap covers
                        // the whole run (events lost in an outage are older than the newest recorded one by up to the
                        // run's length), and 3-D Secure that expires, and is re-checked, within the run.
                        "-Dchargeonce.stripe.webhook-secret=" + WEBHOOK_SECRETS,
                        "-Dchargeonce.webhooks.catch-up-interval=" + opt("catch-up-interval", "5s"),
                        "-Dchargeonce.webhooks.catch-up-overlap=" + opt("catch-up-overlap", "30m"),
                        "-Dchargeonce.stripe.requires-action-expiry=" + opt("requires-action-expiry", "20s"),
                        "-Dchargeonce.stripe.pending-recheck=" + opt("pending-recheck", "2s,5s"),
                        "-Dchargeonce.recovery.sync-interval=" + opt("sync-interval", "2s")));
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

        /** Extra environment of an instance's process (none today). */
        Map<String, String> environment() {
            return Map.of();
        }

        /**
         * Starts the process and waits until it is ready; false when it was not ready in time (it is left running, if
         * it runs: clients will retry) or kept exiting (a refused configuration: see its log in results/logs).
         */
        synchronized boolean start(Duration timeout) {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                File logFile = results.resolve("logs").resolve(name() + "-" + (++starts) + ".log").toFile();
                try {
                    ProcessBuilder builder = new ProcessBuilder(command()).redirectErrorStream(true).redirectOutput(logFile);
                    builder.environment().putAll(environment());
                    process = builder.start();
                } catch (IOException e) {
                    throw new IllegalStateException("cannot start " + name(), e);
                }
                recordChild(process);
                while (System.nanoTime() < deadline && process.isAlive()) {
                    if (Http.ready(URI.create("http://127.0.0.1:" + managementPort + variant.readyPath))) {
                        return true;
                    }
                    sleep(150);
                }
                if (process.isAlive()) {
                    return false; // not ready in time: leave it running, clients will retry
                }
                log(name() + " exited during start (see " + logFile + "); starting again");
                sleep(500);
            }
            return false;
        }

        /** kill -9; false when the process was still there 10 s later. */
        boolean kill9() {
            Process p = process;
            if (p != null) {
                p.destroyForcibly();
                try {
                    return p.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }

        /**
         * SIGTERM; "stopped" when it stopped by itself, "killed" when it had to be killed after 15 s (the service's
         * shutdown takes at most twice its 5 s grace, so that is a finding, not a harness failure), "failed" when it
         * was still there after that.
         */
        String terminate() {
            Process p = process;
            if (p != null) {
                p.destroy();
                try {
                    if (!p.waitFor(15, TimeUnit.SECONDS)) {
                        log(name() + " did not stop within 15 s of SIGTERM; killing it");
                        p.destroyForcibly();
                        return p.waitFor(10, TimeUnit.SECONDS) ? "killed" : "failed";
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return "failed";
                }
            }
            return "stopped";
        }

        boolean alive() {
            Process p = process;
            return p != null && p.isAlive();
        }

        URI charges() {
            return URI.create("http://127.0.0.1:" + port + "/v1/charges");
        }

        URI refunds(String chargeId) {
            return URI.create("http://127.0.0.1:" + port + "/v1/charges/" + chargeId + "/refunds");
        }
    }

    // ---- HTTP ----------------------------------------------------------------------------------------------------

    /**
     * One answer a client got; {@code sentAt} / {@code receivedAt}: epoch ms when the request left and when its answer
     * came back (or the request failed); {@code port}: the instance asked (0: not a request).
     */
    record Answer(int status, String body, boolean replayed, String retryAfter, long sentAt, long receivedAt, int port) {
        Answer(int status, String body, boolean replayed, String retryAfter) {
            this(status, body, replayed, retryAfter, System.currentTimeMillis(), System.currentTimeMillis(), 0);
        }

        Answer sent(long at, URI uri) {
            return new Answer(status, body, replayed, retryAfter, at, receivedAt, uri.getPort());
        }

        boolean isFinal() {
            // 202: Stripe took the payment and the customer must authenticate it (3-D Secure): the key's answer.
            return status == 201 || status == 202 || status == 402 || status == 400 || status == 422;
        }

        /**
         * The service parked the key for an operator (503 charge_under_reconciliation, Retry-After 10 minutes): it
         * answers so until someone reconciles it, so clients stop asking. Expected only after a lost commit.
         */
        boolean isParked() {
            return status == 503 && body != null && body.contains("\"charge_under_reconciliation\"");
        }

        /** The charge id the answer names: {@code id} of a 201, {@code error.charge} of a 402/400. */
        String chargeId() {
            Object o = Json.parseQuietly(body);
            if (o instanceof Map<?, ?> m) {
                if (m.get("error") instanceof Map<?, ?> e) {
                    return e.get("charge") instanceof String c ? c : null;
                }
                return m.get("id") instanceof String c ? c : null;
            }
            return null;
        }

        /**
         * What must not change when the database lost the row and a new row answered: the status code and the whole
         * body except the new row's charge id and creation time (same PaymentIntent, amount, currency, status...).
         */
        Object sameAfterLostRow() {
            Object o = Json.parseQuietly(body);
            if (o instanceof Map<?, ?> m) {
                Map<Object, Object> copy = new LinkedHashMap<>(m);
                copy.remove("id");
                copy.remove("created");
                if (copy.get("error") instanceof Map<?, ?> e) {
                    Map<Object, Object> error = new LinkedHashMap<>(e);
                    error.remove("charge");
                    copy.put("error", error);
                }
                return List.of(status, copy);
            }
            return List.of(status, String.valueOf(body));
        }

        String describe() {
            return status + (replayed ? " (replayed)" : "") + " " + (body == null ? "" : body.length() > 300 ? body.substring(0, 300) + "…" : body);
        }
    }

    static final class Http {
        static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(1)).executor(Executors.newVirtualThreadPerTaskExecutor()).build();

        static Answer post(URI uri, String apiKey, String key, String body, Duration timeout) {
            long at = System.currentTimeMillis();
            return postAt(uri, apiKey, key, body, timeout).sent(at, uri);
        }

        static Answer postAt(URI uri, String apiKey, String key, String body, Duration timeout) {
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
            long at = System.currentTimeMillis();
            return getAt(uri, apiKey, timeout).sent(at, uri);
        }

        static Answer getAt(URI uri, String apiKey, Duration timeout) {
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
        /** Where a control-plane call that failed is reported: a fault that was not switched fails the run. */
        final java.util.function.Consumer<String> failed;
        Process process;

        Stripe(java.util.function.Consumer<String> failed) {
            this.failed = failed;
        }

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

        /** Switches the stand-in's faults; a failure (an HTTP error, no answer) is reported and returns false. */
        boolean faults(String query) {
            try {
                Http.call("POST", URI.create(base() + "/_sandbox/faults?" + query));
                return true;
            } catch (IOException | RuntimeException e) {
                log("sandbox faults " + query + " failed: " + e.getMessage());
                failed.accept("Stripe stand-in control plane: faults?" + query + " failed: " + e.getMessage());
                return false;
            }
        }

        String get(String path) throws IOException {
            return Http.call("GET", URI.create(base() + path));
        }

        /** Switches the stand-in's webhook delivery (url, secret, duplicates, reorder, delay_ms, lose); reported like faults(). */
        boolean webhooks(String query) {
            try {
                Http.call("POST", URI.create(base() + "/_sandbox/webhooks?" + query));
                return true;
            } catch (IOException | RuntimeException e) {
                log("sandbox webhooks " + query + " failed: " + e.getMessage());
                failed.accept("Stripe stand-in control plane: webhooks?" + query + " failed: " + e.getMessage());
                return false;
            }
        }

        /** The stand-in's event counts: {@code events} made, {@code delivered} (2xx), {@code failed_deliveries} (tries). */
        Map<?, ?> webhookStats() throws IOException {
            return (Map<?, ?>) Json.parse(Http.call("POST", URI.create(base() + "/_sandbox/webhooks")));
        }

        /** The customer completes (or fails) 3-D Secure in Stripe.js; an IOException when Stripe refuses (too late). */
        void authenticate(String paymentIntentId, String result) throws IOException {
            Http.call("POST", URI.create(base() + "/_sandbox/payment_intents/" + paymentIntentId + "/authenticate?result=" + result));
        }

        /** A Stripe API read, as the service makes it (the stand-in wants a secret key). */
        String api(String pathAndQuery) throws IOException {
            try {
                HttpResponse<String> r = Http.CLIENT.send(HttpRequest.newBuilder(URI.create(base() + pathAndQuery))
                        .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer sk_test_chaos_audit").GET().build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    throw new IOException("GET " + pathAndQuery + " -> " + r.statusCode() + " " + r.body());
                }
                return r.body();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException(e);
            }
        }

        /** The events listed so far: id -> type, oldest first (the stand-in only ever adds events, newest on top). */
        private final Map<String, String> eventsSeen = new LinkedHashMap<>();
        /** The object each listed event names (its data.object.id): a PaymentIntent or a refund. */
        final Map<String, String> eventObjects = new ConcurrentHashMap<>();

        /**
         * Every event the stand-in made (its Events API, page after page, no filter): id -> type. Pages from the
         * newest until an event listed by an earlier call, so the settle phase can ask every 2 s.
         */
        synchronized Map<String, String> events() throws IOException {
            Map<String, String> fresh = new LinkedHashMap<>();
            String after = null;
            paging:
            while (true) {
                Map<?, ?> page = (Map<?, ?>) Json.parse(api("/v1/events?limit=100"
                        + (after == null ? "" : "&starting_after=" + after)));
                List<?> data = (List<?>) page.get("data");
                for (Object o : data) {
                    after = (String) ((Map<?, ?>) o).get("id");
                    if (eventsSeen.containsKey(after)) {
                        break paging;
                    }
                    fresh.put(after, (String) ((Map<?, ?>) o).get("type"));
                    if (((Map<?, ?>) o).get("data") instanceof Map<?, ?> d && d.get("object") instanceof Map<?, ?> object
                            && object.get("id") instanceof String objectId) {
                        eventObjects.put(after, objectId);
                    }
                }
                if (!Boolean.TRUE.equals(page.get("has_more")) || data.isEmpty()) {
                    break;
                }
            }
            List<Map.Entry<String, String>> oldestFirst = new ArrayList<>(fresh.entrySet());
            Collections.reverse(oldestFirst);
            oldestFirst.forEach(e -> eventsSeen.put(e.getKey(), e.getValue()));
            return Collections.unmodifiableMap(new LinkedHashMap<>(eventsSeen));
        }

        void stop() {
            if (process != null) {
                process.destroyForcibly();
            }
        }
    }

    /**
     * Stripe's webhook endpoint for the instances, which have no load balancer: the stand-in delivers every event here,
     * and each delivery goes on to one instance picked at random, dead or alive. An instance that is down (killed,
     * restarting) or cut from its database fails the delivery (502 / its 5xx), and the stand-in retries it, as Stripe
     * does; what the instance answers goes back to the stand-in as it is.
     */
    static final class WebhookRelay {
        final List<Instance> instances;
        final int port = freePort();
        final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(1)).executor(Executors.newVirtualThreadPerTaskExecutor()).build();
        final AtomicLong deliveries = new AtomicLong();
        final AtomicLong acknowledged = new AtomicLong();
        final AtomicLong duplicatesAcknowledged = new AtomicLong();
        /** 5xx from an instance (database cut, shutting down): the stand-in retries. */
        final AtomicLong failed = new AtomicLong();
        /** No answer from the instance picked (down, restarting, killed mid-request): 502, the stand-in retries. */
        final AtomicLong unreachable = new AtomicLong();
        /** 4xx: the instance refused a genuine, signed event (a violation: Stripe would give up on the endpoint). */
        final AtomicLong refused = new AtomicLong();
        final List<String> refusals = Collections.synchronizedList(new ArrayList<>());
        HttpServer server;

        WebhookRelay(List<Instance> instances) {
            this.instances = instances;
        }

        String url() {
            return "http://127.0.0.1:" + port + "/v1/webhooks/stripe";
        }

        void start() throws IOException {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 512);
            server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
            server.createContext("/", this::relay);
            server.start();
        }

        void relay(HttpExchange exchange) throws IOException {
            try (exchange) {
                byte[] body = exchange.getRequestBody().readAllBytes();
                deliveries.incrementAndGet();
                Instance target = instances.get(ThreadLocalRandom.current().nextInt(instances.size()));
                HttpRequest.Builder forward = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + target.port + "/v1/webhooks/stripe"))
                        .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.ofByteArray(body));
                String signature = exchange.getRequestHeaders().getFirst("Stripe-Signature");
                if (signature != null) {
                    forward.header("Stripe-Signature", signature);
                }
                String type = exchange.getRequestHeaders().getFirst("Content-Type");
                forward.header("Content-Type", type == null ? "application/json" : type);
                int status;
                byte[] answer;
                try {
                    HttpResponse<byte[]> r = client.send(forward.build(), HttpResponse.BodyHandlers.ofByteArray());
                    status = r.statusCode();
                    answer = r.body();
                } catch (IOException e) {
                    unreachable.incrementAndGet();
                    status = 502;
                    answer = ("{\"relay\":\"" + target.name() + " unreachable: " + e.getClass().getSimpleName() + "\"}")
                            .getBytes(StandardCharsets.UTF_8);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    status = 502;
                    answer = new byte[0];
                }
                String text = new String(answer, StandardCharsets.UTF_8);
                if (status / 100 == 2) {
                    acknowledged.incrementAndGet();
                    if (text.contains("\"duplicate\":true")) {
                        duplicatesAcknowledged.incrementAndGet();
                    }
                } else if (status / 100 == 4) {
                    refused.incrementAndGet();
                    if (refusals.size() < 50) {
                        refusals.add(target.name() + " answered " + status + " " + text + " to "
                                + new String(body, 0, Math.min(body.length, 300), StandardCharsets.UTF_8));
                    }
                } else if (answer.length == 0 || !text.startsWith("{\"relay\"")) {
                    failed.incrementAndGet();
                }
                exchange.getResponseHeaders().add("Content-Type", "application/json");
                exchange.sendResponseHeaders(status, answer.length == 0 ? -1 : answer.length);
                if (answer.length > 0) {
                    exchange.getResponseBody().write(answer);
                }
            }
        }

        void stop() {
            if (server != null) {
                server.stop(0);
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
        final long amount;
        final AtomicReference<Answer> firstFinal = new AtomicReference<>();
        final List<Answer> finals = Collections.synchronizedList(new ArrayList<>());
        final List<Answer> conflictAnswers = Collections.synchronizedList(new ArrayList<>());
        /** The refunds its client asked for on the charge its first 201 named (chargeonce only). */
        final List<Refund> refunds = Collections.synchronizedList(new ArrayList<>());
        /** GET /v1/charges/{id} asked right after the 201 (read-your-writes, through the replica when configured). */
        final List<Answer> readsAfterSuccess = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger requests = new AtomicInteger();
        /** 503 charge_under_reconciliation answers: the key was parked (expected only after a lost commit). */
        final List<Answer> parked = Collections.synchronizedList(new ArrayList<>());
        /** Rows of this payment the harness deleted (lost commits): their charge ids, and when. */
        final List<LostRow> lostRows = Collections.synchronizedList(new ArrayList<>());
        volatile boolean duplicatedConcurrently;
        /** 3-D Secure after a 202: what the customer does (succeeded, failed, never), when, and what Stripe said. */
        final AtomicBoolean customerStarted = new AtomicBoolean();
        volatile String customerChoice;
        volatile String customerOutcome;
        volatile long customerActedAt;
        /** The charge's state as GET /v1/charges/{id} showed it after the 202, in the order the answers came. */
        final List<StateSeen> statesSeen = Collections.synchronizedList(new ArrayList<>());

        Payment(String id, String client, String apiKey, String key, long amount, String paymentMethod) {
            this.id = id;
            this.client = client;
            this.apiKey = apiKey;
            this.key = key;
            this.amount = amount;
            this.body = body(amount, paymentMethod);
            this.conflictingBody = body(amount + 1, paymentMethod);
        }

        String body(long amount, String paymentMethod) {
            return "{\"amount\":" + amount + ",\"currency\":\"usd\",\"payment_method\":\"" + paymentMethod
                    + "\",\"metadata\":{\"chaos_payment\":\"" + id + "\"}}";
        }

        /** Every answer any request of this payment got, in arrival order: the evidence of a violation. */
        final List<Answer> history = Collections.synchronizedList(new ArrayList<>());

        void record(Answer a) {
            history.add(a);
            if (a.isFinal()) {
                firstFinal.compareAndSet(null, a);
                finals.add(a);
            } else if (a.isParked()) {
                parked.add(a);
            }
        }

        /** This payment's story for the evidence: its rows deleted, then every answer with its arrival time. */
        String story(long t0) {
            StringBuilder out = new StringBuilder();
            for (LostRow l : List.copyOf(lostRows)) {
                out.append(String.format(Locale.ROOT, "\n    %8.2fs row %s (%s, Stripe attempt %d) deleted (lost commit)",
                        (l.deleteStarted() - t0) / 1000.0, l.chargeId(), l.status(), l.stripeAttempt()));
            }
            for (Answer a : List.copyOf(history)) {
                out.append(String.format(Locale.ROOT, "\n    %8.2fs-%8.2fs :%d %s", (a.sentAt() - t0) / 1000.0,
                        (a.receivedAt() - t0) / 1000.0, a.port(), a.describe()));
            }
            if (customerChoice != null) {
                out.append(String.format(Locale.ROOT, "\n    3-D Secure: the customer %s%s", switch (customerChoice) {
                    case "never" -> "never authenticates";
                    default -> "authenticates (" + customerChoice + ")";
                }, customerActedAt == 0 ? "" : String.format(Locale.ROOT, " at %.2fs: %s", (customerActedAt - t0) / 1000.0,
                        customerOutcome)));
            }
            for (StateSeen seen : List.copyOf(statesSeen)) {
                out.append(String.format(Locale.ROOT, "\n    %8.2fs :%d charge %s (%s)", (seen.at() - t0) / 1000.0, seen.port(),
                        seen.status(), seen.via()));
            }
            return out.toString();
        }

        boolean lost() {
            return !lostRows.isEmpty();
        }

        /** The charge ids of rows of this payment that were deleted. */
        Set<String> lostChargeIds() {
            Set<String> ids = new java.util.HashSet<>();
            for (LostRow l : List.copyOf(lostRows)) {
                ids.add(l.chargeId());
            }
            return ids;
        }
    }

    /**
     * A finished row the lost_commit fault deleted; {@code stripeAttempt}: its Stripe attempt (1 for the naive
     * control); {@code deleteStarted}: epoch ms when the DELETE was sent.
     */
    record LostRow(String chargeId, String status, int stripeAttempt, long deleteStarted) {
    }

    /**
     * One logical refund: one client, one refund Idempotency-Key, on the charge its payment's first 201 named, one
     * body; everything every request of it was told. {@code amount} null: a full refund (what is left).
     * {@code pattern}: how its client asked (full, partial, partials one after another, partials at once from both
     * instances, partials whose sum is over the charge).
     */
    static final class Refund {
        final String id;
        final Payment payment;
        final String chargeId;
        final String paymentIntent;
        final String key;
        final Long amount;
        final String pattern;
        final String body;
        final String conflictingBody;
        final AtomicReference<Answer> firstFinal = new AtomicReference<>();
        final List<Answer> finals = Collections.synchronizedList(new ArrayList<>());
        final List<Answer> conflictAnswers = Collections.synchronizedList(new ArrayList<>());
        final List<Answer> history = Collections.synchronizedList(new ArrayList<>());
        /** 503 refund_under_reconciliation answers: the key was parked for an operator. */
        final List<Answer> parked = Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger requests = new AtomicInteger();
        /** The same request sent 2-3 times at once (a double click). */
        volatile boolean duplicatedConcurrently;
        /** Sent at the same time as the other refunds of its charge, the first requests to both instances. */
        volatile boolean concurrentWithOthers;

        Refund(String id, Payment payment, String chargeId, String paymentIntent, String key, Long amount, String pattern,
               String reason) {
            this.id = id;
            this.payment = payment;
            this.chargeId = chargeId;
            this.paymentIntent = paymentIntent;
            refundIdentity(payment.client, key); // the audit finds its row by it
            this.key = key;
            this.amount = amount;
            this.pattern = pattern;
            this.body = body(amount, reason);
            // Same key, another body: amount + 1 (a full refund names an amount instead).
            this.conflictingBody = body(amount == null ? 1L : amount + 1, reason);
        }

        String body(Long amount, String reason) {
            return "{" + (amount == null ? "" : "\"amount\":" + amount + ",")
                    + (reason == null ? "" : "\"reason\":\"" + reason + "\",")
                    + "\"metadata\":{\"chaos_refund\":\"" + id + "\"}}";
        }

        /** The refund's identity at Stripe (its chargeonce_key metadata, StripeKeys.refundIdentity). */
        String identity() {
            return refundIdentity(payment.client, key);
        }

        /**
         * A final answer of a refund key: 201 (made), 402 (Stripe made it and it failed), 400 (refused: before Stripe,
         * amount_too_large or charge_not_refundable, or by Stripe), 422 (key reused with another body), 404 (no such
         * charge). 409, 503, connection errors and timeouts are asked again with the same key.
         */
        static boolean isFinal(Answer a) {
            return a.status() == 201 || a.status() == 402 || a.status() == 400 || a.status() == 422 || a.status() == 404;
        }

        /** 503 refund_under_reconciliation: parked for an operator; its client stops asking. */
        static boolean isParked(Answer a) {
            return a.status() == 503 && a.body() != null && a.body().contains("\"refund_under_reconciliation\"");
        }

        void record(Answer a) {
            history.add(a);
            if (isFinal(a)) {
                firstFinal.compareAndSet(null, a);
                finals.add(a);
            } else if (isParked(a)) {
                parked.add(a);
            }
        }

        String story(long t0) {
            StringBuilder out = new StringBuilder();
            for (Answer a : List.copyOf(history)) {
                out.append(String.format(Locale.ROOT, "\n    %8.2fs-%8.2fs :%d %s", (a.sentAt() - t0) / 1000.0,
                        (a.receivedAt() - t0) / 1000.0, a.port(), a.describe()));
            }
            for (Answer a : List.copyOf(conflictAnswers)) {
                out.append(String.format(Locale.ROOT, "\n    %8.2fs-%8.2fs :%d (another body) %s", (a.sentAt() - t0) / 1000.0,
                        (a.receivedAt() - t0) / 1000.0, a.port(), a.describe()));
            }
            return out.toString();
        }

        String describe() {
            return "refund " + id + " (client " + payment.client + ", key " + key + ", identity " + identity() + ", charge "
                    + chargeId + " " + paymentIntent + " of payment " + payment.id + " amount " + payment.amount + "; "
                    + pattern + ", " + (amount == null ? "full" : "amount " + amount)
                    + (concurrentWithOthers ? ", at once with the charge's other refunds" : "")
                    + (duplicatedConcurrently ? ", sent concurrently" : "") + ")";
        }
    }

    /** The {@code error.code} of an answer, or null. */
    static String errorCode(Answer a) {
        Object o = Json.parseQuietly(a.body());
        return o instanceof Map<?, ?> m && m.get("error") instanceof Map<?, ?> e && e.get("code") instanceof String c ? c : null;
    }

    /**
     * The service's own refusal of a refund over what is left (RefundService: checked against the reservation in the
     * claim's transaction; nothing is stored, nothing sent to Stripe), told apart from Stripe's refusal of the same
     * code (a stored 400 replayed: "greater than unrefunded amount on charge") by its message.
     */
    static boolean tooLargeBeforeStripe(Answer a) {
        if (a.status() != 400 || !"amount_too_large".equals(errorCode(a))) {
            return false;
        }
        return a.body().contains("what is left to refund") || a.body().contains("nothing left to refund");
    }

    /** The charge's state as one answer showed it: {@code at} epoch ms, {@code port} the instance, {@code via} what. */
    record StateSeen(long at, int port, String status, String via) {
    }

    /** The order charge states only move forward in (ChargeStatus.rank); 0: not a charge state. */
    static int rank(String chargeState) {
        return switch (String.valueOf(chargeState)) {
            case "requires_action" -> 1;
            case "processing" -> 2;
            case "failed" -> 3;
            case "succeeded", "canceled" -> 4;
            default -> 0;
        };
    }

    static boolean finalState(String chargeState) {
        return "succeeded".equals(chargeState) || "canceled".equals(chargeState);
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
        /** The kinds of fault of this target's deck (Run.faultDeck) and their weights. */
        final Map<String, Integer> deck;
        final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
        final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
        /** The start of the chaos: every time in the fault log and the evidence is relative to it. */
        volatile long t0 = System.currentTimeMillis();

        FaultLog(Map<String, Integer> deck) {
            this.deck = deck;
        }

        void note(String kind, String detail) {
            counts.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
            String line = String.format(Locale.ROOT, "%7.2fs %s %s", (System.currentTimeMillis() - t0) / 1000.0, kind, detail);
            events.add(line);
        }

        /** Something a fault led to that is worth reporting but is not a fault itself (counted apart). */
        void finding(String kind, String detail) {
            count(kind, 1);
            events.add(String.format(Locale.ROOT, "%7.2fs (finding) %s %s", (System.currentTimeMillis() - t0) / 1000.0,
                    kind, detail));
        }

        /** A line in the log that is neither a fault nor a finding (an instance ready again, ...). */
        void event(String detail) {
            events.add(String.format(Locale.ROOT, "%7.2fs (event) %s", (System.currentTimeMillis() - t0) / 1000.0, detail));
        }

        void count(String what, int n) {
            counts.computeIfAbsent(what, k -> new AtomicInteger()).addAndGet(n);
        }

        int of(String kind) {
            AtomicInteger n = counts.get(kind);
            return n == null ? 0 : n.get();
        }

        /** Faults injected, of every kind of the deck. */
        int total() {
            return deck.keySet().stream().mapToInt(this::of).sum();
        }

        List<String> kindsMissing() {
            return deck.keySet().stream().filter(k -> of(k) == 0).toList();
        }
    }

    // ---- one run against one variant --------------------------------------------------------------------------------

    static final class Run {
        final Variant variant;
        final long durationSeconds;
        final SplittableRandom random;
        /** Fault switches that failed (control plane errors, kills, restarts, deletions): each one fails the run. */
        final List<String> switchFailures = Collections.synchronizedList(new ArrayList<>());
        final Stripe stripe = new Stripe(this::switchFailed);
        final List<Instance> instances = new ArrayList<>();
        final List<Payment> payments = Collections.synchronizedList(new ArrayList<>());
        /** client + "\n" + Idempotency-Key -> payment: which payment a deleted row belonged to. */
        final Map<String, Payment> paymentsByKey = new ConcurrentHashMap<>();
        final Tally tally = new Tally();
        /** chargeonce only: the refunds clients asked for, and the answers to their requests (apart from the charges'). */
        final List<Refund> refunds = Collections.synchronizedList(new ArrayList<>());
        final Tally refundTally = new Tally();
        /** 409 and 503 answers to refunds by error code (stripe_outcome_unknown: a Stripe fault hit the refund's create). */
        final Map<String, AtomicLong> refundRetryCodes = new ConcurrentHashMap<>();
        final FaultLog faults;
        /** chargeonce only: the webhook endpoint the stand-in delivers to (the control has none). */
        final WebhookRelay relay;
        /** The 3-D Secure customers and the watchers of their charges' states (until the audit). */
        final ExecutorService customers = Executors.newVirtualThreadPerTaskExecutor();
        volatile boolean watchingStates = true;
        /** Customers who will still complete or fail their 3-D Secure (the states cannot have settled before). */
        final AtomicInteger customersToAct = new AtomicInteger();
        /** GET /v1/charges/{id} of the watchers (apart from the clients' tally). */
        final Tally stateReads = new Tally();
        final Map<String, AtomicLong> webhookGenerations = new ConcurrentHashMap<>();
        long stateWaitMillis;
        String statesLeft = "";
        final ExecutorService background = Executors.newVirtualThreadPerTaskExecutor();
        final AtomicLong latencyGeneration = new AtomicLong();
        volatile boolean faultsOn = true;
        long endAt;

        Run(Variant variant, long durationSeconds, long seed) {
            this.variant = variant;
            this.durationSeconds = durationSeconds;
            this.random = new SplittableRandom(seed);
            this.faults = new FaultLog(faultDeck(variant));
            this.relay = variant == Variant.CHARGEONCE ? new WebhookRelay(instances) : null;
        }

        synchronized SplittableRandom rnd() {
            return random.split();
        }

        void switchFailed(String what) {
            log("FAULT SWITCH FAILED (" + variant.database + "): " + what);
            switchFailures.add(what);
        }

        Audit execute() throws Exception {
            log("=== " + variant.label + ": " + durationSeconds + " s of chaos ===");
            prepareDatabase();
            stripe.start();
            if (relay != null) {
                relay.start();
                stripe.webhooks("url=" + java.net.URLEncoder.encode(relay.url(), StandardCharsets.UTF_8) + "&secret=" + WEBHOOK_SECRET);
                log("webhooks: the stand-in delivers every event, signed, to " + relay.url() + ", one instance at random per delivery");
            } else {
                log("the naive control has no webhook endpoint: its stand-in delivers no events (no webhook faults, "
                        + "no 3-D Secure customer, no charge-state audit for it)");
            }
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
                // Ready, not merely alive: an instance that refuses its configuration (lease too short, ...) keeps
                // exiting, and one that never gets ready would turn the run into a test of nothing.
                if (!instance.start(Duration.ofSeconds(90))) {
                    throw new IllegalStateException(instance.name() + " did not start (not ready within 90 s); see its log in "
                            + results.resolve("logs"));
                }
            }
            log(n + " instances up" + (!replicaForThis ? "" : variant == Variant.NAIVE ? ", key lookups on the lagging replica"
                    : ", replica datasource configured (GETs; the idempotency path stays on the primary)"));

            long start = System.currentTimeMillis();
            faults.t0 = start;
            for (Instance instance : instances) {
                faults.event(instance.name() + " listens on :" + instance.port);
            }
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
                    log(String.format(Locale.ROOT, "  %s: %d payments, %d requests, %d refunds (%d requests), faults %s",
                            variant.database, payments.size(), tally.requests.get(), refunds.size(), refundTally.requests.get(),
                            faults.counts));
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
            stripe.faults("latency_ms=0&fail_before=0&fail_after=0&drop_after=0&rate_limit=0&plan=");
            if (relay != null) {
                stripe.webhooks("duplicates=1&reorder=false&delay_ms=0&lose=false");
            }
            for (Instance instance : instances) {
                if (!instance.alive() && !instance.start(Duration.ofSeconds(90))) {
                    switchFailed(instance.name() + " did not come back after the chaos");
                }
            }
            log("chaos over after " + chaosMillis / 1000 + " s; waiting for recovery to finish every row");
            long recoveryStart = System.currentTimeMillis();
            // Rows wait for their lease (10 s) after a crash, and for request-max-duration (15 s) after the key's last
            // send when Stripe answered 5xx, before a driver may look the key up: a few of those in a row still fit.
            long recoveryDeadline = recoveryStart + seconds(opt("recovery-timeout", "180s")) * 1000;
            long unfinished;
            while ((unfinished = unfinishedRows()) > 0 && System.currentTimeMillis() < recoveryDeadline) {
                sleep(500);
            }
            long recoveryMillis = System.currentTimeMillis() - recoveryStart;
            log("rows not terminal after " + recoveryMillis + " ms: " + unfinished);

            // ---- every client asks once more: the final answer must be the one it got first
            finalRound();

            // ---- the charges' states settle: customers act, events arrive (or the catch-up finds them), the sync
            // worker cancels abandoned 3-D Secure; then the watchers stop
            if (variant == Variant.CHARGEONCE) {
                awaitStates();
            }
            watchingStates = false;
            customers.shutdown();
            customers.awaitTermination(30, TimeUnit.SECONDS);

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
            if (relay != null) {
                relay.stop();
            }
            return audit;
        }

        /**
         * Waits (up to --state-timeout, 150 s) until the charges' states have settled: every customer acted, every
         * event Stripe made of a type the service follows (PaymentIntents' and refunds') is recorded by the service
         * (delivered, or found by its catch-up), no accepted charge is
         * still requires_action or processing (abandoned 3-D Secure is canceled by the sync worker after the
         * requires-action expiry), and every charge's state equals its PaymentIntent's at Stripe. What is still
         * left at the deadline is audited as it is.
         */
        void awaitStates() {
            long start = System.currentTimeMillis();
            long deadline = start + seconds(opt("state-timeout", "150s")) * 1000;
            String left;
            while ((left = statesLeft()) != null && System.currentTimeMillis() < deadline) {
                sleep(2_000);
            }
            stateWaitMillis = System.currentTimeMillis() - start;
            statesLeft = left == null ? "" : left;
            log(left == null ? "charge states settled after " + stateWaitMillis + " ms"
                    : "charge states NOT settled after " + stateWaitMillis + " ms: " + left);
        }

        /** What the charges' states still wait for; null when nothing. */
        String statesLeft() {
            List<String> left = new ArrayList<>();
            int toAct = customersToAct.get();
            if (toAct > 0) {
                left.add(toAct + " customers still to authenticate");
            }
            try {
                // The events of the types the service follows (PaymentIntents' and refunds'): delivered, or found by
                // the catch-up, which runs every catch-up-interval on each instance (30 s after its start first).
                Map<String, String> made = stripe.events();
                Map<String, Intent> ledger = new java.util.HashMap<>();
                for (Intent pi : Audit.parseLedger(stripe.get("/_sandbox/ledger"))) {
                    ledger.put(pi.id(), pi);
                }
                try (Connection c = Audit.connect(variant); Statement st = c.createStatement()) {
                    Set<String> recorded = new java.util.HashSet<>();
                    try (ResultSet rs = st.executeQuery("SELECT id FROM stripe_events")) {
                        while (rs.next()) {
                            recorded.add(rs.getString(1));
                        }
                    }
                    long paymentIntentEvents = 0;
                    long paymentIntentMissing = 0;
                    long refundEvents = 0;
                    long refundMissing = 0;
                    for (Map.Entry<String, String> e : made.entrySet()) {
                        boolean missing = !recorded.contains(e.getKey());
                        if (PAYMENT_INTENT_EVENTS.contains(e.getValue())) {
                            paymentIntentEvents++;
                            paymentIntentMissing += missing ? 1 : 0;
                        } else if (REFUND_EVENTS.contains(e.getValue())) {
                            refundEvents++;
                            refundMissing += missing ? 1 : 0;
                        }
                    }
                    if (paymentIntentMissing > 0) {
                        left.add(paymentIntentMissing + " of Stripe's " + paymentIntentEvents + " PaymentIntent events not recorded");
                    }
                    if (refundMissing > 0) {
                        left.add(refundMissing + " of Stripe's " + refundEvents + " refund events not recorded");
                    }
                    int pending = 0;
                    int differ = 0;
                    try (ResultSet rs = st.executeQuery("SELECT status, charge_status, payment_intent_id FROM stripe_intents"
                            + " WHERE payment_intent_id IS NOT NULL AND NOT needs_reconciliation")) {
                        while (rs.next()) {
                            String state = Audit.chargeState(rs.getString(1), rs.getString(2));
                            if (rank(state) < 3) {
                                pending++;
                            }
                            Intent pi = ledger.get(rs.getString(3));
                            if (pi == null || !state.equals(pi.state())) {
                                differ++;
                            }
                        }
                    }
                    if (pending > 0) {
                        left.add(pending + " charges still requires_action or processing");
                    }
                    if (differ > 0) {
                        left.add(differ + " charges whose state differs from their PaymentIntent's");
                    }
                    // Refunds: every row terminal (a parked one waits for an operator), every refund's state Stripe's.
                    Map<String, String> refundStatus = new java.util.HashMap<>();
                    for (Audit.StripeRefund sr : Audit.parseRefunds(stripe.get("/_sandbox/refunds"))) {
                        refundStatus.put(sr.id(), sr.status());
                    }
                    int refundsProcessing = 0;
                    int refundsDiffer = 0;
                    try (ResultSet rs = st.executeQuery("SELECT status, refund_status, stripe_refund_id FROM stripe_refunds"
                            + " WHERE NOT needs_reconciliation")) {
                        while (rs.next()) {
                            if ("processing".equals(rs.getString(1))) {
                                refundsProcessing++;
                            } else if (rs.getString(3) != null && !java.util.Objects.equals(rs.getString(2), refundStatus.get(rs.getString(3)))) {
                                refundsDiffer++;
                            }
                        }
                    }
                    if (refundsProcessing > 0) {
                        left.add(refundsProcessing + " refunds still processing");
                    }
                    if (refundsDiffer > 0) {
                        left.add(refundsDiffer + " refunds whose state differs from Stripe's");
                    }
                }
            } catch (IOException | SQLException | RuntimeException e) {
                left.add("cannot tell: " + e);
            }
            return left.isEmpty() ? null : String.join(", ", left);
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

        /** Rows recovery may still finish, refunds' included (a parked row waits for an operator: the audit judges it). */
        long unfinishedRows() {
            String unfinished = "SELECT count(*) FROM stripe_intents WHERE status NOT IN ('completed', 'failed', 'accepted') AND NOT needs_reconciliation";
            if (variant == Variant.CHARGEONCE) {
                unfinished = "SELECT (" + unfinished + ") + (SELECT count(*) FROM stripe_refunds WHERE status = 'processing'"
                        + " AND NOT needs_reconciliation)";
            }
            try (Connection c = Audit.connect(variant); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery(unfinished)) {
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
            String pm = roll < 86 ? "pm_card_visa" : roll < 93 ? "pm_card_chargeDeclined"
                    : roll < 97 ? "pm_card_authenticationRequired" : "pm_card_threeDSecure2Required";
            String id = "pay_" + UUID.randomUUID().toString().replace("-", "").substring(0, 20);
            Payment p = new Payment(id, acme ? "acme" : "globex", acme ? ACME_KEY : GLOBEX_KEY,
                    "chaos-" + UUID.randomUUID(), 100 + r.nextInt(99_900), pm);
            payments.add(p);
            paymentsByKey.put(p.client + "\n" + p.key, p);
            identity(p.client, p.key);
            return p;
        }

        /**
         * Records an answer of a payment; its first 202 (3-D Secure to complete) sends its customer to Stripe.js and
         * a watcher to the charge's state.
         */
        void record(Payment p, Answer a) {
            p.record(a);
            if (a.status() == 202 && p.customerStarted.compareAndSet(false, true)) {
                SplittableRandom r = new SplittableRandom(p.key.hashCode());
                int roll = r.nextInt(100);
                // Most complete it, some fail it, some never come back (the service cancels those after the expiry).
                p.customerChoice = roll < 70 ? "succeeded" : roll < 85 ? "failed" : "never";
                if (!p.customerChoice.equals("never")) {
                    customersToAct.incrementAndGet();
                }
                customers.submit(() -> customer(p, a, r));
            }
        }

        /**
         * The customer of a 202: authenticates 0.3-6 s later (or never), while the charge's state is read with GET on
         * random instances every 0.8-2.5 s, until it is final, or failed for a customer who failed it, or the audit.
         */
        void customer(Payment p, Answer accepted, SplittableRandom r) {
            String paymentIntent = Json.field(accepted.body(), "payment_intent");
            String chargeId = Json.field(accepted.body(), "id");
            p.statesSeen.add(new StateSeen(accepted.receivedAt(), accepted.port(), Json.field(accepted.body(), "status"), "POST 202"));
            boolean acted = p.customerChoice.equals("never");
            long actAt = System.currentTimeMillis() + 300 + r.nextInt(5_701);
            try {
                while (watchingStates) {
                    if (!acted && System.currentTimeMillis() >= actAt) {
                        acted = true;
                        try {
                            stripe.authenticate(paymentIntent, p.customerChoice);
                            p.customerOutcome = "done";
                        } catch (IOException | RuntimeException e) {
                            // Too late: the service canceled it meanwhile (an answer, not a harness failure).
                            p.customerOutcome = "refused: " + e.getMessage();
                        }
                        p.customerActedAt = System.currentTimeMillis();
                        customersToAct.decrementAndGet();
                    }
                    Instance instance = anyInstance(r);
                    Answer read = Http.get(URI.create("http://127.0.0.1:" + instance.port + "/v1/charges/" + chargeId), p.apiKey,
                            Duration.ofSeconds(5));
                    stateReads.count(read);
                    if (read.status() == 404) {
                        // An accepted row is never deleted (lost commits take finished rows only): reported, with its story.
                        p.statesSeen.add(new StateSeen(read.receivedAt(), read.port(), "404 " + read.body(), "GET"));
                    }
                    if (read.status() == 200) {
                        String state = Json.field(read.body(), "status");
                        p.statesSeen.add(new StateSeen(read.receivedAt(), read.port(), state, "GET"));
                        if (acted && (finalState(state) || ("failed".equals(state) && p.customerChoice.equals("failed")))) {
                            return;
                        }
                    }
                    sleep(800 + r.nextInt(1_701));
                }
            } finally {
                if (!acted) {
                    customersToAct.decrementAndGet();
                }
            }
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
                record(p, a);
                if (a.isFinal() || a.isParked()) {
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
                    record(p, replay);
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
                if (variant == Variant.CHARGEONCE && first.status() == 201 && r.nextInt(100) < REFUND_SHARE
                        && System.currentTimeMillis() < endAt - 1_000) {
                    refundsOf(p, first, r.split());
                }
            }
        }

        // ---- refunds (chargeonce only: the naive control has none)

        /** The share (%) of the charges answered 201 whose client then refunds them, in one of the patterns below. */
        static final int REFUND_SHARE = 30;

        /**
         * The client of a charge answered 201 refunds it: in full (no amount: what is left); one partial refund;
         * 2-3 partials one after another, sometimes followed by a full refund of the rest and another full one (which
         * finds nothing left); 2-4 partials at once, their first requests to both instances; or 2-3 partials of more
         * than half the charge each (at once or one after another), so that their sum is over the charge and
         * {@code amount_too_large} must come. Each refund has its own key and is asked like a payment: random
         * timeouts, retried with the same key until a final answer, sometimes sent twice at once, asked again.
         */
        void refundsOf(Payment p, Answer charged, SplittableRandom r) {
            String chargeId = Json.field(charged.body(), "id");
            String paymentIntent = Json.field(charged.body(), "payment_intent");
            if (chargeId == null || paymentIntent == null) {
                return;
            }
            long amount = p.amount;
            int roll = r.nextInt(100);
            List<Long> amounts = new ArrayList<>();
            String pattern;
            boolean atOnce = false;
            if (roll < 25) {
                pattern = "full";
                amounts.add(null);
            } else if (roll < 45) {
                pattern = "partial";
                amounts.add(1 + r.nextLong(amount - 1));
            } else if (roll < 65) {
                pattern = "partials";
                int n = 2 + r.nextInt(2);
                for (int i = 0; i < n; i++) {
                    amounts.add(1 + r.nextLong(amount / n));
                }
                if (r.nextBoolean()) {
                    amounts.add(null); // the rest
                    if (r.nextBoolean()) {
                        amounts.add(null); // nothing left: amount_too_large
                    }
                }
            } else if (roll < 83) {
                pattern = "at once";
                atOnce = true;
                int n = 2 + r.nextInt(3);
                for (int i = 0; i < n; i++) {
                    amounts.add(1 + r.nextLong(amount / n));
                }
            } else {
                pattern = "over the charge";
                atOnce = r.nextBoolean();
                int n = 2 + r.nextInt(2);
                for (int i = 0; i < n; i++) {
                    amounts.add(amount / 2 + 1 + r.nextLong(amount - amount / 2)); // each more than half
                }
            }
            List<Refund> group = new ArrayList<>();
            for (Long a : amounts) {
                String reason = switch (r.nextInt(4)) {
                    case 0 -> "duplicate";
                    case 1 -> "requested_by_customer";
                    default -> null;
                };
                Refund f = new Refund("rq_" + UUID.randomUUID().toString().replace("-", "").substring(0, 20), p, chargeId,
                        paymentIntent, "chaos-refund-" + UUID.randomUUID(), a, pattern, reason);
                f.concurrentWithOthers = atOnce;
                group.add(f);
                p.refunds.add(f);
                refunds.add(f);
            }
            if (atOnce) {
                List<Thread> threads = new ArrayList<>();
                for (int i = 0; i < group.size(); i++) {
                    Refund f = group.get(i);
                    SplittableRandom fr = r.split();
                    int firstInstance = i % instances.size();
                    threads.add(Thread.ofVirtual().start(() -> askForRefund(f, fr, firstInstance)));
                }
                for (Thread t : threads) {
                    try {
                        t.join();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            } else {
                for (Refund f : group) {
                    askForRefund(f, r.split(), -1);
                }
            }
        }

        /** One refund, as a payment is asked: until a final answer; then perhaps again, or with another body. */
        void askForRefund(Refund f, SplittableRandom r, int firstInstance) {
            List<Thread> duplicates = new ArrayList<>();
            if (r.nextInt(100) < 15) {
                f.duplicatedConcurrently = true;
                for (int i = 0, extra = 1 + r.nextInt(2); i < extra; i++) {
                    SplittableRandom dr = r.split();
                    duplicates.add(Thread.ofVirtual().start(() -> driveRefund(f, dr, endAt, -1)));
                }
            }
            driveRefund(f, r, endAt, firstInstance);
            for (Thread d : duplicates) {
                try {
                    d.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
            Answer first = f.firstFinal.get();
            if (first == null) {
                return; // the final round asks again
            }
            if (r.nextInt(100) < 20) {
                f.record(sendRefund(f, f.body, anyInstance(r), Duration.ofSeconds(5)));
            }
            if (first.status() == 201 && r.nextInt(100) < 3) {
                // Same key, another body: must be refused (422), never refunded. Only on a key that was stored: a key
                // refused before Stripe (amount_too_large) holds nothing, and another body is a new request there.
                for (int i = 0; i < 5; i++) {
                    Answer a = sendRefund(f, f.conflictingBody, anyInstance(r), Duration.ofSeconds(5));
                    if (Refund.isFinal(a)) {
                        f.conflictAnswers.add(a);
                        break;
                    }
                    sleep(200);
                }
            }
        }

        /** Retries a refund until a final (or parked) answer or the deadline; the first request to {@code firstInstance}. */
        void driveRefund(Refund f, SplittableRandom r, long deadline, int firstInstance) {
            int next = firstInstance;
            while (f.firstFinal.get() == null && System.currentTimeMillis() < deadline) {
                Instance target = next >= 0 ? instances.get(next) : anyInstance(r);
                next = -1;
                Answer a = sendRefund(f, f.body, target, Duration.ofMillis(300 + r.nextInt(3_700)));
                f.record(a);
                if (Refund.isFinal(a) || Refund.isParked(a)) {
                    return;
                }
                sleep(a.status() == -1 ? 50 + r.nextInt(400) : 100 + r.nextInt(700));
            }
        }

        Answer sendRefund(Refund f, String body, Instance target, Duration timeout) {
            f.requests.incrementAndGet();
            Answer a = Http.post(target.refunds(f.chargeId), f.payment.apiKey, f.key, body, timeout);
            refundTally.count(a);
            if (a.status() == 409 || a.status() == 503) {
                refundRetryCodes.computeIfAbsent(a.status() + " " + errorCode(a), k -> new AtomicLong()).incrementAndGet();
            }
            return a;
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
            // Every payment, the ones whose row was deleted included: a lost row is claimed again here at the latest.
            log("final round: every client asks once more for its " + payments.size() + " payments ("
                    + payments.stream().filter(Payment::lost).count() + " of them lost a row)");
            Semaphore parallel = new Semaphore(32);
            long deadline = System.currentTimeMillis() + seconds(opt("final-round-timeout", "120s")) * 1000;
            try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
                for (Payment p : List.copyOf(payments)) {
                    pool.submit(() -> {
                        parallel.acquireUninterruptibly();
                        try {
                            SplittableRandom r = new SplittableRandom(p.key.hashCode());
                            while (System.currentTimeMillis() < deadline) {
                                Answer a = send(p, p.body, r, Duration.ofSeconds(15));
                                record(p, a);
                                if (a.isFinal() || a.isParked()) {
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
            if (refunds.isEmpty()) {
                return;
            }
            // Then every refund, once more with its key: a refund that never got a final answer gets one here.
            log("final round: every client asks once more for its " + refunds.size() + " refunds");
            long refundDeadline = System.currentTimeMillis() + seconds(opt("final-round-timeout", "120s")) * 1000;
            try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
                for (Refund f : List.copyOf(refunds)) {
                    pool.submit(() -> {
                        parallel.acquireUninterruptibly();
                        try {
                            SplittableRandom r = new SplittableRandom(f.key.hashCode());
                            while (System.currentTimeMillis() < refundDeadline) {
                                Answer a = sendRefund(f, f.body, anyInstance(r), Duration.ofSeconds(15));
                                f.record(a);
                                if (Refund.isFinal(a) || Refund.isParked(a)) {
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

        /**
         * The fault kinds and their weights: cards of a deck the schedule deals from, reshuffled when it is empty.
         * One deck (31 cards, one every 0.4-2.2 s: about 40 s) holds every kind, so a run of 60 s or more deals each
         * at least once (the verdict requires it), while the weights keep crashes and database cuts the most common.
         */
        static Map<String, Integer> faultDeck(Variant variant) {
            Map<String, Integer> deck = new LinkedHashMap<>();
            deck.put("kill_9", 4);
            deck.put("sigterm", 2);
            deck.put("db_cut", 4);
            deck.put("lost_commit", 3);
            deck.put("stripe_latency_spike", 3);
            deck.put("stripe_keeps_running", 3);
            deck.put("stripe_edge_after_slow", 2);
            deck.put("stripe_edge", 2);
            // Against chargeonce every Stripe fault below also reaches refund creates (POST /v1/refunds goes through
            // StripeSandbox.idempotent like a PaymentIntent create): latency, the plan's slow / edge / fail_before /
            // fail_after / drop steps, and the drop_after and rate_limit counters, to whichever create comes next. The
            // fail_before / fail_after counters count PaymentIntent creates only: see fiveHundreds(). Kills, SIGTERMs,
            // database cuts and webhook faults reach refunds as they reach charges; lost commits take charges only
            // (see loseCommits()).
            deck.put("stripe_500_before_charging", 2);
            deck.put("stripe_500_after_charging", 2);
            deck.put("stripe_drop_after_charging", 2);
            deck.put("stripe_429", 2);
            if (variant == Variant.CHARGEONCE) {
                // Webhooks (the control has no webhook endpoint): bursts of duplicate deliveries, deliveries delayed at
                // random so that events overtake each other, and an outage whose events are never delivered (the
                // service's catch-up must find them in Stripe's Events API).
                deck.put("webhook_duplicates", 2);
                deck.put("webhook_reorder", 2);
                deck.put("webhook_outage", 2);
            }
            return Collections.unmodifiableMap(deck);
        }

        void faultSchedule() {
            SplittableRandom r = rnd();
            List<String> deck = new ArrayList<>();
            while (System.currentTimeMillis() < endAt - 1_000) {
                sleep(400 + r.nextInt(1_800));
                if (System.currentTimeMillis() >= endAt - 1_000) {
                    break;
                }
                if (deck.isEmpty()) {
                    faults.deck.forEach((kind, weight) -> deck.addAll(Collections.nCopies(weight, kind)));
                    for (int i = deck.size() - 1; i > 0; i--) {
                        Collections.swap(deck, i, r.nextInt(i + 1));
                    }
                }
                String kind = deck.remove(deck.size() - 1);
                boolean injected;
                try {
                    injected = inject(kind, r);
                } catch (RuntimeException e) {
                    switchFailed(kind + ": " + e);
                    injected = true;
                }
                if (!injected) {
                    // Not possible right now (both instances down, no finished row yet): back into the deck, so that
                    // the kind still comes up in this run.
                    deck.add(r.nextInt(deck.size() + 1), kind);
                }
            }
        }

        /** Injects one fault; false when it could not be injected now (not a failure: tried again later). */
        boolean inject(String kind, SplittableRandom r) {
            switch (kind) {
                case "kill_9" -> {
                    return killAndRestart(r, true);
                }
                case "sigterm" -> {
                    return killAndRestart(r, false);
                }
                case "db_cut" -> cutDatabase(r);
                case "lost_commit" -> {
                    return loseCommits(r);
                }
                case "stripe_latency_spike" -> latencySpike(r);
                case "stripe_keeps_running" -> {
                    // Creates that the stand-in executes (and charges) seconds after the service's read timeout (2 s)
                    // gave up on them: the service must wait for them, never take them for absent.
                    List<String> steps = new ArrayList<>();
                    for (int i = 0, n = 1 + r.nextInt(3); i < n; i++) {
                        steps.add("slow:" + slowStepMillis(r));
                    }
                    plan(kind, steps);
                }
                case "stripe_edge_after_slow" -> {
                    // One create keeps running while the next ones get a 502 from Stripe's edge (nothing executed,
                    // nothing stored). The edges go to whichever creates come next: the slow request's own retry when
                    // it is the next to arrive, another payment's otherwise.
                    List<String> steps = new ArrayList<>(List.of("slow:" + slowStepMillis(r)));
                    steps.addAll(Collections.nCopies(1 + r.nextInt(4), "edge"));
                    plan(kind, steps);
                }
                case "stripe_edge" -> plan(kind, Collections.nCopies(1 + r.nextInt(5), "edge"));
                case "stripe_500_before_charging" -> fiveHundreds(kind, "fail_before", 1 + r.nextInt(5), r);
                case "stripe_500_after_charging" -> fiveHundreds(kind, "fail_after", 1 + r.nextInt(5), r);
                case "stripe_drop_after_charging" -> counter(kind, "drop_after", 1 + r.nextInt(5));
                case "stripe_429" -> counter(kind, "rate_limit", 1 + r.nextInt(10));
                case "webhook_duplicates" -> webhookFault(kind, "duplicates=" + (2 + r.nextInt(4)), "duplicates=1",
                        2_000 + r.nextInt(6_001));
                case "webhook_reorder" -> webhookFault(kind, "reorder=true&delay_ms=" + (500 + r.nextInt(4_501)),
                        "reorder=false&delay_ms=0", 2_000 + r.nextInt(6_001));
                case "webhook_outage" -> webhookFault(kind, "lose=true", "lose=false", 1_000 + r.nextInt(5_001));
                default -> throw new IllegalArgumentException("unknown fault " + kind);
            }
            return true;
        }

        static long slowStepMillis(SplittableRandom r) {
            return 3_000 + r.nextInt(LONGEST_SLOW_STEP_MS - 3_000 + 1);
        }

        /** A script for the next creates; it replaces what is left of an earlier one (the stand-in keeps one plan). */
        void plan(String kind, List<String> steps) {
            if (stripe.faults("plan=" + String.join(",", steps))) {
                faults.note(kind, "plan " + String.join(",", steps));
            }
        }

        /**
         * Switches the stand-in's webhook delivery for {@code spanMillis}, then back (unless the same kind was switched
         * again meanwhile: the later one's span wins).
         */
        void webhookFault(String kind, String on, String off, long spanMillis) {
            long generation = webhookGenerations.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
            if (!stripe.webhooks(on)) {
                return;
            }
            faults.note(kind, on + " for " + spanMillis + " ms");
            background.submit(() -> {
                sleep(spanMillis);
                if (webhookGenerations.get(kind).get() == generation) {
                    stripe.webhooks(off);
                }
            });
        }

        /**
         * Stripe 500s before or after executing. The stand-in's counters {@code fail_before} / {@code fail_after} count
         * PaymentIntent creates only (StripeSandbox.execute consumes them; SandboxRefunds.create looks at the plan's
         * step only), so against chargeonce half of these faults are a plan of as many {@code fail_before} /
         * {@code fail_after} steps instead: the next creates take them whichever they are, refunds included (a plan
         * replaces what is left of an earlier one, as every plan does).
         */
        void fiveHundreds(String kind, String step, int n, SplittableRandom r) {
            if (variant == Variant.CHARGEONCE && r.nextBoolean()) {
                List<String> steps = Collections.nCopies(n, step);
                if (stripe.faults("plan=" + String.join(",", steps))) {
                    faults.note(kind, "plan " + String.join(",", steps) + " (the next creates, refunds included)");
                }
            } else if (stripe.faults(step + "=" + n)) {
                faults.note(kind, "next " + n + " PaymentIntent creates (counter)");
            }
        }

        void counter(String kind, String counter, int n) {
            if (stripe.faults(counter + "=" + n)) {
                faults.note(kind, "next " + n + " creates");
            }
        }

        boolean killAndRestart(SplittableRandom r, boolean kill9) {
            List<Instance> candidates = instances.stream().filter(i -> !i.busy && i.alive()).toList();
            if (candidates.isEmpty()) {
                return false;
            }
            Instance victim = candidates.get(r.nextInt(candidates.size()));
            victim.busy = true;
            long down = 300 + r.nextInt(3_000);
            faults.note(kill9 ? "kill_9" : "sigterm", victim.name() + ", restart after " + down + " ms");
            background.submit(() -> {
                try {
                    if (kill9) {
                        if (!victim.kill9()) {
                            switchFailed("kill -9 of " + victim.name() + ": still running 10 s later");
                        }
                    } else {
                        String stopped = victim.terminate();
                        if (stopped.equals("killed")) {
                            faults.finding("sigterm_needed_kill_9", victim.name() + " did not stop within 15 s of SIGTERM");
                        } else if (stopped.equals("failed")) {
                            switchFailed("SIGTERM of " + victim.name() + ": still running after SIGTERM and kill -9");
                        }
                    }
                    sleep(down);
                    long restart = System.currentTimeMillis();
                    if (victim.start(Duration.ofSeconds(60))) {
                        faults.event(victim.name() + " ready again, " + (System.currentTimeMillis() - restart) + " ms after its restart");
                    } else if (!stopping) {
                        switchFailed("restart of " + victim.name() + ": not ready within 60 s (see its log in "
                                + results.resolve("logs") + ")");
                    }
                } catch (RuntimeException e) {
                    switchFailed("kill/restart of " + victim.name() + ": " + e);
                } finally {
                    victim.busy = false;
                }
            });
            return true;
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
            // Mostly 0.3-5.3 s; one in ten 8.5-10.5 s, longer than a whole create call (9.7 s) and than the lease.
            long latency = r.nextInt(100) < 10 ? LONGEST_LATENCY_MS - 2_000 + r.nextInt(2_001) : 300 + r.nextInt(5_000);
            long span = 1_000 + r.nextInt(5_000);
            long generation = latencyGeneration.incrementAndGet();
            if (!stripe.faults("latency_ms=" + latency)) {
                return;
            }
            faults.note("stripe_latency_spike", latency + " ms for " + span + " ms");
            background.submit(() -> {
                sleep(span);
                if (latencyGeneration.get() == generation) {
                    stripe.faults("latency_ms=0");
                }
            });
        }

        /**
         * A failover to an asynchronous standby, or a restore, loses the last commits: 1-3 rows among the 20 most
         * recently finished ones disappear from the target's table (deleted in PostgreSQL, which the harness owns).
         * The clients go on: a client of each lost payment asks again, 0.2-3 s later or only after the lookup-skew
         * (and the final round asks every payment). The audit then expects the same PaymentIntent under a new charge
         * id, or a parked key (503 charge_under_reconciliation), never a second PaymentIntent.
         */
        boolean loseCommits(SplittableRandom r) {
            int n = 1 + r.nextInt(3);
            // The naive control's table has no finished_at (its rows are finished when they are inserted) and no
            // Stripe attempt.
            String finishedAt = variant == Variant.CHARGEONCE ? "finished_at" : "created_at";
            String attempt = variant == Variant.CHARGEONCE ? "stripe_attempt" : "1";
            // One lost commit in three takes rows whose Stripe attempt had moved on (attempt 1 proven empty after a
            // stored 5xx, attempt 2 charged), when there are any: the new row sends attempt 1 again, Stripe replays
            // that 5xx for a key the row never sent, and the service must find the payment by its identity (or park
            // the row), never move on to a PaymentIntent of its own. The other lost rows get Stripe's replay.
            List<String> filters = variant == Variant.CHARGEONCE && r.nextInt(3) == 0
                    ? List.of(" AND stripe_attempt > 1", "") : List.of("");
            // A charge that has refunds is not taken: its refunds' rows name it (a foreign key), and a lost commit
            // that took the charge would have taken its later refunds with it. Refund rows are never deleted: a lost
            // refund row without the charge's reservation (stripe_intents.amount_reserved, written by the same
            // claim) is not a state a failover can leave, and losing both is not modelled here.
            String noRefunds = variant == Variant.CHARGEONCE
                    ? " AND NOT EXISTS (SELECT 1 FROM stripe_refunds r WHERE r.client_id = stripe_intents.client_id"
                      + " AND r.charge_id = stripe_intents.id)" : "";
            long started = System.currentTimeMillis();
            List<LostRow> deleted = new ArrayList<>();
            List<Payment> owners = new ArrayList<>();
            try (Connection c = Audit.connect(variant)) {
                // Counted before the DELETE: a row that finishes after the DELETE's snapshot and before a count taken
                // after it would make "deleted nothing although N finished rows exist" a false alarm (a CI run saw
                // it 2 s into the chaos, when the first burst of charges finished together). A finished row stays
                // finished, so what this count sees, the DELETE sees too (unless a refund claims it meanwhile).
                long finishedBefore;
                try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                        "SELECT count(*) FROM stripe_intents WHERE status IN ('completed', 'failed') AND NOT needs_reconciliation"
                                + noRefunds)) {
                    rs.next();
                    finishedBefore = rs.getLong(1);
                }
                for (String filter : filters) {
                    try (java.sql.PreparedStatement ps = c.prepareStatement(
                            // by (client_id, id), and the refunds joined by their client too: one form for plain
                            // PostgreSQL and Citus (scale/citus/run.sh), where the tables are distributed by client
                            "DELETE FROM stripe_intents WHERE (client_id, id) IN (SELECT client_id, id FROM (SELECT client_id, id FROM stripe_intents"
                                    + " WHERE status IN ('completed', 'failed') AND NOT needs_reconciliation" + filter + noRefunds
                                    + " ORDER BY " + finishedAt + " DESC LIMIT 20) recent ORDER BY random() LIMIT ?)"
                                    + " RETURNING id, client_id, " + keyColumn(variant) + ", status, " + attempt)) {
                        ps.setInt(1, n);
                        try (ResultSet rs = ps.executeQuery()) {
                            while (rs.next()) {
                                LostRow lost = new LostRow(rs.getString(1), rs.getString(4), rs.getInt(5), started);
                                Payment p = paymentsByKey.get(rs.getString(2) + "\n" + keyOf(variant, rs.getString(3)));
                                if (p == null) {
                                    switchFailed("lost_commit deleted row " + lost.chargeId() + " of no payment of this run");
                                    continue;
                                }
                                p.lostRows.add(lost);
                                deleted.add(lost);
                                owners.add(p);
                            }
                        }
                    }
                    if (!deleted.isEmpty()) {
                        break;
                    }
                }
                if (deleted.isEmpty()) {
                    if (finishedBefore > 0) {
                        switchFailed("lost_commit deleted nothing although " + finishedBefore + " finished rows existed before it");
                    }
                    return false; // nothing finished yet: try again later
                }
            } catch (SQLException e) {
                if ("23503".equals(e.getSQLState())) {
                    // A refund was claimed on a chosen charge between the DELETE's look and its delete: nothing was
                    // deleted (one statement); the lost commit is dealt again later.
                    faults.event("lost_commit not now: a refund was just claimed on a chosen charge (" + e.getMessage() + ")");
                    return false;
                }
                switchFailed("lost_commit: the DELETE failed: " + e.getMessage());
                return true; // counted as a failure, not retried
            }
            faults.note("lost_commit", deleted.size() + " rows: " + deleted);
            faults.count("lost_rows", deleted.size());
            faults.count("lost_rows_attempt_moved_on", (int) deleted.stream().filter(l -> l.stripeAttempt() > 1).count());
            // Half of the lost payments are asked again at once (0.2-3 s), half only after the lookup-skew has passed
            // (2-10 s more), as a client coming back later: then the PaymentIntent is older than any window the new
            // row's own sends open, and only Stripe's replay or a search by identity can find it.
            long skewMillis = seconds(opt("lookup-skew", "10s")) * 1000;
            for (Payment p : owners) {
                SplittableRandom pr = r.split();
                long wait = pr.nextBoolean() ? 200 + pr.nextInt(2_800) : skewMillis + 2_000 + pr.nextInt(8_000);
                background.submit(() -> {
                    sleep(wait);
                    askAgain(p, pr, endAt);
                });
            }
            return true;
        }

        /** A client asks for a payment again (whatever it was told before) until it gets a final or a parked answer. */
        void askAgain(Payment p, SplittableRandom r, long deadline) {
            while (System.currentTimeMillis() < deadline) {
                Answer a = send(p, p.body, r, Duration.ofMillis(300 + r.nextInt(3_700)));
                record(p, a);
                if (a.isFinal() || a.isParked()) {
                    return;
                }
                sleep(a.status() == -1 ? 50 + r.nextInt(400) : 100 + r.nextInt(700));
            }
        }
    }

    // ---- the audit ------------------------------------------------------------------------------------------------

    record Row(String id, String client, String key, String status, Integer responseStatus, String responseBody,
               String paymentIntentId, boolean needsReconciliation, String reconciliationReason) {
        /** The service's identity of (client, key) at Stripe: {@code chargeonce_key} (KeyIdentities, version 1). */
        String identity() {
            return Chaos.identity(client, key);
        }

        boolean terminal() {
            return ("completed".equals(status) || "failed".equals(status) || "accepted".equals(status)) && !needsReconciliation;
        }
    }

    /** {@code paymentError}: it carries a last_payment_error (a decline, a failed 3-D Secure). */
    record Intent(String id, String status, String identity, String paymentId, boolean paymentError, long amount) {
        boolean charged() {
            return "succeeded".equals(status);
        }

        /** The charge state this PaymentIntent means: failed is requires_payment_method with an error. */
        String state() {
            return "requires_payment_method".equals(status) && paymentError ? "failed" : status;
        }
    }

    static final class Audit {
        final String label;
        long chaosSeconds;
        long plannedSeconds;
        long recoveryMillis;
        long unfinishedAfterRecovery;
        int instances;
        Tally tally;
        FaultLog faults;
        List<String> switchFailures = List.of();
        long payments, settled, concurrentDuplicates, succeededForClient, declinedForClient, neverFinal;
        long stripeCreates, intents, chargedIntents;
        long rows, rowsCompleted, rowsFailed, rowsNotTerminal, rowsMissing;
        long duplicatePayments, doubleCharged, extraIntents;
        long toldSucceededStripeHasNot, chargedButNotToldSucceeded, rowDisagreesWithStripe, orphanIntents;
        long replayMismatches, rowAnswerMismatches, conflictsSent, conflictsRefused, conflictsCharged, unexpectedFinal;
        long answersOfUnknownRows;
        long readsAfterSuccess, readsNotFound, readsDiffering, readsOfLostRow;
        long lostPayments, lostRecovered, lostParked, parkedAnswers;
        // Webhooks, 3-D Secure and the charges' states: chargeonce only (the naive control has no webhook endpoint).
        boolean webhooks;
        long acceptedForClient, rowsAccepted;
        long customersCompleted, customersFailed, customersAbandoned, customersTooLate;
        long eventsMade, standInDelivered, standInFailedTries;
        long deliveries, deliveriesAcknowledged, duplicatesAcknowledged, deliveriesFailed, deliveriesUnreachable, deliveriesRefused;
        long inboxRecorded, inboxFromWebhook, inboxFromCatchUp, inboxApplied, inboxIgnored, inboxUnknown;
        long eventsNeverRecorded, refundEventsNeverRecorded, unfollowedEventsNeverRecorded, unknownOfKnownCharge, unknownWhileRowLost, unknownOfNoRow;
        long statesCompared, stateMismatches, statesBackwards, stateReads, stateReadsOk, stateReadsNotFound;
        final Map<String, Long> finalStates = new TreeMap<>();
        // Refunds: chargeonce only (the naive control has none).
        boolean refundsAudited;
        Tally refundTally = new Tally();
        final Map<String, Long> refundRetryCodes = new TreeMap<>();
        final Map<String, Long> refundPatterns = new TreeMap<>();
        final Map<String, Long> refundRowStates = new TreeMap<>();
        long refundsRequested, refundCharges, refundsSettled, refundsMade, refundsTooLarge, refundsOfLostCharge, refundsParked;
        long refundsAtOnce, refundsDuplicatedConcurrently, stripeRefundCreates, stripeRefunds, stripeRefundsLaterAttempt;
        long amountRefunded, refundRows;
        long refundDuplicates, overRefunds, toldRefundedStripeHasNot, refundedButToldOtherwise, refusedButSent, wronglyRefused;
        long orphanRefunds, refundRowsNotTerminal, refundNeverFinal, refundRowMissing, refundReplayMismatch, refundRowAnswerMismatch;
        long refundRowStripeDisagree, reservationMismatch, refundConflictsSent, refundConflictsRefused, refundConflictsAccepted;
        long refundUnexpectedFinal, unknownOfKnownRefund;
        /** Stripe's refunds by id and the refund rows by identity, for the events' audit. */
        Map<String, StripeRefund> stripeRefundById = Map.of();
        Map<String, RefundRow> refundRowByIdentity = Map.of();
        long stateWaitMillis;
        String statesLeft = "";
        /** Evidence by kind, most serious kinds first, at most 50 examples of each. */
        final Map<String, List<String>> evidence = new LinkedHashMap<>();

        Audit(String label) {
            this.label = label;
        }

        /**
         * Parked keys after a lost commit are not counted: the service cannot prove the payment's outcome from a
         * history the database lost, and says so (503 charge_under_reconciliation) instead of charging again. They are
         * reported apart. A parked key whose row was never lost counts (a row not terminal).
         */
        long violations() {
            return duplicatePayments + doubleCharged + toldSucceededStripeHasNot + chargedButNotToldSucceeded
                    + rowDisagreesWithStripe + orphanIntents + rowsNotTerminal + rowsMissing + replayMismatches
                    + rowAnswerMismatches + answersOfUnknownRows + conflictsCharged + neverFinal + unexpectedFinal
                    + readsNotFound + readsDiffering
                    + stateMismatches + statesBackwards + unknownOfKnownCharge + eventsNeverRecorded + refundEventsNeverRecorded
                    + deliveriesRefused
                    + refundViolations();
        }

        /**
         * A parked refund row (503 refund_under_reconciliation) is not counted: it is reported apart, as a parked
         * charge after a lost commit is. Everything else below is.
         */
        long refundViolations() {
            return refundDuplicates + overRefunds + toldRefundedStripeHasNot + refundedButToldOtherwise + refusedButSent
                    + wronglyRefused + orphanRefunds + refundRowsNotTerminal + refundNeverFinal + refundRowMissing
                    + refundReplayMismatch + refundRowAnswerMismatch + refundRowStripeDisagree + reservationMismatch
                    + refundConflictsAccepted + refundUnexpectedFinal + unknownOfKnownRefund;
        }

        /** The refunds' summary line. */
        String refundSummary() {
            return String.format(Locale.ROOT, "Refunds (%s): %d requested on %d charges, %d made (201), %d refused amount_too_large"
                            + " before Stripe, %d of a lost charge row (404), parked=%d, duplicates=%d, over-refunds=%d, %d refund"
                            + " violations.", label, refundsRequested, refundCharges, refundsMade, refundsTooLarge,
                    refundsOfLostCharge, refundsParked, refundDuplicates, overRefunds, refundViolations());
        }

        /** Why this run proves nothing: failed fault switches, too few faults or payments, a kind of fault missing. */
        List<String> harnessFailures(int minFaults, int minPayments) {
            List<String> out = new ArrayList<>();
            for (String f : switchFailures) {
                out.add(label + ": a fault switch failed: " + f);
            }
            if (faults.total() < minFaults) {
                out.add(label + ": only " + faults.total() + " faults injected (minimum " + minFaults + ", --min-faults)");
            }
            if (settled < minPayments) {
                out.add(label + ": only " + settled + " payments settled (minimum " + minPayments + ", --min-payments)");
            }
            // One deck of faults holds every kind and takes about 40 s to deal: from 60 s on, each kind must occur.
            if (plannedSeconds >= 60 && !faults.kindsMissing().isEmpty()) {
                out.add(label + ": fault kinds never injected in " + plannedSeconds + " s: " + faults.kindsMissing());
            }
            // The webhook and 3-D Secure paths must have been exercised, or their audit proved nothing.
            if (webhooks && plannedSeconds >= 60 && acceptedForClient == 0) {
                out.add(label + ": no payment was answered 202 (3-D Secure) in " + plannedSeconds + " s");
            }
            if (webhooks && deliveriesAcknowledged == 0) {
                out.add(label + ": no webhook delivery was acknowledged");
            }
            // The refund paths too: made, refused over the charge, and refunds of one charge at once.
            if (refundsAudited && plannedSeconds >= 60) {
                if (refundsMade == 0) {
                    out.add(label + ": no refund was made (201) in " + plannedSeconds + " s");
                }
                if (refundsTooLarge == 0) {
                    out.add(label + ": no refund was refused amount_too_large in " + plannedSeconds + " s");
                }
                if (refundsAtOnce == 0) {
                    out.add(label + ": no refunds of one charge were asked at once in " + plannedSeconds + " s");
                }
            }
            return out;
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
                    "REFUND DUPLICATE", "OVER-REFUND", "TOLD REFUNDED, STRIPE HAS NO SUCH REFUND",
                    "REFUNDED AT STRIPE, CLIENT TOLD OTHERWISE", "REFUSED BEFORE STRIPE, YET SENT",
                    "REFUSED AMOUNT_TOO_LARGE WITH ENOUGH LEFT", "ORPHAN REFUND", "REFUND ROW NOT TERMINAL",
                    "REFUND WITHOUT A FINAL ANSWER", "REFUND ROW MISSING", "REFUND REPLAY DIFFERS",
                    "REFUND ROW HOLDS ANOTHER ANSWER", "REFUND ROW/STRIPE DISAGREE", "RESERVATION DIFFERS FROM REFUNDS",
                    "REFUND KEY REUSE ACCEPTED", "UNEXPECTED REFUND ANSWER", "UNKNOWN EVENT OF A KNOWN REFUND",
                    "CHARGE STATE DIFFERS FROM STRIPE", "CHARGE STATE MOVED BACKWARDS", "UNKNOWN EVENT OF A KNOWN CHARGE",
                    "EVENT NEVER RECORDED", "REFUND EVENT NEVER RECORDED", "WEBHOOK REFUSED",
                    "REPLAY DIFFERS", "ANSWER AFTER LOST ROW DIFFERS", "ANSWER OF AN UNKNOWN ROW", "ROW HOLDS ANOTHER ANSWER",
                    "KEY REUSE ACCEPTED", "READ AFTER SUCCESS NOT FOUND", "READ AFTER SUCCESS DIFFERS", "NO FINAL ANSWER",
                    "ROW MISSING", "ROW NOT TERMINAL", "UNEXPECTED FINAL ANSWER", "ORPHAN PAYMENTINTENT",
                    "PARKED AFTER LOST COMMIT", "RECOVERED AFTER LOST COMMIT", "READ OF A DELETED ROW",
                    "UNKNOWN EVENT WHILE THE ROW WAS LOST", "CUSTOMER TOO LATE", "REFUND PARKED", "REFUND OF A LOST CHARGE ROW",
                    "UNFOLLOWED EVENT NEVER RECORDED")) {
                List<String> examples = evidence.get(kind);
                if (examples != null) {
                    out.append("== ").append(kind).append(" (first ").append(examples.size()).append(")\n");
                    examples.forEach(e -> out.append(e).append('\n'));
                }
            }
            if (!switchFailures.isEmpty()) {
                out.append("== FAULT SWITCHES THAT FAILED\n");
                switchFailures.forEach(e -> out.append(e).append('\n'));
            }
            return out.toString();
        }

        static Audit of(Run run, long chaosMillis, long recoveryMillis, long unfinished) throws Exception {
            Audit a = new Audit(run.variant.label);
            a.chaosSeconds = chaosMillis / 1000;
            a.plannedSeconds = run.durationSeconds;
            a.recoveryMillis = recoveryMillis;
            a.unfinishedAfterRecovery = unfinished;
            a.instances = run.instances.size();
            a.tally = run.tally;
            a.faults = run.faults;
            a.switchFailures = List.copyOf(run.switchFailures);
            long t0 = run.faults.t0;

            // Stripe's side: every PaymentIntent, with the identity of (client, key) the service wrote
            // (chargeonce_key) and the payment the client wrote (chaos_payment).
            String ledgerJson = run.stripe.get("/_sandbox/ledger");
            Files.writeString(results.resolve(run.variant.database + "-ledger.json"), ledgerJson);
            List<Intent> ledger = parseLedger(ledgerJson);
            Map<?, ?> stats = (Map<?, ?>) Json.parse(run.stripe.get("/_sandbox/stats"));
            a.stripeCreates = ((Number) stats.get("create_requests")).longValue();
            a.intents = ledger.size();
            a.chargedIntents = ledger.stream().filter(Intent::charged).count();

            // The database's side: client + Idempotency-Key -> charge id, status, stored answer.
            Map<String, Row> rowByPayment = new TreeMap<>();
            Map<String, Row> rowByIdentity = new TreeMap<>();
            String reason = run.variant == Variant.CHARGEONCE ? "reconciliation_reason" : "NULL";
            try (Connection c = connect(run.variant); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                    "SELECT id, client_id, " + keyColumn(run.variant) + ", status, response_status, response_body, payment_intent_id, "
                            + "needs_reconciliation, " + reason + " FROM stripe_intents")) {
                while (rs.next()) {
                    int rsStatus = rs.getInt(5);
                    Row row = new Row(rs.getString(1), rs.getString(2), keyOf(run.variant, rs.getString(3)), rs.getString(4),
                            rs.wasNull() ? null : rsStatus, rs.getString(6), rs.getString(7), rs.getBoolean(8), rs.getString(9));
                    rowByPayment.put(row.client() + "\n" + row.key(), row);
                    rowByIdentity.put(row.identity(), row);
                }
            }
            a.rows = rowByPayment.size();
            for (Row row : rowByPayment.values()) {
                Payment owner = run.paymentsByKey.get(row.client() + "\n" + row.key());
                if (row.terminal()) {
                    if ("completed".equals(row.status())) {
                        a.rowsCompleted++;
                    } else if ("accepted".equals(row.status())) {
                        a.rowsAccepted++;
                    } else {
                        a.rowsFailed++;
                    }
                } else if (!(row.needsReconciliation() && owner != null && owner.lost())) {
                    // (a parked row of a payment that lost a row is counted with the lost payments below)
                    a.rowsNotTerminal++;
                    a.note("ROW NOT TERMINAL", row + (owner == null ? "" : owner.story(t0)));
                }
            }

            Map<String, List<Intent>> byPayment = new TreeMap<>();
            for (Intent pi : ledger) {
                byPayment.computeIfAbsent(String.valueOf(pi.paymentId()), k -> new ArrayList<>()).add(pi);
                if (pi.identity() == null || !rowByIdentity.containsKey(pi.identity())) {
                    a.orphanIntents++;
                    a.note("ORPHAN PAYMENTINTENT", pi + " is of no (client, key) the database has");
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
                boolean lost = p.lost();
                String where = "payment " + p.id + " (client " + p.client + ", key " + p.key + ", identity "
                        + identity(p.client, p.key) + ", row " + (row == null ? "none" : row.id() + " " + row.status()
                        + (row.needsReconciliation() ? " parked: " + row.reconciliationReason() : ""))
                        + (lost ? ", rows deleted: " + p.lostChargeIds() : "") + ")";
                a.parkedAnswers += p.parked.size();
                if (first != null || !p.parked.isEmpty()) {
                    a.settled++;
                }

                if (pis.size() > 1) {
                    a.duplicatePayments++;
                    a.extraIntents += pis.size() - 1;
                    a.note("DUPLICATE", where + " has " + pis.size() + " PaymentIntents at Stripe: " + pis + p.story(t0));
                }
                if (charged.size() > 1) {
                    a.doubleCharged++;
                }
                if (lost) {
                    a.lostPayments++;
                    if (row != null && row.needsReconciliation()) {
                        a.lostParked++;
                        a.note("PARKED AFTER LOST COMMIT", where + ", " + p.parked.size() + " answers 503 charge_under_reconciliation, "
                                + pis.size() + " PaymentIntent(s): " + pis + p.story(t0));
                    } else if (row != null && row.terminal()) {
                        a.lostRecovered++;
                        a.note("RECOVERED AFTER LOST COMMIT", where + ", Stripe: " + pis + p.story(t0));
                    }
                }
                if (first == null) {
                    if (!(lost && row != null && row.needsReconciliation())) {
                        a.neverFinal++;
                        a.note("NO FINAL ANSWER", where + p.story(t0));
                    }
                    continue;
                }
                if (row == null) {
                    a.rowsMissing++;
                    a.note("ROW MISSING", where + " got a final answer but has no row" + p.story(t0));
                }
                if (first.status() == 201) {
                    a.succeededForClient++;
                    String pi = Json.field(first.body(), "payment_intent");
                    if (charged.stream().noneMatch(i -> i.id().equals(pi))) {
                        a.toldSucceededStripeHasNot++;
                        a.note("LOSS", where + " was told succeeded with " + pi + " but Stripe has no such charge: " + pis + p.story(t0));
                    }
                } else if (first.status() == 202) {
                    // 3-D Secure to complete: the customer may complete it, so the 202's own PaymentIntent may be
                    // charged (the charge's state must then say succeeded: the state audit), never another one.
                    a.acceptedForClient++;
                    String pi = Json.field(first.body(), "payment_intent");
                    if (charged.stream().anyMatch(i -> !i.id().equals(pi))) {
                        a.chargedButNotToldSucceeded++;
                        a.note("CHARGED BUT TOLD OTHERWISE", where + " got " + first.describe() + " but Stripe charged " + charged + p.story(t0));
                    }
                } else {
                    // 402: declined.
                    if (first.status() == 402) {
                        a.declinedForClient++;
                    } else {
                        a.unexpectedFinal++;
                        a.note("UNEXPECTED FINAL ANSWER", where + ": " + first.describe());
                    }
                    if (!charged.isEmpty()) {
                        a.chargedButNotToldSucceeded++;
                        a.note("CHARGED BUT TOLD OTHERWISE", where + " got " + first.describe() + " but Stripe charged " + charged + p.story(t0));
                    }
                }
                checkAnswers(a, p, row, first, where, t0);
                if (row != null && "completed".equals(row.status())) {
                    if (charged.size() != 1 || !charged.get(0).id().equals(row.paymentIntentId())) {
                        a.rowDisagreesWithStripe++;
                        a.note("ROW/STRIPE DISAGREE", where + " row says " + row.paymentIntentId() + ", Stripe has " + pis);
                    }
                }
                for (Answer read : List.copyOf(p.readsAfterSuccess)) {
                    a.readsAfterSuccess++;
                    if (read.status() == 404) {
                        String readId = first.chargeId();
                        boolean deletedBefore = List.copyOf(p.lostRows).stream()
                                .anyMatch(l -> l.chargeId().equals(readId) && l.deleteStarted() <= read.receivedAt());
                        if (deletedBefore) {
                            // The row was deleted (lost commit) before the GET came back: a 404 is the truth then.
                            a.readsOfLostRow++;
                            a.note("READ OF A DELETED ROW", where + ": GET after " + first.describe() + " answered " + read.describe());
                        } else {
                            a.readsNotFound++;
                            a.note("READ AFTER SUCCESS NOT FOUND", where + ": GET after " + first.describe() + " answered " + read.describe());
                        }
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
            if (run.variant == Variant.CHARGEONCE) {
                auditRefunds(a, run, ledger, t0);
            }
            if (run.relay != null) {
                auditStates(a, run, ledger, t0);
            }
            Files.writeString(results.resolve(run.variant.database + "-audit.txt"), a.evidenceText());
            // Every payment's story (times from the start of the chaos, the instance's port), for reading a run closely.
            try (var out = Files.newBufferedWriter(results.resolve(run.variant.database + "-payments.txt"))) {
                for (Payment p : List.copyOf(run.payments)) {
                    out.write(p.id + " " + p.client + " " + p.key + " " + identity(p.client, p.key) + p.story(t0) + "\n");
                }
            }
            log(a.label + ": " + a.violations() + " violations; evidence in " + results.resolve(run.variant.database + "-audit.txt"));
            return a;
        }

        /** A refund at Stripe, as the stand-in's control plane lists it; {@code stripeKey}: the Idempotency-Key it was made with. */
        record StripeRefund(String id, String paymentIntent, long amount, String status, String identity, String chaosRefund,
                            String stripeKey) {
            /** Pending and succeeded refunds are what a PaymentIntent can no longer refund. */
            boolean counts() {
                return "pending".equals(status) || "succeeded".equals(status) || "requires_action".equals(status);
            }
        }

        /** A refund row (stripe_refunds). {@code parked}: needs_reconciliation. */
        record RefundRow(String id, String chargeId, String client, String key, String status, long amount,
                         Integer responseStatus, String responseBody, String stripeRefundId, String refundStatus,
                         String identity, boolean parked, String reconciliationReason, int stripeAttempt) {
            /** Its amount still held on the charge: not failed, and not failed or canceled at Stripe. */
            boolean reserves() {
                return !"failed".equals(status) && !"failed".equals(refundStatus) && !"canceled".equals(refundStatus);
            }
        }

        static List<StripeRefund> parseRefunds(String json) {
            List<StripeRefund> out = new ArrayList<>();
            for (Object o : (List<?>) ((Map<?, ?>) Json.parse(json)).get("data")) {
                Map<?, ?> r = (Map<?, ?>) o;
                Map<?, ?> md = r.get("metadata") instanceof Map<?, ?> m ? m : Map.of();
                out.add(new StripeRefund((String) r.get("id"), (String) r.get("payment_intent"), number(r.get("amount")),
                        (String) r.get("status"), (String) md.get("chargeonce_key"), (String) md.get("chaos_refund"),
                        (String) r.get("sandbox_idempotency_key")));
            }
            return out;
        }

        static Long longField(String json, String name) {
            Object o = Json.parseQuietly(json);
            return o instanceof Map<?, ?> m && m.get(name) instanceof Number n ? n.longValue() : null;
        }

        /** The charge row of {@code chargeId} of this payment was deleted (lost commit) before {@code at}. */
        static boolean chargeLostBefore(Payment p, String chargeId, long at) {
            return List.copyOf(p.lostRows).stream().anyMatch(l -> l.chargeId().equals(chargeId) && l.deleteStarted() <= at);
        }

        /**
         * Refunds (chargeonce only): Stripe's refunds (the stand-in's /_sandbox/refunds, each with the identity the
         * service wrote, chargeonce_key = StripeKeys.refundIdentity, and the chaos_refund its client wrote), the refund
         * rows and the charges' reservations, and every answer each refund's client got. Violations: a logical refund
         * with more than one Stripe refund; a PaymentIntent whose pending + succeeded refunds exceed its amount, or a
         * charge whose clients were told 201 for more than it was paid; a 201 naming no Stripe refund of that key,
         * amount and PaymentIntent; a refund Stripe made whose client was told something else; a refund refused before
         * Stripe (amount_too_large, or 404 of a charge row a lost commit deleted) that has a row or a Stripe refund;
         * amount_too_large although the charge still has that much unreserved (no reservation was ever given back); a
         * Stripe refund of no refund row; a row still processing (not parked) after the settle phase; a refund without
         * a final answer (not parked); a made refund without a row; a replay that differs from the first final answer
         * (byte for byte; amount_too_large: its code); a row whose stored answer is not the first one; a row that
         * disagrees with its Stripe refund (identity, amount, state); a charge whose amount_reserved is not the sum of
         * its refunds that hold an amount; another body on a refund key not refused with 422; any other final answer.
         */
        static void auditRefunds(Audit a, Run run, List<Intent> ledger, long t0) throws Exception {
            a.refundsAudited = true;
            a.refundTally = run.refundTally;
            run.refundRetryCodes.forEach((code, n) -> a.refundRetryCodes.put(code, n.get()));
            String json = run.stripe.get("/_sandbox/refunds");
            Files.writeString(results.resolve(run.variant.database + "-refunds.json"), json);
            List<StripeRefund> atStripe = parseRefunds(json);
            a.stripeRefundCreates = number(((Map<?, ?>) Json.parse(run.stripe.get("/_sandbox/refunds/requests"))).get("create_requests"));
            Map<String, StripeRefund> byId = new java.util.HashMap<>();
            Map<String, List<StripeRefund>> byIdentity = new java.util.HashMap<>();
            Map<String, List<StripeRefund>> byChaosRefund = new java.util.HashMap<>();
            Map<String, List<StripeRefund>> byPaymentIntent = new TreeMap<>();
            for (StripeRefund sr : atStripe) {
                a.stripeRefunds++;
                if (sr.counts()) {
                    a.amountRefunded += sr.amount();
                }
                if (sr.stripeKey() != null && !sr.stripeKey().endsWith("-a1")) {
                    a.stripeRefundsLaterAttempt++;
                }
                byId.put(sr.id(), sr);
                byIdentity.computeIfAbsent(String.valueOf(sr.identity()), k -> new ArrayList<>()).add(sr);
                byChaosRefund.computeIfAbsent(String.valueOf(sr.chaosRefund()), k -> new ArrayList<>()).add(sr);
                byPaymentIntent.computeIfAbsent(String.valueOf(sr.paymentIntent()), k -> new ArrayList<>()).add(sr);
            }
            a.stripeRefundById = byId;
            Map<String, Intent> intentById = new java.util.HashMap<>();
            ledger.forEach(pi -> intentById.put(pi.id(), pi));

            // The database's side: the refund rows, and the reservations of the charges they name.
            Map<String, RefundRow> rowByKey = new java.util.HashMap<>();
            Map<String, RefundRow> rowByIdentity = new java.util.HashMap<>();
            Map<String, List<RefundRow>> rowsByCharge = new java.util.HashMap<>();
            Map<String, long[]> charges = new TreeMap<>();
            try (Connection c = connect(run.variant); Statement st = c.createStatement()) {
                try (ResultSet rs = st.executeQuery("SELECT id, charge_id, client_id, stripe_identity, status, amount, response_status,"
                        + " response_body, stripe_refund_id, refund_status, stripe_identity, needs_reconciliation,"
                        + " reconciliation_reason, stripe_attempt FROM stripe_refunds")) {
                    while (rs.next()) {
                        int responseStatus = rs.getInt(7);
                        RefundRow row = new RefundRow(rs.getString(1), rs.getString(2), rs.getString(3), KEYS_BY_IDENTITY.get(rs.getString(4)),
                                rs.getString(5), rs.getLong(6), rs.wasNull() ? null : responseStatus, rs.getString(8),
                                rs.getString(9), rs.getString(10), rs.getString(11), rs.getBoolean(12), rs.getString(13),
                                rs.getInt(14));
                        rowByKey.put(row.client() + "\n" + row.key(), row);
                        rowByIdentity.put(String.valueOf(row.identity()), row);
                        rowsByCharge.computeIfAbsent(row.chargeId(), k -> new ArrayList<>()).add(row);
                    }
                }
                try (ResultSet rs = st.executeQuery("SELECT id, amount, amount_reserved FROM stripe_intents"
                        + " WHERE amount_reserved <> 0 OR id IN (SELECT charge_id FROM stripe_refunds)")) {
                    while (rs.next()) {
                        charges.put(rs.getString(1), new long[] {rs.getLong(2), rs.getLong(3)});
                    }
                }
            }
            a.refundRows = rowByKey.size();
            a.refundRowByIdentity = rowByIdentity;
            Map<String, Refund> refundByKey = new java.util.HashMap<>();
            for (Refund f : List.copyOf(run.refunds)) {
                refundByKey.put(f.payment.client + "\n" + f.key, f);
            }

            // Every Stripe refund is of a refund key the database has; no PaymentIntent refunded beyond its amount.
            for (StripeRefund sr : atStripe) {
                if (sr.identity() == null || !rowByIdentity.containsKey(sr.identity())) {
                    a.orphanRefunds++;
                    a.note("ORPHAN REFUND", sr + " is of no refund key the database has");
                }
            }
            for (Map.Entry<String, List<StripeRefund>> e : byPaymentIntent.entrySet()) {
                long refunded = e.getValue().stream().filter(StripeRefund::counts).mapToLong(StripeRefund::amount).sum();
                Intent pi = intentById.get(e.getKey());
                long paid = pi == null || !pi.charged() ? 0 : pi.amount();
                if (refunded > paid) {
                    a.overRefunds++;
                    a.note("OVER-REFUND", "PaymentIntent " + e.getKey() + " (" + (pi == null ? "absent" : pi.status() + ", amount "
                            + pi.amount()) + ") has pending + succeeded refunds of " + refunded + " at Stripe: " + e.getValue());
                }
            }

            // Every logical refund against Stripe, its row and the answers its client got.
            Map<String, Long> toldByCharge = new TreeMap<>();
            Map<String, List<Refund>> refundsByCharge = new TreeMap<>();
            List<Refund> refusedTooLarge = new ArrayList<>();
            for (Refund f : List.copyOf(run.refunds)) {
                a.refundsRequested++;
                refundsByCharge.computeIfAbsent(f.chargeId, k -> new ArrayList<>()).add(f);
                a.refundPatterns.merge(f.pattern, 1L, Long::sum);
                if (f.concurrentWithOthers) {
                    a.refundsAtOnce++;
                }
                if (f.duplicatedConcurrently) {
                    a.refundsDuplicatedConcurrently++;
                }
                RefundRow row = rowByKey.get(f.payment.client + "\n" + f.key);
                java.util.LinkedHashMap<String, StripeRefund> madeById = new java.util.LinkedHashMap<>();
                byIdentity.getOrDefault(f.identity(), List.of()).forEach(sr -> madeById.put(sr.id(), sr));
                byChaosRefund.getOrDefault(f.id, List.of()).forEach(sr -> madeById.put(sr.id(), sr));
                List<StripeRefund> made = List.copyOf(madeById.values());
                Answer first = f.firstFinal.get();
                String where = f.describe() + ", row " + (row == null ? "none" : row.id() + " " + row.status()
                        + (row.parked() ? " parked: " + row.reconciliationReason() : "")) + ", Stripe: " + made;
                String evidence = where + f.story(t0) + "\n  payment " + f.payment.id + f.payment.story(t0);
                if (first != null || !f.parked.isEmpty()) {
                    a.refundsSettled++;
                }
                if (made.size() > 1) {
                    a.refundDuplicates++;
                    List<String> needles = new ArrayList<>(made.stream().map(StripeRefund::id).toList());
                    needles.add(row == null ? null : row.id());
                    a.note("REFUND DUPLICATE", evidence + logLines(needles.toArray(String[]::new)));
                }
                if (row != null && row.parked()) {
                    a.refundsParked++;
                    a.note("REFUND PARKED", evidence + logLines(row.id()));
                }
                if (first == null) {
                    if (row == null || !row.parked()) {
                        a.refundNeverFinal++;
                        a.note("REFUND WITHOUT A FINAL ANSWER", evidence);
                    }
                    continue;
                }
                boolean madeAtStripe = made.stream().anyMatch(StripeRefund::counts);
                if (first.status() == 201) {
                    a.refundsMade++;
                    String stripeId = Json.field(first.body(), "stripe_refund");
                    Long amount = longField(first.body(), "amount");
                    StripeRefund sr = stripeId == null ? null : byId.get(stripeId);
                    boolean same = sr != null && f.identity().equals(sr.identity()) && amount != null && sr.amount() == amount
                            && f.paymentIntent.equals(sr.paymentIntent()) && sr.counts()
                            && (f.amount == null || f.amount.equals(amount)) && f.chargeId.equals(Json.field(first.body(), "charge"));
                    if (!same) {
                        a.toldRefundedStripeHasNot++;
                        a.note("TOLD REFUNDED, STRIPE HAS NO SUCH REFUND", where + "\n    told: " + first.describe()
                                + "\n    Stripe's " + stripeId + ": " + sr + f.story(t0));
                    }
                    if (amount != null) {
                        toldByCharge.merge(f.chargeId, amount, Long::sum);
                    }
                    if (row == null) {
                        a.refundRowMissing++;
                        a.note("REFUND ROW MISSING", evidence);
                    }
                } else {
                    if (madeAtStripe) {
                        a.refundedButToldOtherwise++;
                        a.note("REFUNDED AT STRIPE, CLIENT TOLD OTHERWISE", where + " got " + first.describe() + f.story(t0));
                    }
                    boolean lostCharge = first.status() == 404 && chargeLostBefore(f.payment, f.chargeId, first.receivedAt());
                    if (tooLargeBeforeStripe(first) || lostCharge) {
                        if (lostCharge) {
                            a.refundsOfLostCharge++;
                            a.note("REFUND OF A LOST CHARGE ROW", evidence);
                        } else {
                            a.refundsTooLarge++;
                            refusedTooLarge.add(f);
                        }
                        // Refused before Stripe: nothing stored, nothing sent.
                        if (row != null || !made.isEmpty()) {
                            a.refusedButSent++;
                            a.note("REFUSED BEFORE STRIPE, YET SENT", evidence);
                        }
                    } else {
                        a.refundUnexpectedFinal++;
                        a.note("UNEXPECTED REFUND ANSWER", where + ": " + first.describe() + f.story(t0));
                    }
                }
                for (Answer later : List.copyOf(f.finals)) {
                    boolean same = tooLargeBeforeStripe(first) ? tooLargeBeforeStripe(later)
                            : later.status() == first.status() && later.body().equals(first.body());
                    if (!same) {
                        a.refundReplayMismatch++;
                        a.note("REFUND REPLAY DIFFERS", where + "\n    first: " + first.describe() + "\n    later: "
                                + later.describe() + f.story(t0));
                        break;
                    }
                }
                if (row != null && row.responseStatus() != null
                        && (row.responseStatus() != first.status() || !first.body().equals(row.responseBody()))) {
                    a.refundRowAnswerMismatch++;
                    a.note("REFUND ROW HOLDS ANOTHER ANSWER", where + "\n    client: " + first.describe() + "\n    row: "
                            + row.responseStatus() + " " + row.responseBody());
                }
                if (!f.conflictAnswers.isEmpty()) {
                    a.refundConflictsSent++;
                    for (Answer c : List.copyOf(f.conflictAnswers)) {
                        if (c.status() == 422) {
                            a.refundConflictsRefused++;
                        } else {
                            a.refundConflictsAccepted++;
                            a.note("REFUND KEY REUSE ACCEPTED", where + " other body answered " + c.describe());
                        }
                    }
                }
            }
            a.refundCharges = refundsByCharge.size();

            // What clients were told was refunded never exceeds what was paid.
            for (Map.Entry<String, Long> e : toldByCharge.entrySet()) {
                Refund any = refundsByCharge.get(e.getKey()).get(0);
                if (e.getValue() > any.payment.amount) {
                    a.overRefunds++;
                    StringBuilder group = new StringBuilder();
                    refundsByCharge.get(e.getKey()).forEach(f -> group.append("\n  ").append(f.describe()).append(f.story(t0)));
                    a.note("OVER-REFUND", "charge " + e.getKey() + " (amount " + any.payment.amount + "): clients were told 201"
                            + " for refunds of " + e.getValue() + " in all" + group);
                }
            }

            // Every row: terminal after the settle phase (parked ones reported), as its Stripe refund says.
            for (List<RefundRow> ofCharge : rowsByCharge.values()) {
                for (RefundRow row : ofCharge) {
                    Refund owner = refundByKey.get(row.client() + "\n" + row.key());
                    String story = owner == null ? " (of no refund of this run)" : "\n  " + owner.describe() + owner.story(t0);
                    if (owner == null) {
                        a.orphanRefunds++;
                        a.note("ORPHAN REFUND", "row " + row + " is of no refund of this run");
                    }
                    if (!refundIdentity(row.client(), row.key()).equals(row.identity())) {
                        a.refundRowStripeDisagree++;
                        a.note("REFUND ROW/STRIPE DISAGREE", "row " + row + ": its stripe_identity is not StripeKeys.refundIdentity"
                                + " of its client and key (" + refundIdentity(row.client(), row.key()) + ")");
                    }
                    if ("processing".equals(row.status())) {
                        a.refundRowStates.merge(row.parked() ? "parked" : "processing", 1L, Long::sum);
                        if (!row.parked()) {
                            a.refundRowsNotTerminal++;
                            a.note("REFUND ROW NOT TERMINAL", "row " + row + story + logLines(row.id()));
                        }
                        continue;
                    }
                    a.refundRowStates.merge(row.status() + (row.refundStatus() == null ? "" : " " + row.refundStatus()), 1L, Long::sum);
                    List<StripeRefund> ofKey = byIdentity.getOrDefault(String.valueOf(row.identity()), List.of());
                    if (row.stripeRefundId() != null) {
                        StripeRefund sr = byId.get(row.stripeRefundId());
                        if (sr == null || !java.util.Objects.equals(row.identity(), sr.identity()) || sr.amount() != row.amount()
                                || !java.util.Objects.equals(row.refundStatus(), sr.status())) {
                            a.refundRowStripeDisagree++;
                            a.note("REFUND ROW/STRIPE DISAGREE", "row " + row + ", Stripe's " + row.stripeRefundId() + ": " + sr + story);
                        }
                    } else if (!"failed".equals(row.status()) || !ofKey.isEmpty()) {
                        // A made refund names its Stripe refund; a refused one (no Stripe refund named) has none at Stripe.
                        a.refundRowStripeDisagree++;
                        a.note("REFUND ROW/STRIPE DISAGREE", "row " + row + " names no Stripe refund; Stripe has " + ofKey + story);
                    }
                }
            }

            // The reservation: a charge's amount_reserved is the sum of its refunds that hold an amount, always.
            for (Map.Entry<String, long[]> e : charges.entrySet()) {
                List<RefundRow> ofCharge = rowsByCharge.getOrDefault(e.getKey(), List.of());
                long expected = ofCharge.stream().filter(RefundRow::reserves).mapToLong(RefundRow::amount).sum();
                if (e.getValue()[1] != expected) {
                    a.reservationMismatch++;
                    a.note("RESERVATION DIFFERS FROM REFUNDS", "charge " + e.getKey() + " (amount " + e.getValue()[0]
                            + ") has amount_reserved " + e.getValue()[1] + ", its refunds hold " + expected + ": " + ofCharge);
                }
            }

            // amount_too_large only when the charge had less left. Reservations only grow on a charge none of whose
            // refunds ever gave one back (failed or canceled): then what is left at the audit is at most what was left
            // when the refusal came, and a refund that fits in it now would have fitted then.
            for (Refund f : refusedTooLarge) {
                long[] charge = charges.get(f.chargeId);
                if (charge == null) {
                    charge = new long[] {f.payment.amount, 0};
                }
                boolean gaveBack = rowsByCharge.getOrDefault(f.chargeId, List.of()).stream().anyMatch(row -> !row.reserves());
                long left = charge[0] - charge[1];
                if (!gaveBack && (f.amount == null ? left > 0 : f.amount <= left)) {
                    a.wronglyRefused++;
                    a.note("REFUSED AMOUNT_TOO_LARGE WITH ENOUGH LEFT", f.describe() + ": the charge has " + left + " of "
                            + charge[0] + " left at the audit" + f.story(t0));
                }
            }

            try (var out = Files.newBufferedWriter(results.resolve(run.variant.database + "-refunds.txt"))) {
                out.write("# every refund: its identity, charge, pattern, and each request's send and answer times (s from the chaos' start)\n");
                for (Refund f : List.copyOf(run.refunds)) {
                    out.write(f.describe() + f.story(t0) + "\n");
                }
            }
        }

        /** The stand-in's ledger: every PaymentIntent with its identity (chargeonce_key) and payment (chaos_payment). */
        static List<Intent> parseLedger(String ledgerJson) {
            List<Intent> ledger = new ArrayList<>();
            for (Object o : (List<?>) ((Map<?, ?>) Json.parse(ledgerJson)).get("data")) {
                Map<?, ?> pi = (Map<?, ?>) o;
                Map<?, ?> md = (Map<?, ?>) pi.get("metadata");
                ledger.add(new Intent((String) pi.get("id"), (String) pi.get("status"),
                        md == null ? null : (String) md.get("chargeonce_key"), md == null ? null : (String) md.get("chaos_payment"),
                        pi.get("last_payment_error") != null, number(pi.get("amount"))));
            }
            return ledger;
        }

        /** The charge's state as GET /v1/charges/{id} shows it (ChargeQueries.view): charge_status, else by the row's status. */
        static String chargeState(String status, String chargeStatus) {
            if (chargeStatus != null) {
                return chargeStatus;
            }
            return switch (status) {
                case "completed" -> "succeeded";
                case "failed" -> "failed";
                default -> "processing";
            };
        }

        /** A row as the state audit reads it. */
        record StateRow(String id, String client, String key, String status, String chargeStatus, String paymentIntentId,
                        long createdAt, boolean parked) {
            String state() {
                return chargeState(status, chargeStatus);
            }
        }

        /** An event as the service's inbox recorded it. */
        record InboxEvent(String id, String type, String objectId, String source, String outcome, String chargeId,
                          String detail, long stripeCreated, long receivedAt) {
            String describe(long t0) {
                return String.format(Locale.ROOT, "%8.2fs %s %s %s -> %s %s (%s), made at %.0fs", (receivedAt - t0) / 1000.0, id,
                        type, source, outcome, chargeId, detail, (stripeCreated - t0) / 1000.0);
            }
        }

        static long number(Object o) {
            return o instanceof Number n ? n.longValue() : 0;
        }

        /**
         * Webhooks, 3-D Secure and the charges' states (chargeonce only): every charge's state against its
         * PaymentIntent at Stripe (succeeded, failed = requires_payment_method with an error, canceled, and the
         * pending ones), every state a watcher saw against the ones before it (never backwards), every event the
         * service recorded as unknown against the rows (a PaymentIntent that has a row is never unknown, unless the
         * row was deleted by a lost commit when the event came), and every event Stripe made against the inbox.
         */
        static void auditStates(Audit a, Run run, List<Intent> ledger, long t0) throws Exception {
            a.webhooks = true;
            a.stateWaitMillis = run.stateWaitMillis;
            a.statesLeft = run.statesLeft;
            Map<String, Intent> byId = new java.util.HashMap<>();
            ledger.forEach(pi -> byId.put(pi.id(), pi));

            Map<?, ?> stats = run.stripe.webhookStats();
            a.eventsMade = number(stats.get("events"));
            a.standInDelivered = number(stats.get("delivered"));
            a.standInFailedTries = number(stats.get("failed_deliveries"));
            a.deliveries = run.relay.deliveries.get();
            a.deliveriesAcknowledged = run.relay.acknowledged.get();
            a.duplicatesAcknowledged = run.relay.duplicatesAcknowledged.get();
            a.deliveriesFailed = run.relay.failed.get();
            a.deliveriesUnreachable = run.relay.unreachable.get();
            a.deliveriesRefused = run.relay.refused.get();
            for (String refusal : List.copyOf(run.relay.refusals)) {
                a.note("WEBHOOK REFUSED", refusal);
            }
            a.stateReads = run.stateReads.requests.get();
            a.stateReadsOk = run.stateReads.of(200);
            a.stateReadsNotFound = run.stateReads.of(404);

            for (Payment p : List.copyOf(run.payments)) {
                if (p.customerChoice == null) {
                    continue;
                }
                switch (p.customerChoice) {
                    case "succeeded" -> a.customersCompleted++;
                    case "failed" -> a.customersFailed++;
                    default -> a.customersAbandoned++;
                }
                if (p.customerOutcome != null && p.customerOutcome.startsWith("refused")) {
                    a.customersTooLate++;
                    a.note("CUSTOMER TOO LATE", "payment " + p.id + ": " + p.customerOutcome + p.story(t0));
                }
            }

            Map<String, StateRow> rowByPaymentIntent = new java.util.HashMap<>();
            Map<String, StateRow> rowByIdentity = new java.util.HashMap<>();
            List<StateRow> rows = new ArrayList<>();
            Map<String, List<InboxEvent>> eventsByObject = new java.util.HashMap<>();
            Set<String> recorded = new java.util.HashSet<>();
            List<InboxEvent> unknown = new ArrayList<>();
            try (Connection c = connect(run.variant); Statement st = c.createStatement()) {
                try (ResultSet rs = st.executeQuery("SELECT id, client_id, " + keyColumn(run.variant) + ", status, charge_status, payment_intent_id,"
                        + " created_at, needs_reconciliation FROM stripe_intents")) {
                    while (rs.next()) {
                        StateRow row = new StateRow(rs.getString(1), rs.getString(2), keyOf(run.variant, rs.getString(3)), rs.getString(4),
                                rs.getString(5), rs.getString(6), rs.getTimestamp(7).getTime(), rs.getBoolean(8));
                        rows.add(row);
                        if (row.paymentIntentId() != null) {
                            rowByPaymentIntent.put(row.paymentIntentId(), row);
                        }
                        rowByIdentity.put(identity(row.client(), row.key()), row);
                    }
                }
                try (ResultSet rs = st.executeQuery("SELECT id, type, object_id, source, outcome, row_id, detail, stripe_created,"
                        + " received_at FROM stripe_events ORDER BY received_at");
                     var out = Files.newBufferedWriter(results.resolve(run.variant.database + "-events.txt"))) {
                    out.write("# the service's inbox (stripe_events): received (s from the chaos' start), id, type, source -> outcome, charge (detail), made at\n");
                    while (rs.next()) {
                        InboxEvent e = new InboxEvent(rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4),
                                rs.getString(5), rs.getString(6), rs.getString(7), rs.getTimestamp(8).getTime(),
                                rs.getTimestamp(9).getTime());
                        out.write(e.describe(t0) + " " + e.objectId() + "\n");
                        recorded.add(e.id());
                        a.inboxRecorded++;
                        if ("catch_up".equals(e.source())) {
                            a.inboxFromCatchUp++;
                        } else {
                            a.inboxFromWebhook++;
                        }
                        switch (e.outcome()) {
                            case "applied" -> a.inboxApplied++;
                            case "unknown" -> {
                                a.inboxUnknown++;
                                unknown.add(e);
                            }
                            default -> a.inboxIgnored++;
                        }
                        if (e.objectId() != null) {
                            eventsByObject.computeIfAbsent(e.objectId(), k -> new ArrayList<>()).add(e);
                        }
                    }
                }
            }

            // Every charge's final state against its PaymentIntent's at Stripe.
            int withLogs = 0;
            for (StateRow row : rows) {
                if (row.paymentIntentId() == null || row.parked() || "processing".equals(row.status())) {
                    continue; // no PaymentIntent (a 400), or judged by the rows-not-terminal and parked counts
                }
                a.statesCompared++;
                String state = row.state();
                a.finalStates.merge(state, 1L, Long::sum);
                Intent pi = byId.get(row.paymentIntentId());
                String stripeState = pi == null ? "absent" : pi.state();
                if (!state.equals(stripeState)) {
                    a.stateMismatches++;
                    Payment owner = run.paymentsByKey.get(row.client() + "\n" + row.key());
                    a.note("CHARGE STATE DIFFERS FROM STRIPE", "charge " + row.id() + " (" + row.status() + ", charge_status "
                            + row.chargeStatus() + ") shows " + state + ", its PaymentIntent " + row.paymentIntentId() + " is "
                            + (pi == null ? "absent from the ledger" : pi.status() + (pi.paymentError() ? " with an error" : ""))
                            + eventsOf(eventsByObject, row.paymentIntentId(), t0)
                            + (owner == null ? "" : "\n  payment " + owner.id + owner.story(t0))
                            + (withLogs++ < 10 ? logLines(row.id(), row.paymentIntentId()) : ""));
                }
            }

            // Every state a watcher saw: never backwards (a lower rank, or out of a final state), the row's included.
            for (Payment p : List.copyOf(run.payments)) {
                List<StateSeen> seen = new ArrayList<>(List.copyOf(p.statesSeen));
                if (seen.isEmpty()) {
                    continue;
                }
                StateRow row = rowByIdentity.get(identity(p.client, p.key));
                if (row != null) {
                    seen.add(new StateSeen(System.currentTimeMillis(), 0, row.state(), "the row at the audit"));
                }
                String best = null;
                for (StateSeen s : seen) {
                    if (rank(s.status()) == 0) {
                        continue;
                    }
                    if (best != null && (rank(s.status()) < rank(best) || (finalState(best) && !s.status().equals(best)))) {
                        a.statesBackwards++;
                        a.note("CHARGE STATE MOVED BACKWARDS", "payment " + p.id + ", charge " + (row == null ? "?" : row.id())
                                + ": " + s.status() + " (" + s.via() + ") after " + best
                                + (row == null ? "" : eventsOf(eventsByObject, row.paymentIntentId(), t0)) + p.story(t0)
                                + (row == null ? "" : logLines(row.id(), String.valueOf(row.paymentIntentId()))));
                        break;
                    }
                    if (best == null || rank(s.status()) > rank(best)) {
                        best = s.status();
                    }
                }
            }

            // Unknown events: a PaymentIntent of a row is never unknown, unless a lost commit had deleted its row then.
            for (InboxEvent e : unknown) {
                if (e.objectId() != null && e.objectId().startsWith("re_")) {
                    // A refund's event: its row exists before Stripe is asked, and refund rows are never deleted.
                    StripeRefund sr = a.stripeRefundById.get(e.objectId());
                    RefundRow refundRow = sr == null || sr.identity() == null ? null : a.refundRowByIdentity.get(sr.identity());
                    if (refundRow == null) {
                        a.unknownOfNoRow++; // a refund of no refund key the database has: counted as an orphan refund
                    } else {
                        a.unknownOfKnownRefund++;
                        a.note("UNKNOWN EVENT OF A KNOWN REFUND", "event " + e.describe(t0) + " names refund " + e.objectId()
                                + " of refund row " + refundRow + logLines(refundRow.id(), e.objectId()));
                    }
                    continue;
                }
                Intent pi = byId.get(e.objectId());
                StateRow row = rowByPaymentIntent.get(e.objectId());
                if (row == null && pi != null && pi.identity() != null) {
                    row = rowByIdentity.get(pi.identity());
                }
                if (row == null) {
                    a.unknownOfNoRow++; // a PaymentIntent of no (client, key) the database has: counted as an orphan
                    continue;
                }
                Payment owner = run.paymentsByKey.get(row.client() + "\n" + row.key());
                StateRow current = row;
                boolean whileLost = owner != null && List.copyOf(owner.lostRows).stream().anyMatch(l ->
                        l.deleteStarted() - 2_000 <= e.receivedAt() && e.receivedAt() <= current.createdAt() + 1_000);
                String what = "event " + e.describe(t0) + " names PaymentIntent " + e.objectId() + " of charge " + row.id()
                        + " (created at " + String.format(Locale.ROOT, "%.2fs", (row.createdAt() - t0) / 1000.0) + ")"
                        + (owner == null ? "" : "\n  payment " + owner.id + owner.story(t0));
                if (whileLost) {
                    a.unknownWhileRowLost++;
                    a.note("UNKNOWN EVENT WHILE THE ROW WAS LOST", what);
                } else {
                    a.unknownOfKnownCharge++;
                    a.note("UNKNOWN EVENT OF A KNOWN CHARGE", what + logLines(row.id(), e.objectId()));
                }
            }

            // Every event Stripe made of a type the service follows is in the inbox: delivered, or found by the
            // catch-up, which lists those types (EventCatchUp), PaymentIntents' and refunds' alike. An event of
            // another type (payment_intent.created: no subscription names it, the catch-up does not list it) is
            // reported when the inbox lacks it, not counted.
            int missedWithLogs = 0;
            for (Map.Entry<String, String> e : run.stripe.events().entrySet()) {
                if (recorded.contains(e.getKey())) {
                    continue;
                }
                String objectId = run.stripe.eventObjects.get(e.getKey());
                if (PAYMENT_INTENT_EVENTS.contains(e.getValue())) {
                    a.eventsNeverRecorded++;
                    StateRow row = objectId == null ? null : rowByPaymentIntent.get(objectId);
                    a.note("EVENT NEVER RECORDED", e.getKey() + " " + e.getValue() + " of PaymentIntent " + objectId
                            + (row == null ? "" : " of charge " + row.id()) + " (Stripe made it; the service's inbox does not have it)"
                            + eventsOf(eventsByObject, objectId, t0)
                            + (missedWithLogs++ < 10 ? logLines(e.getKey(), objectId, row == null ? null : row.id()) : ""));
                } else if (REFUND_EVENTS.contains(e.getValue())) {
                    a.refundEventsNeverRecorded++;
                    StripeRefund sr = objectId == null ? null : a.stripeRefundById.get(objectId);
                    RefundRow refundRow = sr == null || sr.identity() == null ? null : a.refundRowByIdentity.get(sr.identity());
                    a.note("REFUND EVENT NEVER RECORDED", e.getKey() + " " + e.getValue() + " of refund " + objectId
                            + (refundRow == null ? "" : " of refund row " + refundRow) + " (Stripe made it; the service's inbox does not have it)"
                            + eventsOf(eventsByObject, objectId, t0)
                            + (missedWithLogs++ < 10 ? logLines(e.getKey(), objectId, refundRow == null ? null : refundRow.id()) : ""));
                } else {
                    a.unfollowedEventsNeverRecorded++;
                    a.note("UNFOLLOWED EVENT NEVER RECORDED", e.getKey() + " " + e.getValue()
                            + " (a type the endpoint does not subscribe to and the catch-up does not list; its deliveries all failed)");
                }
            }
        }

        static String eventsOf(Map<String, List<InboxEvent>> eventsByObject, String paymentIntentId, long t0) {
            StringBuilder out = new StringBuilder("\n  events the service recorded for it:");
            for (InboxEvent e : eventsByObject.getOrDefault(paymentIntentId, List.of())) {
                out.append("\n    ").append(e.describe(t0));
            }
            return out.toString();
        }

        /** The service's log lines (every instance, every start) that name a charge or its PaymentIntent: at most 40. */
        static String logLines(String... needles) {
            StringBuilder out = new StringBuilder("\n  service log lines:");
            int n = 0;
            try (var files = Files.list(results.resolve("logs"))) {
                for (Path file : files.filter(f -> f.getFileName().toString().startsWith("chargeonce-")).sorted().toList()) {
                    for (String line : Files.readAllLines(file, StandardCharsets.ISO_8859_1)) {
                        for (String needle : needles) {
                            if (needle != null && line.contains(needle)) {
                                if (n++ < 40) {
                                    out.append("\n    ").append(file.getFileName()).append(": ").append(line);
                                }
                                break;
                            }
                        }
                    }
                }
            } catch (IOException e) {
                out.append(" (").append(e.getMessage()).append(")");
            }
            return out.toString();
        }

        /**
         * Every final answer against the first one and the row. A row that was never lost answers byte for byte the
         * same, always. After a lost row, a new row answers for the key: its answers may carry the new row's charge
         * id and creation time, nothing else may differ (same status code, PaymentIntent, amount, currency, status,
         * decline); answers of one row are still byte for byte the same; and every answer names a row the key had.
         */
        static void checkAnswers(Audit a, Payment p, Row row, Answer first, String where, long t0) {
            List<Answer> finals = List.copyOf(p.finals);
            if (!p.lost()) {
                for (Answer later : finals) {
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
                return;
            }
            Set<String> rowsOfKey = p.lostChargeIds();
            if (row != null) {
                rowsOfKey.add(row.id());
            }
            Object expected = first.sameAfterLostRow();
            Map<String, Answer> firstOfRow = new java.util.HashMap<>();
            if (row != null && row.responseStatus() != null) {
                Answer stored = new Answer(row.responseStatus(), row.responseBody(), false, null);
                firstOfRow.put(row.id(), stored);
                if (!stored.sameAfterLostRow().equals(expected)) {
                    a.rowAnswerMismatches++;
                    a.note("ROW HOLDS ANOTHER ANSWER", where + "\n    client first: " + first.describe() + "\n    new row: "
                            + stored.describe() + p.story(t0));
                }
            }
            boolean differs = false;
            boolean unknown = false;
            for (Answer later : finals) {
                String chargeId = later.chargeId();
                if (!unknown && (chargeId == null || !rowsOfKey.contains(chargeId))) {
                    unknown = true;
                    a.answersOfUnknownRows++;
                    a.note("ANSWER OF AN UNKNOWN ROW", where + ": " + later.describe() + p.story(t0));
                }
                Answer sameRow = chargeId == null ? null : firstOfRow.putIfAbsent(chargeId, later);
                if (differs) {
                    continue;
                }
                if (sameRow != null && (sameRow.status() != later.status() || !sameRow.body().equals(later.body()))) {
                    differs = true;
                    a.replayMismatches++;
                    a.note("REPLAY DIFFERS", where + " (one row, two answers)\n    earlier: " + sameRow.describe()
                            + "\n    later: " + later.describe() + p.story(t0));
                } else if (!later.sameAfterLostRow().equals(expected)) {
                    differs = true;
                    a.replayMismatches++;
                    a.note("ANSWER AFTER LOST ROW DIFFERS", where + "\n    first: " + first.describe() + "\n    later: "
                            + later.describe() + p.story(t0));
                }
            }
        }

        static String sideBySide(List<Audit> audits) {
            Map<String, java.util.function.Function<Audit, Object>> metrics = new LinkedHashMap<>();
            metrics.put("chaos duration (s) / instances", x -> x.chaosSeconds + " / " + x.instances);
            metrics.put("logical payments (with concurrent duplicates) / settled", x -> x.payments + " (" + x.concurrentDuplicates
                    + ") / " + x.settled);
            metrics.put("requests sent", x -> x.tally.requests.get());
            metrics.put("answers 201 / 402 / 409 / 422 / 503", x -> x.tally.of(201) + " / " + x.tally.of(402) + " / "
                    + x.tally.of(409) + " / " + x.tally.of(422) + " / " + x.tally.of(503));
            metrics.put("answers lost (timeout, connection) / other (GETs: 200, 404)", x -> x.tally.of(-1) + " / " + x.tally.other());
            metrics.put("faults injected / fault switches failed", x -> x.faults.total() + " / " + x.switchFailures.size());
            metrics.put("faults: kill -9 / SIGTERM / DB cuts", x -> x.faults.of("kill_9") + " / " + x.faults.of("sigterm")
                    + " / " + x.faults.of("db_cut"));
            metrics.put("faults: lost commits (rows deleted; of them past Stripe attempt 1)", x -> x.faults.of("lost_commit") + " ("
                    + x.faults.of("lost_rows") + "; " + x.faults.of("lost_rows_attempt_moved_on") + ")");
            metrics.put("faults: Stripe latency spikes / keeps running / slow then edge / edge bursts",
                    x -> x.faults.of("stripe_latency_spike") + " / " + x.faults.of("stripe_keeps_running") + " / "
                            + x.faults.of("stripe_edge_after_slow") + " / " + x.faults.of("stripe_edge"));
            metrics.put("faults: Stripe 500 before / 500 after / drops / 429",
                    x -> x.faults.of("stripe_500_before_charging") + " / " + x.faults.of("stripe_500_after_charging") + " / "
                            + x.faults.of("stripe_drop_after_charging") + " / " + x.faults.of("stripe_429"));
            metrics.put("faults: webhook duplicate bursts / reordering / outages", x -> !x.webhooks ? "– (no webhook endpoint)"
                    : x.faults.of("webhook_duplicates") + " / " + x.faults.of("webhook_reorder") + " / " + x.faults.of("webhook_outage"));
            metrics.put("SIGTERMs that needed kill -9 after 15 s", x -> x.faults.of("sigterm_needed_kill_9"));
            metrics.put("recovery after the chaos (ms) / rows left", x -> x.recoveryMillis + " / " + x.unfinishedAfterRecovery);
            metrics.put("Stripe: create requests / PaymentIntents / charged", x -> x.stripeCreates + " / " + x.intents + " / " + x.chargedIntents);
            metrics.put("clients told succeeded (201) / declined (402) / 3-D Secure to complete (202)", x -> x.succeededForClient
                    + " / " + x.declinedForClient + " / " + x.acceptedForClient);
            metrics.put("rows completed / failed / accepted (202)", x -> x.rowsCompleted + " / " + x.rowsFailed + " / " + x.rowsAccepted);
            metrics.put("payments that lost a row: recovered / parked (503 charge_under_reconciliation answers)",
                    x -> x.lostPayments + ": " + x.lostRecovered + " / " + x.lostParked + " (" + x.parkedAnswers + ")");
            metrics.put("**payments with more than one PaymentIntent**", x -> x.duplicatePayments);
            metrics.put("**payments charged more than once**", x -> x.doubleCharged);
            metrics.put("**told succeeded, Stripe has no such charge**", x -> x.toldSucceededStripeHasNot);
            metrics.put("**charged at Stripe, client told otherwise**", x -> x.chargedButNotToldSucceeded);
            metrics.put("PaymentIntents of no (client, key) the database has", x -> x.orphanIntents);
            metrics.put("completed rows disagreeing with Stripe", x -> x.rowDisagreesWithStripe);
            metrics.put("rows not terminal at the audit (parked after a lost row excluded)", x -> x.rowsNotTerminal);
            metrics.put("payments with a final answer and no row", x -> x.rowsMissing);
            metrics.put("payments without a final answer (parked after a lost row excluded)", x -> x.neverFinal);
            metrics.put("payments whose answers differ (replay ≠ first; after a lost row: beyond id, created)", x -> x.replayMismatches);
            metrics.put("answers naming a row the key never had", x -> x.answersOfUnknownRows);
            metrics.put("first answer ≠ the row's stored answer", x -> x.rowAnswerMismatches);
            metrics.put("key reused with another body: sent / 422 / accepted", x -> x.conflictsSent + " / " + x.conflictsRefused
                    + " / " + x.conflictsCharged);
            metrics.put("unexpected final answers", x -> x.unexpectedFinal);
            metrics.put("GET right after 201: asked / 404 / other payment / 404 of a deleted row", x -> x.readsAfterSuccess == 0
                    ? "– (not asked)" : x.readsAfterSuccess + " / " + x.readsNotFound + " / " + x.readsDiffering + " / " + x.readsOfLostRow);
            metrics.put("refunds: logical (on charges) / settled / requests sent", x -> !x.refundsAudited ? "– (no refunds)"
                    : x.refundsRequested + " (" + x.refundCharges + ") / " + x.refundsSettled + " / " + x.refundTally.requests.get());
            metrics.put("refunds by pattern: " + "full / partial / partials / at once (both instances) / over the charge", x -> !x.refundsAudited
                    ? "–" : x.refundPatterns.getOrDefault("full", 0L) + " / " + x.refundPatterns.getOrDefault("partial", 0L) + " / "
                    + x.refundPatterns.getOrDefault("partials", 0L) + " / " + x.refundPatterns.getOrDefault("at once", 0L) + " / "
                    + x.refundPatterns.getOrDefault("over the charge", 0L) + " (asked at once: " + x.refundsAtOnce
                    + "; sent concurrently with the same key: " + x.refundsDuplicatedConcurrently + ")");
            metrics.put("refund answers 201 / 400 / 404 / 409 / 422 / 503 / lost", x -> !x.refundsAudited ? "–"
                    : x.refundTally.of(201) + " / " + x.refundTally.of(400) + " / " + x.refundTally.of(404) + " / "
                    + x.refundTally.of(409) + " / " + x.refundTally.of(422) + " / " + x.refundTally.of(503) + " / " + x.refundTally.of(-1));
            metrics.put("refund answers to retry, by code", x -> !x.refundsAudited ? "–" : x.refundRetryCodes.toString());
            metrics.put("refunds: made (201) / refused amount_too_large / 404 of a lost charge row / parked (503 refund_under_reconciliation)",
                    x -> !x.refundsAudited ? "–" : x.refundsMade + " / " + x.refundsTooLarge + " / " + x.refundsOfLostCharge + " / " + x.refundsParked);
            metrics.put("Stripe: refund creates / refunds (of them by Stripe attempt 2+) / amount refunded", x -> !x.refundsAudited ? "–"
                    : x.stripeRefundCreates + " / " + x.stripeRefunds + " (" + x.stripeRefundsLaterAttempt + ") / " + x.amountRefunded);
            metrics.put("refund rows by status", x -> !x.refundsAudited ? "–" : x.refundRows + ": " + x.refundRowStates);
            metrics.put("**logical refunds with more than one Stripe refund**", x -> !x.refundsAudited ? "–" : x.refundDuplicates);
            metrics.put("**charges over-refunded (Stripe's pending + succeeded, or told 201, over the amount)**",
                    x -> !x.refundsAudited ? "–" : x.overRefunds);
            metrics.put("**told refunded (201), Stripe has no such refund (key, amount)**", x -> !x.refundsAudited ? "–" : x.toldRefundedStripeHasNot);
            metrics.put("**refunded at Stripe, client told otherwise**", x -> !x.refundsAudited ? "–" : x.refundedButToldOtherwise);
            metrics.put("**refused before Stripe (amount_too_large, 404), yet a row or a Stripe refund**", x -> !x.refundsAudited ? "–" : x.refusedButSent);
            metrics.put("refused amount_too_large with enough left / Stripe refunds of no refund key", x -> !x.refundsAudited ? "–"
                    : x.wronglyRefused + " / " + x.orphanRefunds);
            metrics.put("refund rows not terminal after the settle phase (parked excluded) / without a final answer / made without a row",
                    x -> !x.refundsAudited ? "–" : x.refundRowsNotTerminal + " / " + x.refundNeverFinal + " / " + x.refundRowMissing);
            metrics.put("refunds whose answers differ / first answer ≠ the row's / rows ≠ Stripe's refund / reservations ≠ refunds",
                    x -> !x.refundsAudited ? "–" : x.refundReplayMismatch + " / " + x.refundRowAnswerMismatch + " / "
                            + x.refundRowStripeDisagree + " / " + x.reservationMismatch);
            metrics.put("refund key reused with another body: sent / 422 / accepted; unexpected final answers; unknown events of a refund",
                    x -> !x.refundsAudited ? "–" : x.refundConflictsSent + " / " + x.refundConflictsRefused + " / "
                            + x.refundConflictsAccepted + "; " + x.refundUnexpectedFinal + "; " + x.unknownOfKnownRefund);
            metrics.put("3-D Secure customers: complete / fail / never (refused: too late)", x -> !x.webhooks ? "–"
                    : x.customersCompleted + " / " + x.customersFailed + " / " + x.customersAbandoned + " (" + x.customersTooLate + ")");
            metrics.put("webhooks: events Stripe made / deliveries: acknowledged (of them duplicates) / 5xx / instance down", x -> !x.webhooks
                    ? "– (no webhook endpoint)" : x.eventsMade + " / " + x.deliveries + ": " + x.deliveriesAcknowledged + " ("
                    + x.duplicatesAcknowledged + ") / " + x.deliveriesFailed + " / " + x.deliveriesUnreachable);
            metrics.put("events the service recorded: by webhook / by catch-up; applied / ignored / unknown", x -> !x.webhooks ? "–"
                    : x.inboxFromWebhook + " / " + x.inboxFromCatchUp + "; " + x.inboxApplied + " / " + x.inboxIgnored + " / " + x.inboxUnknown);
            metrics.put("unknown events: of no row / while the row was deleted (lost commit)", x -> !x.webhooks ? "–"
                    : x.unknownOfNoRow + " / " + x.unknownWhileRowLost);
            metrics.put("charge states after the final round: settled after (ms) / watchers' GETs: 200 / 404 / lost (instance down)",
                    x -> !x.webhooks ? "–" : x.stateWaitMillis + (x.statesLeft.isEmpty() ? "" : " (left: " + x.statesLeft + ")") + " / "
                            + x.stateReadsOk + " / " + x.stateReadsNotFound + " / " + (x.stateReads - x.stateReadsOk - x.stateReadsNotFound));
            metrics.put("charges compared with Stripe: " + "succeeded / failed / canceled / requires_action / processing", x -> !x.webhooks
                    ? "–" : x.statesCompared + ": " + x.finalStates.getOrDefault("succeeded", 0L) + " / " + x.finalStates.getOrDefault("failed", 0L)
                    + " / " + x.finalStates.getOrDefault("canceled", 0L) + " / " + x.finalStates.getOrDefault("requires_action", 0L)
                    + " / " + x.finalStates.getOrDefault("processing", 0L));
            metrics.put("**charges whose final state differs from Stripe's**", x -> !x.webhooks ? "–" : x.stateMismatches);
            metrics.put("**charge states that moved backwards**", x -> !x.webhooks ? "–" : x.statesBackwards);
            metrics.put("**unknown events of a charge the database has**", x -> !x.webhooks ? "–" : x.unknownOfKnownCharge);
            metrics.put("**Stripe events the service never recorded**: PaymentIntents' / refunds'", x -> !x.webhooks ? "–"
                    : x.eventsNeverRecorded + " / " + x.refundEventsNeverRecorded);
            metrics.put("events of types the service does not follow never recorded (payment_intent.created; not violations)",
                    x -> !x.webhooks ? "–" : x.unfollowedEventsNeverRecorded);
            metrics.put("**webhook deliveries refused (4xx)**", x -> !x.webhooks ? "–" : x.deliveriesRefused);
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

        static Object parseQuietly(String text) {
            try {
                return text == null ? null : parse(text);
            } catch (RuntimeException e) {
                return null;
            }
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

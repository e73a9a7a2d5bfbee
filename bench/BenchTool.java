import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The two pieces of bench/run.sh that are easier to get right in Java than in shell (JDK only, run as a
 * single-file program: {@code java bench/BenchTool.java <command> ...}).
 *
 * <ul>
 *   <li>{@code pgbench-scripts <statement catalog dir> <out dir>}: writes pgbench scripts with the service's own
 *       statements (a charge's claim and finish, a refund's claim transaction and finish, the replays' reads), as
 *       the packaged store runs them (written by {@code dev.chargeonce.idempotency.StatementCatalog}).</li>
 *   <li>{@code report <results dir>}: reads what the run left there (wrk JSON lines, pgbench output and logs, RSS
 *       samples, meta.properties) and prints the tables, the ratios and the targets as Markdown.</li>
 * </ul>
 */
public class BenchTool {

    public static void main(String[] args) throws IOException {
        switch (args.length > 0 ? args[0] : "") {
            case "pgbench-scripts" -> PgbenchScripts.write(Path.of(args[1]), Path.of(args[2]));
            case "report" -> new Report(Path.of(args[1])).print(System.out);
            case "focus" -> new Report(Path.of(args[1])).printFocus(System.out);
            case "soak" -> Soak.report(Path.of(args[1]), System.out);
            case "flame-shares" -> FlameShares.print(Arrays.stream(args).skip(1).map(Path::of).toList(), System.out);
            case "soak-compare" -> Soak.compare(Path.of(args[1]), Path.of(args[2]), Path.of(args[3]), System.out);
            case "explain-scripts" -> ExplainScripts.write(Path.of(args[1]), Path.of(args[2]), Path.of(args[3]));
            default -> {
                System.err.println("usage: BenchTool pgbench-scripts <statement catalog dir> <dir> | report <dir> | focus <dir> | soak <dir> | soak-compare <before dir> <after dir> <out.svg> | flame-shares <flame.html>... | explain-scripts <pgbench dir> <before dir> <out dir>");
                System.exit(2);
            }
        }
    }

    // ---- pgbench scripts ---------------------------------------------------------------------------------------

    static final class PgbenchScripts {

        /** The stored answer of a 1000-cent visa charge, as the service renders it (same size). */
        static final String RESPONSE = "{\"id\":\"chg_0000000000000000000000pgb\",\"object\":\"charge\",\"status\":\"succeeded\","
                + "\"amount\":1000,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"customer\":null,"
                + "\"description\":null,\"metadata\":{},\"payment_intent\":\"pi_000000000000000000000pgb\",\"created\":1767225600}";
        static final String REQUEST = "{\"amount\":1000,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}";
        /** A refund row's request (the resolved terms) and stored answer, as the service writes them for 1 cent. */
        static final String REFUND_REQUEST = "{\"amount\":1,\"charge\":\"chg_0000000000000000000000pgb\",\"currency\":\"usd\","
                + "\"metadata\":{},\"payment_intent\":\"pi_000000000000000000000pgb\"}";
        static final String REFUND_RESPONSE = "{\"id\":\"rfd_0000000000000000000000pgb\",\"object\":\"refund\",\"status\":\"succeeded\","
                + "\"amount\":1,\"currency\":\"usd\",\"charge\":\"chg_0000000000000000000000pgb\","
                + "\"payment_intent\":\"pi_000000000000000000000pgb\",\"reason\":null,\"metadata\":{},"
                + "\"stripe_refund\":\"re_0000000000000000000000pgb\",\"created\":1767225600}";
        static final String FINGERPRINT = "7c0b5b8e4c1f3f0a9d2e6b1a8c7d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d";
        static final String LEASE_MS = "30000";
        /** A 48-character identity per key, as the service stores (a hash of client and key; any unique value will do). */
        static final String IDENTITY_OF_K = "lpad(CAST(:k AS text), 48, 'f')";
        /**
         * The identity of a bulk-loaded row (bench/sql/bulk_rows.sql), as the service derives it: its HMAC is part
         * of what the replay reference costs PostgreSQL here (a microsecond or two), where the service computes it.
         */
        static final String IDENTITY_OF_BULK_I = "'k001-' || substr(encode(hmac(convert_to(:bench_client || chr(10) || 'bulk-' || CAST(:i AS text), 'UTF8'), decode(:key_secret, 'base64'), 'sha256'), 'hex'), 1, 48)";
        static final String IDENTITY_OF_BULK_REFUND_I = "'k001-' || substr(encode(hmac(convert_to('refund' || chr(10) || :bench_client || chr(10) || 'rbulk-' || CAST(:i AS text), 'UTF8'), decode(:key_secret, 'base64'), 'sha256'), 'hex'), 1, 48)";
        static final String HORIZON_MS = "82800000";
        /** bench/run.sh's KEY_SECRET: the secret the service hashes keys with (KeyIdentities, version 1). */
        static final String KEY_SECRET = "Y2hhcmdlb25jZSBiZW5jaCBrZXkgaGFzaCBzZWNyZXQsIHYx";

        static void write(Path source, Path dir) throws IOException {
            Statements store = new Statements(source);
            String claim = store.of("CHARGE", "CLAIM");
            String finish = store.of("CHARGE", "FINISH");
            Files.createDirectories(dir);

            // pgbench substitutes :name everywhere, string literals included ("amount":1000 would become a parameter),
            // so every text value is a pgbench variable (-D name=value, see defines.txt): bound as a parameter, as
            // JDBC binds it in the service.
            Files.writeString(dir.resolve("defines.txt"), String.join("\n",
                    "request=" + REQUEST, "response=" + RESPONSE, "fingerprint=" + FINGERPRINT, "pgbench_client=pgbench",
                    "bench_client=bench", "usd=usd", "completed=completed", "succeeded=succeeded",
                    "refund_request=" + REFUND_REQUEST, "refund_response=" + REFUND_RESPONSE, "key_secret=" + KEY_SECRET) + "\n");

            // read + claim + finish of a new payment: what the database does for every new charge (the read finds
            // no row for the new key; the insert decides it is new; the finish).
            String peek = store.of("CHARGE", "PEEK");
            String pair = "\\set k random(1, 9000000000000000000)\n"
                    + bind(peek, List.of(HORIZON_MS, IDENTITY_OF_K, ":pgbench_client")).strip() + ";\n"
                    + bind(claim, List.of("'chg_pgb' || CAST(:k AS text)", ":pgbench_client", "NULL" /* keys are not stored */,
                    ":fingerprint", ":request", "1000", ":usd", LEASE_MS, LEASE_MS, IDENTITY_OF_K, "NULL")).strip()
                    + "\n\\gset\n"
                    + bind(finish, List.of(":completed", "201", ":response", "'pi_pgb' || CAST(:k AS text)", ":succeeded",
                    "NULL", "'chg_pgb' || CAST(:k AS text)", ":lease_gen", ":pgbench_client")).strip() + ";\n";
            Files.writeString(dir.resolve("claim_finish.sql"), pair);

            // the replay: the claim's read finding a finished row (rows from bench/sql/bulk_rows.sql), and nothing else.
            String replay = "\\set i 10 * random(0, :replay_rows - 1)\n"
                    + bind(peek, List.of(HORIZON_MS, IDENTITY_OF_BULK_I, ":bench_client")).strip() + ";\n";
            Files.writeString(dir.resolve("replay.sql"), replay);

            // The least any exactly-once pair can cost: a plain INSERT … ON CONFLICT DO NOTHING of a row and an UPDATE of
            // it by primary key, each its own transaction, on a table with nothing but its key (bench_minimal, made by
            // bench/run.sh), the stored answer as the row's payload. The limit the cost of exactly-once is measured against.
            String minimal = "\\set k random(1, 9000000000000000000)\n"
                    + "INSERT INTO bench_minimal (id, status) VALUES ('chg_pgb' || CAST(:k AS text), 'processing') ON CONFLICT DO NOTHING;\n"
                    + "UPDATE bench_minimal SET status = 'completed', body = :response WHERE id = 'chg_pgb' || CAST(:k AS text);\n";
            Files.writeString(dir.resolve("minimal_pair.sql"), minimal);

            // A new refund: the claim transaction (lock the charge, insert the refund's row, reserve its amount), then
            // the fenced finish; of 1 cent, on one of :refund_charges charges (bench/sql/refund_charges.sql) or all on
            // one hot charge. The service also reads the key first (the peek, one indexed read: see refund_replay.sql)
            // and checks the amount in Java between the lock and the insert.
            String lock = store.of("REFUND", "LOCK_CHARGE_FOR_REFUND");
            String claimRefund = store.of("REFUND", "CLAIM");
            String reserve = store.of("REFUND", "RESERVE");
            String finishRefund = store.of("REFUND", "FINISH");
            for (String variant : List.of("many", "hot")) {
                // the ids bench/sql/refund_charges.sql gives them: chg_ + the prefix padded with x to 12 + n in 12 digits
                String charge = variant.equals("hot") ? "'chg_pgbhotxxxxxx000000000000'"
                        : "'chg_pgbrefxxxxxx' || lpad(CAST(:c AS text), 12, '0')";
                String script = "\\set k random(1, 9000000000000000000)\n"
                        + (variant.equals("hot") ? "" : "\\set c random(0, :refund_charges - 1)\n")
                        + "BEGIN;\n"
                        + bind(lock, List.of(charge, ":pgbench_client")).strip() + ";\n"
                        + bind(claimRefund, List.of("'rfd_pgb' || CAST(:k AS text)", charge, ":pgbench_client",
                        "NULL", ":fingerprint", ":refund_request", "1", ":usd", LEASE_MS, LEASE_MS,
                        "lpad(CAST(:k AS text), 48, 'r')")).strip() + "\n\\gset r_\n"
                        + bind(reserve, List.of("1", charge, ":pgbench_client")).strip() + ";\n"
                        + "COMMIT;\n"
                        + bind(finishRefund, List.of(":completed", "201", ":refund_response", "'re_pgb' || CAST(:k AS text)",
                        ":succeeded", "NULL", ":r_id", ":r_lease_gen", ":pgbench_client", ":pgbench_client")).strip() + ";\n";
                Files.writeString(dir.resolve("refund_" + variant + ".sql"), script);
            }

            // A refund's replay: the peek finding a finished refund (rows from bench/sql/bulk_refunds.sql).
            String refundReplay = "\\set i random(0, :refund_replay_rows - 1)\n"
                    + bind(store.of("REFUND", "PEEK"), List.of(HORIZON_MS, IDENTITY_OF_BULK_REFUND_I, ":bench_client")).strip()
                    + ";\n";
            Files.writeString(dir.resolve("refund_replay.sql"), refundReplay);
        }

        /**
         * The store's statements as it runs them, from the files {@code dev.chargeonce.idempotency.StatementCatalog}
         * wrote ({@code CHARGE.CLAIM.sql}, ...): the classes of the package, not a reading of the source.
         */
        static final class Statements {
            final Path dir;

            Statements(Path dir) {
                this.dir = dir;
            }

            /** Statement {@code name} as the store runs it for operation {@code op} (CHARGE or REFUND). */
            String of(String op, String name) throws IOException {
                Path file = dir.resolve(op + "." + name + ".sql");
                if (!Files.exists(file)) {
                    throw new IllegalStateException("the statement catalog has no " + file.getFileName()
                            + " (StatementCatalog.hotPathStatements): update bench/BenchTool.java");
                }
                return Files.readString(file);
            }
        }

        /** Replaces the JDBC placeholders in order; refuses when the statement's parameters changed. */
        static String bind(String sql, List<String> values) {
            long placeholders = sql.chars().filter(c -> c == '?').count();
            if (placeholders != values.size()) {
                throw new IllegalStateException("statement has " + placeholders + " parameters, the bench binds "
                        + values.size() + ": update bench/BenchTool.java\n" + sql);
            }
            StringBuilder out = new StringBuilder();
            int v = 0;
            for (char c : sql.toCharArray()) {
                out.append(c == '?' ? values.get(v++) : String.valueOf(c));
            }
            return out.toString();
        }

    }

    // ---- explain scripts -----------------------------------------------------------------------------------------

    /**
     * {@code bench/explain.sh}: the pgbench scripts of a new charge (claim + finish) and of a replay, today's and
     * the earlier statements', as psql scripts whose every statement runs under {@code EXPLAIN (ANALYZE, BUFFERS, WAL)}:
     * the script runs six times for keys of its own (so that the statements are warm), then once more after a
     * {@code -- shown} marker. pgbench's variables become psql's ({@code :'name'} for text, as pgbench binds them).
     */
    static final class ExplainScripts {

        static void write(Path today, Path before, Path out) throws IOException {
            Files.createDirectories(out);
            List<String> defines = Files.readAllLines(today.resolve("defines.txt"));
            StringBuilder header = new StringBuilder("\\set ON_ERROR_STOP 1\n\\pset pager off\n");
            List<String> textVariables = new ArrayList<>();
            for (String define : defines) {
                int eq = define.indexOf('=');
                if (eq > 0) {
                    String name = define.substring(0, eq);
                    textVariables.add(name);
                    header.append("\\set ").append(name).append(" '").append(define.substring(eq + 1).replace("'", "\\'")).append("'\n");
                }
            }
            Map<String, Path> scripts = new LinkedHashMap<>();
            scripts.put("after-pair", today.resolve("claim_finish.sql"));
            scripts.put("after-replay", today.resolve("replay.sql"));
            scripts.put("before-pair", before.resolve("claim_finish.sql"));
            scripts.put("before-replay", before.resolve("replay.sql"));
            for (Map.Entry<String, Path> script : scripts.entrySet()) {
                List<String> statements = statements(Files.readString(script.getValue()), textVariables);
                StringBuilder psql = new StringBuilder(header);
                for (int run = 0; run <= 6; run++) {
                    if (run == 6) {
                        psql.append("\\echo '-- shown'\n");
                    }
                    long k = 4_000_000_000L + run * 7919L + script.getKey().hashCode() % 1000;
                    psql.append("\\set k ").append(k).append("\n\\set i ").append(10 * (run * 37 % 1999)).append("\n")
                            .append("\\set id chg_pgb").append(k).append("\n\\set lease_gen 1\n\\set new_lease_gen 1\n");
                    for (String statement : statements) {
                        psql.append(run == 6 ? "EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF)\n" : "")
                                .append(statement).append(";\n");
                    }
                }
                Files.writeString(out.resolve(script.getKey() + ".sql"), psql.toString());
            }
        }

        /** The SQL statements of a pgbench script, without its meta-commands and comments, variables in psql's form. */
        static List<String> statements(String pgbench, List<String> textVariables) {
            List<String> statements = new ArrayList<>();
            StringBuilder current = new StringBuilder();
            for (String line : pgbench.split("\n")) {
                String trimmed = line.strip();
                if (trimmed.startsWith("--")) {
                    continue;
                }
                if (trimmed.startsWith("\\")) { // \set, \gset: end of a statement that pgbench sends with \gset
                    if (!current.toString().isBlank()) {
                        statements.add(current.toString().strip());
                        current.setLength(0);
                    }
                    continue;
                }
                current.append(line).append('\n');
                if (trimmed.endsWith(";")) {
                    statements.add(current.toString().strip().replaceAll(";$", ""));
                    current.setLength(0);
                }
            }
            if (!current.toString().isBlank()) {
                statements.add(current.toString().strip());
            }
            List<String> psql = new ArrayList<>();
            for (String statement : statements) {
                String s = statement;
                for (String name : textVariables) {
                    s = s.replaceAll(":" + name + "\\b", ":'" + name + "'");
                }
                psql.add(s.replaceAll("(?<!:):id\\b", ":'id'"));
            }
            return psql;
        }
    }

    // ---- soak ----------------------------------------------------------------------------------------------------

    /**
     * {@code bench/run.sh --soak}: the minute-by-minute table of soak.txt as Markdown, and soak.svg, the curve of
     * charges per second against the rows in the table (and the service's resident memory), for the README.
     */
    /**
     * Where a CPU profile's samples go, by library: reads async-profiler's HTML flame graphs (their frame pool and the
     * f/u/n calls that lay the frames out) and counts each frame's self samples under the innermost frame on its
     * stack that belongs to a known library (the JDK frames a library calls count as that library's).
     */
    static final class FlameShares {

        static final Map<String, Pattern> LIBRARIES = new LinkedHashMap<>();
        static {
            LIBRARIES.put("Stripe SDK + JDK HTTP client", Pattern.compile("com[./]stripe|jdk[./]internal[./]net[./]http|java[./]net[./]http"));
            LIBRARIES.put("pgjdbc + Agroal", Pattern.compile("org[./]postgresql|io[./]agroal"));
            LIBRARIES.put("SmallRye Fault Tolerance", Pattern.compile("io[./]smallrye[./]faulttolerance"));
            LIBRARIES.put("virtual-thread timers (DelayScheduler)", Pattern.compile("DelayScheduler|ScheduledThreadPoolExecutor|VirtualThread[./]parkNanos"));
            LIBRARIES.put("Vert.x / Netty / RESTEasy", Pattern.compile("io[./]vertx|io[./]netty|org[./]jboss[./]resteasy"));
            LIBRARIES.put("Jackson", Pattern.compile("com[./]fasterxml[./]jackson"));
            LIBRARIES.put("Micrometer", Pattern.compile("io[./]micrometer"));
            LIBRARIES.put("service code (dev.chargeonce)", Pattern.compile("dev[./]chargeonce"));
            LIBRARIES.put("GC", Pattern.compile("^G1|GCTask|GangWorker|ConcurrentGCThread|G1ConcurrentRefine|WorkerThread::run"));
            LIBRARIES.put("virtual-thread scheduler (ForkJoinPool, continuations)", Pattern.compile("ForkJoinPool|Continuation|thaw|freeze"));
            LIBRARIES.put("JIT compiler", Pattern.compile("CompileBroker|C2Compiler|Compile::"));
        }

        record Frame(int level, long width, String title) {
        }

        static void print(List<Path> graphs, PrintStream out) throws IOException {
            List<Map<String, Double>> shares = new ArrayList<>();
            for (Path graph : graphs) {
                shares.add(shares(frames(Files.readString(graph))));
            }
            out.println("| library | " + String.join(" | ", graphs.stream().map(g -> g.getFileName().toString()).toList()) + " |");
            out.println("|---" + "|---:".repeat(graphs.size()) + "|");
            List<String> names = new ArrayList<>(LIBRARIES.keySet());
            names.add("other");
            for (String name : names) {
                StringBuilder row = new StringBuilder("| " + name + " |");
                for (Map<String, Double> s : shares) {
                    row.append(String.format(Locale.ROOT, " %.1f%% |", s.getOrDefault(name, 0.0)));
                }
                out.println(row);
            }
        }

        static List<Frame> frames(String html) {
            int start = html.indexOf("const cpool = [") + "const cpool = [".length();
            List<String> pool = new ArrayList<>();
            for (String line : html.substring(start, html.indexOf("\n];", start)).strip().split("\n")) {
                String quoted = line.strip();
                quoted = quoted.endsWith(",") ? quoted.substring(0, quoted.length() - 1) : quoted;
                String text = quoted.substring(1, quoted.length() - 1).replace("\\'", "'").replace("\\\\", "\\");
                // each entry shares a prefix with the one before: its first character says how long (+32)
                pool.add(pool.isEmpty() ? text : pool.get(pool.size() - 1).substring(0, text.charAt(0) - 32) + text.substring(1));
            }
            List<Frame> frames = new ArrayList<>();
            Matcher call = Pattern.compile("(?m)^([fun])\\(([^)]*)\\)").matcher(html.substring(html.indexOf("unpack(cpool);")));
            int level = 0;
            long width = 0;
            while (call.find()) {
                long[] a = Arrays.stream(call.group(2).split(",")).map(String::strip).filter(x -> !x.isEmpty()).mapToLong(Long::parseLong).toArray();
                int key = (int) a[0];
                long w;
                switch (call.group(1)) {
                    case "f" -> { level = (int) a[1]; w = a.length > 3 ? a[3] : 0; }
                    case "u" -> { level = level + 1; w = a.length > 1 ? a[1] : 0; }
                    default -> w = a.length > 1 ? a[1] : 0;
                }
                width = w != 0 ? w : width;
                frames.add(new Frame(level, width, pool.get(key >>> 3)));
            }
            return frames;
        }

        /** Per cent of all samples under each library (frames are in depth-first order, a frame's level its depth). */
        static Map<String, Double> shares(List<Frame> frames) {
            long total = frames.stream().filter(f -> f.level() == 0).mapToLong(Frame::width).sum();
            long[] self = frames.stream().mapToLong(Frame::width).toArray();
            int[] parents = new int[64 * 1024];
            for (int i = 0; i < frames.size(); i++) {
                Frame f = frames.get(i);
                parents[f.level()] = i;
                if (f.level() > 0) {
                    self[parents[f.level() - 1]] -= f.width();
                }
            }
            String[] libraryAt = new String[64 * 1024];
            Map<String, Double> shares = new LinkedHashMap<>();
            for (int i = 0; i < frames.size(); i++) {
                Frame f = frames.get(i);
                String library = null;
                for (Map.Entry<String, Pattern> e : LIBRARIES.entrySet()) {
                    if (e.getValue().matcher(f.title()).find()) {
                        library = e.getKey();
                        break;
                    }
                }
                if (library == null) {
                    library = f.level() > 0 ? libraryAt[f.level() - 1] : null;
                }
                libraryAt[f.level()] = library;
                shares.merge(library == null ? "other" : library, 100.0 * self[i] / total, Double::sum);
            }
            return shares;
        }
    }

    static final class Soak {

        record Minute(int minute, double rate, double p50Ms, double p99Ms, double rssMib, double tableMb, long rows,
                      double serviceCpuMs, double pgCpuMs, double walBytes, long checkpoints) {
        }

        static List<Minute> read(Path dir) throws IOException {
            List<Minute> minutes = new ArrayList<>();
            for (String line : Files.readAllLines(dir.resolve("soak.txt"))) {
                String[] f = line.trim().split("\\s+");
                if (f.length < 11 || !f[0].matches("[0-9]+")) {
                    continue;
                }
                double made = Double.parseDouble(f[1]) * 60;
                minutes.add(new Minute(Integer.parseInt(f[0]), Double.parseDouble(f[1]), Double.parseDouble(f[2]) / 1000,
                        Double.parseDouble(f[3]) / 1000, Double.parseDouble(f[4]) / 1024, Double.parseDouble(f[5]) / 1e6,
                        Long.parseLong(f[6]), made == 0 ? Double.NaN : Double.parseDouble(f[7]) / made,
                        made == 0 ? Double.NaN : Double.parseDouble(f[8]) / made, made == 0 ? Double.NaN : Double.parseDouble(f[9]) / made,
                        Long.parseLong(f[10])));
            }
            return minutes;
        }

        static void report(Path dir, PrintStream out) throws IOException {
            List<Minute> minutes = read(dir);
            out.println("| minute | charges/s | p50 ms | p99 ms | rows at the end | table + indexes | service CPU ms/charge | PostgreSQL CPU ms/charge | WAL bytes/charge | checkpoints so far | service RSS |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (Minute m : minutes) {
                out.printf(Locale.ROOT, "| %d | %,.0f | %.2f | %.2f | %,d | %,.0f MB | %.3f | %.3f | %,.0f | %d | %.0f MiB |%n", m.minute(), m.rate(),
                        m.p50Ms(), m.p99Ms(), m.rows(), m.tableMb(), m.serviceCpuMs(), m.pgCpuMs(), m.walBytes(), m.checkpoints(), m.rssMib());
            }
            Files.writeString(dir.resolve("soak.svg"), svg(minutes));
            out.println();
            out.println("Plot: soak.svg (charges per second and resident memory, minute by minute, against the rows in the table).");
        }

        /**
         * Two soaks side by side (e.g. before and after a change, each from {@code bench/run.sh --soak}): a summary table
         * (the whole soak after its first minute, and its last five minutes) and one chart over the rows in the table,
         * charges/s on the left axis and WAL bytes per charge on the right, so that a decay shows where it starts.
         */
        static void compare(Path beforeDir, Path afterDir, Path svgFile, PrintStream out) throws IOException {
            List<Minute> before = read(beforeDir), after = read(afterDir);
            out.println("| soak | minutes | rows at the end | table + indexes | charges/s (min 2 to end) | last 5 min | PostgreSQL CPU ms/charge | last 5 min | WAL bytes/charge | last 5 min | service CPU ms/charge | p99 ms (median of minutes) |");
            out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            summary(out, "before", before);
            summary(out, "after", after);
            Files.writeString(svgFile, compareSvg(before, after));
        }

        static void summary(PrintStream out, String name, List<Minute> minutes) {
            List<Minute> steady = minutes.stream().filter(m -> m.minute() >= 2).toList();
            List<Minute> last = steady.subList(Math.max(0, steady.size() - 5), steady.size());
            Minute end = minutes.get(minutes.size() - 1);
            double[] p99 = steady.stream().mapToDouble(Minute::p99Ms).sorted().toArray();
            out.printf(Locale.ROOT, "| %s | %d | %,d | %,.0f MB | %,.0f | %,.0f | %.3f | %.3f | %,.0f | %,.0f | %.3f | %.0f |%n", name, end.minute(),
                    end.rows(), end.tableMb(), mean(steady, Minute::rate), mean(last, Minute::rate),
                    perCharge(steady, Minute::pgCpuMs), perCharge(last, Minute::pgCpuMs), perCharge(steady, Minute::walBytes),
                    perCharge(last, Minute::walBytes), perCharge(steady, Minute::serviceCpuMs), p99[p99.length / 2]);
        }

        static double mean(List<Minute> minutes, java.util.function.ToDoubleFunction<Minute> f) {
            return minutes.stream().mapToDouble(f).average().orElse(Double.NaN);
        }

        /** A per-charge figure over several minutes, weighted by the charges of each minute. */
        static double perCharge(List<Minute> minutes, java.util.function.ToDoubleFunction<Minute> f) {
            double made = minutes.stream().mapToDouble(Minute::rate).sum();
            return minutes.stream().mapToDouble(m -> f.applyAsDouble(m) * m.rate()).sum() / made;
        }

        static String compareSvg(List<Minute> before, List<Minute> after) {
            return chart(380, 80, 48, "New charges at concurrency 16, minute by minute, before and after (bench/run.sh --soak)",
                    "<tspan fill=\"#1f77b4\">charges/s after</tspan> · <tspan fill=\"#7f7f7f\">charges/s before</tspan> · <tspan fill=\"#d62728\">WAL bytes/charge after</tspan> · <tspan fill=\"#ff9896\">WAL bytes/charge before</tspan> (dashed)",
                    "WAL bytes per charge", "%,.0f", List.of(
                            new Line(before, Minute::rate, false, "#7f7f7f", false), new Line(after, Minute::rate, false, "#1f77b4", false),
                            new Line(before, Minute::walBytes, true, "#ff9896", true), new Line(after, Minute::walBytes, true, "#d62728", true)));
        }

        /** A line chart with no library: charges/s (left axis) and RSS (right axis) over the rows in the table. */
        static String svg(List<Minute> minutes) {
            return chart(360, 70, 30, "New charges at concurrency 16, minute by minute (bench/run.sh --soak)", null,
                    "service RSS, MiB", "%.0f", List.of(new Line(minutes, Minute::rate, false, "#1f77b4", false),
                            new Line(minutes, Minute::rssMib, true, "#d62728", false)));
        }

        /** One series of a chart: a value per minute, on the left axis (charges/s) or the right one. */
        record Line(List<Minute> minutes, java.util.function.ToDoubleFunction<Minute> value, boolean right, String color,
                    boolean dashed) {
        }

        /** Lines over the rows in the table: charges/s on the left axis, {@code rightLabel} on the right. */
        static String chart(int h, int right, int top, String title, String legend, String rightLabel, String rightTicks,
                            List<Line> lines) {
            int w = 760, left = 70, bottom = 50;
            double maxRows = Math.max(1, lines.stream().flatMap(l -> l.minutes().stream()).mapToLong(Minute::rows).max().orElse(1));
            double maxLeft = Math.max(1, lines.stream().filter(l -> !l.right())
                    .flatMapToDouble(l -> l.minutes().stream().mapToDouble(l.value())).max().orElse(1)) * 1.15;
            double maxRight = Math.max(1, lines.stream().filter(Line::right)
                    .flatMapToDouble(l -> l.minutes().stream().mapToDouble(l.value())).max().orElse(1)) * 1.15;
            java.util.function.DoubleUnaryOperator x = r -> left + r / maxRows * (w - left - right);
            java.util.function.DoubleUnaryOperator yLeft = r -> top + (1 - r / maxLeft) * (h - top - bottom);
            java.util.function.DoubleUnaryOperator yRight = r -> top + (1 - r / maxRight) * (h - top - bottom);
            StringBuilder b = new StringBuilder();
            b.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">%n", w, h));
            b.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", w, h));
            b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"18\" font-size=\"14\">%s</text>%n", left, title));
            if (legend != null) {
                b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"36\">%s</text>%n", left, legend));
            }
            for (int i = 0; i <= 5; i++) {
                double rate = maxLeft * i / 5, rows = maxRows * i / 5, other = maxRight * i / 5;
                b.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>%n", left, w - right, yLeft.applyAsDouble(rate), yLeft.applyAsDouble(rate)));
                b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#1f77b4\">%,.0f</text>%n", left - 6, yLeft.applyAsDouble(rate) + 4, rate));
                b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" fill=\"#d62728\">" + rightTicks + "</text>%n", w - right + 6, yRight.applyAsDouble(other) + 4, other));
                b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%,.0f</text>%n", x.applyAsDouble(rows), h - bottom + 18, rows));
            }
            b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">rows in stripe_intents</text>%n", (w + left - right) / 2, h - 10));
            b.append(String.format(Locale.ROOT, "<text x=\"14\" y=\"%d\" fill=\"#1f77b4\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">charges/s</text>%n", h / 2, h / 2));
            b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" fill=\"#d62728\" transform=\"rotate(90 %d %d)\" text-anchor=\"middle\">%s</text>%n", w - 14, h / 2, w - 14, h / 2, rightLabel));
            for (Line line : lines) {
                java.util.function.DoubleUnaryOperator y = line.right() ? yRight : yLeft;
                String drawn = polyline(line.minutes(), m -> x.applyAsDouble(m.rows()), m -> y.applyAsDouble(line.value().applyAsDouble(m)), line.color());
                b.append(line.dashed() ? drawn.replace("/>", " stroke-dasharray=\"6 4\"/>") : drawn);
            }
            b.append("</svg>\n");
            return b.toString();
        }

        static String polyline(List<Minute> minutes, java.util.function.ToDoubleFunction<Minute> x, java.util.function.ToDoubleFunction<Minute> y,
                               String color) {
            StringBuilder points = new StringBuilder();
            for (Minute m : minutes) {
                points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x.applyAsDouble(m), y.applyAsDouble(m)));
            }
            return String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>%n", color, points.toString().trim());
        }
    }

    // ---- report ------------------------------------------------------------------------------------------------

    /** One wrk run (latencies in microseconds) or one pgbench run. */
    record Run(double rate, double p50, double p99, double p999, long requests, Map<String, Long> counts) {
        static final Run MISSING = new Run(Double.NaN, Double.NaN, Double.NaN, Double.NaN, 0, Map.of());

        boolean present() {
            return !Double.isNaN(rate);
        }

        long count(String k) {
            return counts.getOrDefault(k, 0L);
        }

        long errors() {
            return count("errors_connect") + count("errors_read") + count("errors_write") + count("errors_timeout");
        }
    }

    static final class Report {
        static final int[] CONCURRENCY = {1, 16, 64, 256};
        final Path dir;
        final Map<String, String> meta = new LinkedHashMap<>();
        final List<String[]> targets = new ArrayList<>();

        Report(Path dir) throws IOException {
            this.dir = dir;
            Path m = dir.resolve("meta.properties");
            if (Files.exists(m)) {
                for (String line : Files.readAllLines(m)) {
                    int eq = line.indexOf('=');
                    if (eq > 0) {
                        meta.put(line.substring(0, eq), line.substring(eq + 1));
                    }
                }
            }
        }

        Run wrk(String name) {
            Path p = dir.resolve(name + ".json");
            try {
                if (!Files.exists(p)) {
                    return Run.MISSING;
                }
                String json = Files.readAllLines(p).stream().filter(l -> l.startsWith("{")).reduce((a, b) -> b).orElse(null);
                if (json == null) {
                    return Run.MISSING;
                }
                Map<String, Long> counts = new LinkedHashMap<>();
                Matcher m = Pattern.compile("\"(\\w+)\":(-?[0-9.]+)").matcher(json);
                Map<String, Double> v = new LinkedHashMap<>();
                while (m.find()) {
                    v.put(m.group(1), Double.parseDouble(m.group(2)));
                    counts.put(m.group(1), (long) Double.parseDouble(m.group(2)));
                }
                double seconds = v.get("duration_us") / 1e6;
                return new Run(v.get("requests") / seconds, v.get("p50"), v.get("p99"), v.get("p999"), v.get("requests").longValue(), counts);
            } catch (IOException | RuntimeException e) {
                return Run.MISSING;
            }
        }

        Run pgbench(String name) {
            Path out = dir.resolve(name + ".txt");
            try {
                if (!Files.exists(out)) {
                    return Run.MISSING;
                }
                Matcher tps = Pattern.compile("tps = ([0-9.]+) \\(without initial connection time\\)").matcher(Files.readString(out));
                if (!tps.find()) {
                    return Run.MISSING;
                }
                List<Long> latencies = new ArrayList<>();
                try (Stream<Path> logs = Files.list(dir)) {
                    for (Path log : logs.filter(p -> p.getFileName().toString().startsWith(name + ".log.")).toList()) {
                        for (String line : Files.readAllLines(log)) {
                            String[] f = line.split(" ");
                            if (f.length > 2) {
                                latencies.add(Long.parseLong(f[2]));
                            }
                        }
                    }
                }
                long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
                return new Run(Double.parseDouble(tps.group(1)), pct(sorted, 50), pct(sorted, 99), pct(sorted, 99.9),
                        sorted.length, Map.of());
            } catch (IOException | RuntimeException e) {
                return Run.MISSING;
            }
        }

        /**
         * {@code bench/run.sh --focus}: the cost of exactly-once per request, CPU of each process (wrk's and pgbench's
         * own not counted), new charges against the pass-through and replays, each round on its own line.
         */
        void printFocus(PrintStream out) {
            out.println("| run | requests/s | p50 ms | p99 ms | service JVM | pass-through JVM | Stripe stand-in | PostgreSQL |");
            out.println("|---|---:|---:|---:|---:|---:|---:|---:|");
            List<String> names = new ArrayList<>();
            int rounds = 0;
            while (Files.exists(dir.resolve("f-svc-new-" + (rounds + 1) + ".json"))) {
                rounds++;
                names.addAll(List.of("f-svc-new-" + rounds, "f-pt-new-" + rounds, "f-fl-new-" + rounds, "f-vs-new-" + rounds,
                        "f-svc-replay-" + rounds, "f-vs-replay-" + rounds));
            }
            // The --versus-jar service's runs (f-vs-*) and the floor's (f-fl-*) show their JVM in the service column,
            // marked "(versus)" and "(floor)".
            Map<String, double[]> perRequest = new LinkedHashMap<>();
            Map<String, Run> runs = new LinkedHashMap<>();
            for (String name : names) {
                if (!Files.exists(dir.resolve(name + ".json"))) {
                    continue;
                }
                Run r = wrk(name);
                runs.put(name, r);
                double[] c = cpuPerRequest(name, r);
                boolean versus = name.startsWith("f-vs-"), floor = name.startsWith("f-fl-");
                if (c != null && versus) {
                    c = new double[]{c.length > 4 ? c[4] : Double.NaN, c[1], c[2], c[3]};
                } else if (floor) {
                    c = floorCpu(name, r);
                }
                perRequest.put(name, c);
                out.printf(Locale.ROOT, "| %s%s | %s | %s | %s | %s |%n", name, versus ? " (versus)" : floor ? " (floor)" : "",
                        rate(r.rate()), ms(r.p50()),
                        ms(r.p99()), c == null ? "– | – | – | –" : String.format(Locale.ROOT, "%.3f | %.3f | %.3f | %.3f", c[0], c[1], c[2], c[3]));
            }
            for (String name : List.of("f-pgb-pair-1", "f-pgb-before-pair-1", "f-pgb-pair-2", "f-pgb-before-pair-2",
                    "f-pgb-replay-1", "f-pgb-before-replay-1", "f-pgb-replay-2", "f-pgb-before-replay-2",
                    "f-pgb-minimal-pair-1", "f-pgb-minimal-pair-2")) {
                if (!Files.exists(dir.resolve(name + ".txt"))) {
                    continue;
                }
                Run r = pgbench(name);
                runs.put(name, r);
                double[] c = cpuPerRequest(name, r); // a pgbench run's requests: its logged transactions
                out.printf(Locale.ROOT, "| %s (pgbench, 16 clients) | %s | %s | %s | – | – | – | %s |%n", name, rate(r.rate()), ms(r.p50()),
                        ms(r.p99()), c == null ? "–" : String.format(Locale.ROOT, "%.3f", c[3]));
            }
            out.println();
            out.println("CPU in ms per request (per transaction for pgbench), from /proc/<pid>/stat over each run; \"before\": the");
            out.println("statements of main as of 71fb6c2 (bench/sql/before/), on the same database in the same run.");
            if (perRequest.keySet().stream().anyMatch(n -> n.startsWith("f-fl-"))) {
                printFloor(out, perRequest, runs);
            }
            if (perRequest.keySet().stream().anyMatch(n -> n.startsWith("f-vs-"))) {
                out.println();
                out.println("This build against the --versus-jar build, mean of the rounds (ms of CPU per request):");
                out.println();
                out.println("| | this build | versus | this ÷ versus |");
                out.println("|---|---:|---:|---:|");
                for (String[] row : List.of(new String[]{"service JVM per new charge", "f-svc-new-", "f-vs-new-", "0"},
                        new String[]{"service JVM per replay", "f-svc-replay-", "f-vs-replay-", "0"},
                        new String[]{"PostgreSQL per new charge", "f-svc-new-", "f-vs-new-", "3"},
                        new String[]{"PostgreSQL per replay", "f-svc-replay-", "f-vs-replay-", "3"})) {
                    int column = Integer.parseInt(row[3]);
                    double mine = mean(perRequest, row[1], column);
                    double theirs = mean(perRequest, row[2], column);
                    out.printf(Locale.ROOT, "| %s | %.3f | %.3f | %s |%n", row[0], mine, theirs, ratio(mine, theirs));
                }
                double pt = mean(perRequest, "f-pt-new-", 1);
                out.printf(Locale.ROOT, "| service JVM per new charge ÷ pass-through's (%.3f) | %s | %s | |%n", pt,
                        ratio(mean(perRequest, "f-svc-new-", 0), pt), ratio(mean(perRequest, "f-vs-new-", 0), pt));
            }
        }

        /**
         * The floor against the pass-through and the service, mean of the rounds: what exactly-once cannot avoid on
         * this stack (a committed claim and a committed finish through Agroal and pgjdbc), and what the service adds.
         */
        static void printFloor(PrintStream out, Map<String, double[]> perRequest, Map<String, Run> runs) {
            double pt = mean(perRequest, "f-pt-new-", 1), floor = mean(perRequest, "f-fl-new-", 0);
            double svc = mean(perRequest, "f-svc-new-", 0);
            double floorPg = mean(perRequest, "f-fl-new-", 3), svcPg = mean(perRequest, "f-svc-new-", 3);
            out.println();
            out.println("New charges: the pass-through, the floor (the pass-through plus a committed claim and a committed");
            out.println("finish on the minimal pair's table: the least exactly-once needs, through the same pool and driver)");
            out.println("and the service, mean of the rounds (ms of CPU per new charge):");
            out.println();
            out.println("| | charges/s | JVM | JVM ÷ pass-through's | PostgreSQL |");
            out.println("|---|---:|---:|---:|---:|");
            out.printf(Locale.ROOT, "| pass-through | %s | %.3f | 1.00 | – |%n", rate(meanRate(runs, "f-pt-new-")), pt);
            out.printf(Locale.ROOT, "| floor | %s | %.3f | %s | %.3f |%n", rate(meanRate(runs, "f-fl-new-")), floor,
                    ratio(floor, pt), floorPg);
            out.printf(Locale.ROOT, "| service | %s | %.3f | %s | %.3f |%n", rate(meanRate(runs, "f-svc-new-")), svc,
                    ratio(svc, pt), svcPg);
            out.println();
            out.printf(Locale.ROOT, "The floor's JVM per new charge is %s× the pass-through's; the service's is %s× the floor's.%n",
                    ratio(floor, pt), ratio(svc, floor));
            double minimal = Stream.of("f-pgb-minimal-pair-1", "f-pgb-minimal-pair-2").map(n -> runs.get(n))
                    .filter(r -> r != null && r.present()).mapToDouble(Run::rate).max().orElse(Double.NaN);
            if (!Double.isNaN(minimal)) {
                out.printf(Locale.ROOT, "Against pgbench's limit for the minimal pair (%s/s, 16 clients, best of two): the floor %s,"
                        + " the service %s.%n", rate(minimal), ratio(meanRate(runs, "f-fl-new-"), minimal),
                        ratio(meanRate(runs, "f-svc-new-"), minimal));
            }
        }

        static double meanRate(Map<String, Run> runs, String prefix) {
            return runs.entrySet().stream().filter(e -> e.getKey().startsWith(prefix) && e.getValue().present())
                    .mapToDouble(e -> e.getValue().rate()).average().orElse(Double.NaN);
        }

        static double mean(Map<String, double[]> perRequest, String prefix, int column) {
            return perRequest.entrySet().stream().filter(e -> e.getKey().startsWith(prefix) && e.getValue() != null)
                    .mapToDouble(e -> e.getValue()[column]).average().orElse(Double.NaN);
        }

        /** CPU ms per request of a wrk run: {service, pass-through, Stripe stand-in, PostgreSQL, versus service}, or null. */
        double[] cpuPerRequest(String name, Run run) {
            try {
                Path p = dir.resolve(name + ".cpu");
                if (!Files.exists(p) || run.requests() == 0) {
                    return null;
                }
                String[] f = Files.readString(p).trim().split("\\s+");
                double[] perRequest = new double[f.length];
                for (int i = 0; i < f.length; i++) {
                    perRequest[i] = Double.parseDouble(f[i]) / run.requests();
                }
                return perRequest;
            } catch (IOException | RuntimeException e) {
                return null;
            }
        }

        static String cpu(double[] c, int... parts) {
            if (c == null) {
                return "–";
            }
            double total = 0;
            StringBuilder b = new StringBuilder();
            for (int part : parts) {
                total += c[part];
                b.append(b.length() == 0 ? "" : " + ").append(String.format(Locale.ROOT, "%.2f", c[part]));
            }
            return String.format(Locale.ROOT, "%.2f (%s)", total, b);
        }

        static double pct(long[] sorted, double p) {
            if (sorted.length == 0) {
                return Double.NaN;
            }
            int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
            return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
        }

        static String ms(double micros) {
            return Double.isNaN(micros) ? "–" : String.format(Locale.ROOT, "%.2f", micros / 1000.0);
        }

        static String rate(double r) {
            return Double.isNaN(r) ? "–" : String.format(Locale.ROOT, "%,.0f", r);
        }

        static String ratio(double a, double b) {
            return Double.isNaN(a) || Double.isNaN(b) || b == 0 ? "–" : String.format(Locale.ROOT, "%.2f", a / b);
        }

        static double best(Run... runs) {
            return Arrays.stream(runs).filter(Run::present).mapToDouble(Run::rate).max().orElse(Double.NaN);
        }

        void target(String name, String goal, String measured, boolean met, String distance) {
            targets.add(new String[]{name, goal, measured, met ? "met" : "**missed**", distance});
        }

        void print(PrintStream out) {
            out.println("### Benchmark run " + meta.getOrDefault("started", "?"));
            out.println();
            out.println("Machine: " + meta.getOrDefault("machine", "?") + ". " + meta.getOrDefault("software", ""));
            out.println("Each measurement: " + meta.getOrDefault("duration", "?") + " of closed-loop load (wrk: one request in"
                    + " flight per connection, concurrency = connections), after a warm-up. Latencies in ms. Load generator,"
                    + " PostgreSQL, service and Stripe stand-in share the same 2 cores with other engineers' work: numbers"
                    + " are noisy, compare the ratios measured side by side in this run.");
            out.println();

            Run[] pair = new Run[4], replayRef = new Run[4], pt = new Run[4], svc = new Run[4], rep = new Run[4], mix = new Run[4];
            for (int i = 0; i < 4; i++) {
                int c = CONCURRENCY[i];
                pair[i] = pgbench("pgb-pair-c" + c);
                replayRef[i] = pgbench("pgb-replay-c" + c);
                pt[i] = wrk("s1-pt-c" + c);
                svc[i] = wrk("s1-svc-c" + c);
                rep[i] = wrk("s2-svc-c" + c);
                mix[i] = wrk("s3-svc-c" + c);
            }
            double pairLimit = best(pair), replayLimit = best(replayRef), ptBest = best(pt);

            out.println("#### References, same run");
            out.println();
            out.println("| concurrency | pgbench claim+finish tx/s | p50 | p99 | pgbench replay read tx/s | p50 | p99 | pass-through charges/s | p50 | p99 | p99.9 |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", CONCURRENCY[i],
                        rate(pair[i].rate()), ms(pair[i].p50()), ms(pair[i].p99()),
                        rate(replayRef[i].rate()), ms(replayRef[i].p50()), ms(replayRef[i].p99()),
                        rate(pt[i].rate()), ms(pt[i].p50()), ms(pt[i].p99()), ms(pt[i].p999()));
            }
            out.println();

            out.println("#### 1. New charges (Stripe latency 0)");
            out.println();
            out.println("| concurrency | charges/s | p50 | p99 | p99.9 | × pass-through | × pgbench pair (same c) | × pgbench pair limit | added p50 | added p99 | non-201 / socket errors |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                Run s = svc[i];
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d |%n", CONCURRENCY[i],
                        rate(s.rate()), ms(s.p50()), ms(s.p99()), ms(s.p999()), ratio(s.rate(), pt[i].rate()),
                        ratio(s.rate(), pair[i].rate()), ratio(s.rate(), pairLimit),
                        ms(s.p50() - pt[i].p50()), ms(s.p99() - pt[i].p99()),
                        s.requests() - s.count("s201"), s.errors());
            }
            out.println();

            out.println("CPU per request, in ms, measured from /proc over the same runs (wrk's own CPU not counted): where a");
            out.println("charge's cost goes on these 2 cores.");
            out.println();
            out.println("| concurrency | chargeonce: service + PostgreSQL + Stripe stand-in | pass-through: pass-through + Stripe stand-in | replay: service + PostgreSQL |");
            out.println("|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                int c = CONCURRENCY[i];
                out.printf(Locale.ROOT, "| %d | %s | %s | %s |%n", c, cpu(cpuPerRequest("s1-svc-c" + c, svc[i]), 0, 3, 2),
                        cpu(cpuPerRequest("s1-pt-c" + c, pt[i]), 1, 2), cpu(cpuPerRequest("s2-svc-c" + c, rep[i]), 0, 3));
            }
            out.println();

            out.println("#### 2. Replays of finished keys");
            out.println();
            out.println("| concurrency | replays/s | p50 | p99 | × pgbench replay (same c) | × pgbench replay limit | answered as replay |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                Run r = rep[i];
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %d of %d |%n", CONCURRENCY[i], rate(r.rate()),
                        ms(r.p50()), ms(r.p99()), ratio(r.rate(), replayRef[i].rate()), ratio(r.rate(), replayLimit),
                        r.count("replayed"), r.requests());
            }
            out.println();

            out.println("#### 3. Mix: 10% retries, 1% key reused with another body");
            out.println();
            out.println("| concurrency | requests/s | p50 | p99 | p99.9 | 201 first | 201 replayed | 422 reuse | 409 in flight | other / socket errors |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                Run m = mix[i];
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %d | %d | %d | %d | %d / %d |%n", CONCURRENCY[i],
                        rate(m.rate()), ms(m.p50()), ms(m.p99()), ms(m.p999()), m.count("s201") - m.count("replayed"),
                        m.count("replayed"), m.count("s422"), m.count("s409"),
                        m.count("s402") + m.count("s503") + m.count("other"), m.errors());
            }
            out.println();

            String[] inFlights = meta.getOrDefault("slow_inflights", "2000").trim().split("\\s+");
            int latency = Integer.parseInt(meta.getOrDefault("slow_latency_ms", "300"));
            out.printf(Locale.ROOT, "#### 4. Slow Stripe: %d ms per call, requests in flight = connections; ceiling = in flight ÷ %d ms%n%n",
                    latency, latency);
            out.println("| in flight | server | charges/s | Little's-law ceiling | × ceiling | p50 | p99 | non-201 / socket errors | CPU ms per charge (server + PostgreSQL + stand-in) | RSS peak (VmRSS) | VmHWM |");
            out.println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            Run slow = Run.MISSING;
            double ceiling = Double.NaN;
            long rssPeak = 0, hwm = 0;
            for (String n : inFlights) {
                int inFlight = Integer.parseInt(n);
                ceiling = inFlight / (latency / 1000.0);
                for (String target : List.of("svc", "pt")) {
                    Run r = wrk("s4-" + target + "-" + n);
                    long peak = Long.parseLong(meta.getOrDefault("s4_" + target + "_" + n + "_rss_peak_kb", "0"));
                    long high = Long.parseLong(meta.getOrDefault("s4_" + target + "_" + n + "_hwm_kb", "0"));
                    double[] cpu = cpuPerRequest("s4-" + target + "-" + n, r);
                    out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %d / %d | %s | %d MiB | %d MiB |%n", inFlight,
                            target.equals("svc") ? "chargeonce" : "pass-through", rate(r.rate()), rate(ceiling),
                            ratio(r.rate(), ceiling), ms(r.p50()), ms(r.p99()), r.requests() - r.count("s201"), r.errors(),
                            target.equals("svc") ? cpu(cpu, 0, 3, 2) : cpu(cpu, 1, 3, 2), peak / 1024, high / 1024);
                    if (target.equals("svc")) {
                        slow = r;
                        rssPeak = peak;
                        hwm = high;
                    }
                }
            }
            out.println();
            out.println("Both JVMs: `" + meta.getOrDefault("service_jvm", "") + "`.");
            out.println();

            out.println("#### 5. Growth of stripe_intents (concurrency " + meta.getOrDefault("growth_concurrency", "16") + ")");
            out.println();
            out.println("| rows in stripe_intents | table + indexes | claim (new charge) p50 | p99 | charges/s | replay p50 | p99 | replays/s | pgbench claim+finish p50 | p99 | claim p99 × empty |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            String[] steps = meta.getOrDefault("growth_steps", "").split(",");
            double emptyP99 = Double.NaN;
            double lastP99 = Double.NaN;
            String lastStep = null;
            for (String step : steps) {
                if (step.isBlank()) {
                    continue;
                }
                Run claim = wrk("s5-" + step + "-claim"), replay = wrk("s5-" + step + "-replay");
                Run ref = pgbench("pgb-s5-" + step + "-pair");
                if (Double.isNaN(emptyP99)) {
                    emptyP99 = claim.p99();
                }
                lastP99 = claim.p99();
                lastStep = step;
                out.printf(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                        meta.getOrDefault("growth_rows_" + step, step), meta.getOrDefault("growth_size_" + step, "?"),
                        ms(claim.p50()), ms(claim.p99()), rate(claim.rate()), ms(replay.p50()), ms(replay.p99()),
                        rate(replay.rate()), ms(ref.p50()), ms(ref.p99()), ratio(claim.p99(), emptyP99));
            }
            out.println();
            if (meta.containsKey("growth_load_seconds")) {
                out.println("Bulk loads (one INSERT … SELECT generate_series, then VACUUM ANALYZE): " + meta.get("growth_load_seconds") + ".");
                out.println();
            }

            printRefunds(out, svc, rep);

            // ---- targets
            Run c16 = svc[1], pt16 = pt[1];
            double peak = best(svc);
            target("new-charge throughput vs pass-through (peak vs peak)", "≥ 0.80", ratio(peak, ptBest),
                    peak / ptBest >= 0.8, gap(peak / ptBest, 0.8));
            target("new-charge throughput vs pgbench claim+finish limit (peak vs peak)", "≥ 0.25", ratio(peak, pairLimit),
                    peak / pairLimit >= 0.25, gap(peak / pairLimit, 0.25));
            double added50 = (c16.p50() - pt16.p50()) / 1000.0, added99 = (c16.p99() - pt16.p99()) / 1000.0;
            target("added latency p50 at concurrency 16", "≤ 2 ms", fmt(added50) + " ms", added50 <= 2, msGap(added50, 2));
            target("added latency p99 at concurrency 16", "≤ 5 ms", fmt(added99) + " ms", added99 <= 5, msGap(added99, 5));
            double replayPeak = best(rep);
            target("replay throughput vs pgbench replay limit (peak vs peak)", "≥ 0.25", ratio(replayPeak, replayLimit),
                    replayPeak / replayLimit >= 0.25, gap(replayPeak / replayLimit, 0.25));
            target("slow Stripe, " + inFlights[inFlights.length - 1] + " in flight: throughput vs Little's-law ceiling", "≥ 0.80", ratio(slow.rate(), ceiling),
                    slow.rate() / ceiling >= 0.8, gap(slow.rate() / ceiling, 0.8));
            double peakMiB = Math.max(rssPeak, hwm) / 1024.0;
            target("slow Stripe: resident memory (VmHWM)", "< 512 MiB", String.format(Locale.ROOT, "%.0f MiB", peakMiB),
                    peakMiB > 0 && peakMiB < 512, peakMiB == 0 ? "not measured" : peakMiB < 512 ? String.format(Locale.ROOT, "%.0f MiB to spare", 512 - peakMiB)
                            : String.format(Locale.ROOT, "%.0f MiB over", peakMiB - 512));
            boolean has10m = lastStep != null && lastStep.equals("10m");
            target("claim p99 at " + (has10m ? "10 million" : meta.getOrDefault("growth_rows_" + lastStep, "largest") + " (10M not run)")
                            + " rows vs empty", "≤ 1.5×", ratio(lastP99, emptyP99), lastP99 / emptyP99 <= 1.5,
                    gap(1.5, lastP99 / emptyP99));
            printIssue14(out, svc, pt, rep, pair, replayRef, slow, rssPeak, hwm);
            out.println("#### Targets of issue 6");
            out.println();
            out.println("| target | goal | measured | | distance |");
            out.println("|---|---|---|---|---|");
            for (String[] t : targets) {
                out.println("| " + String.join(" | ", t) + " |");
            }
            out.println();
        }

        /**
         * The cost of exactly-once: CPU per charge and per replay of each process, today's statements against the
         * earlier ones on the same server, and the targets, each as measured / goal.
         */
        void printIssue14(PrintStream out, Run[] svc, Run[] pt, Run[] rep, Run[] pair, Run[] replayRef, Run slow, long rssPeak, long hwm) {
            Run[] before = new Run[4], beforeReplay = new Run[4], minimal = new Run[4], floor = new Run[4];
            for (int i = 0; i < 4; i++) {
                before[i] = pgbench("pgb-before-pair-c" + CONCURRENCY[i]);
                beforeReplay[i] = pgbench("pgb-before-replay-c" + CONCURRENCY[i]);
                minimal[i] = pgbench("pgb-minimal-pair-c" + CONCURRENCY[i]);
                floor[i] = wrk("s1-fl-c" + CONCURRENCY[i]);
            }
            out.println("#### The cost of exactly-once (issue 14)");
            out.println();
            out.println("CPU in ms per request (per transaction for pgbench) of each process, from /proc over the same runs; the");
            out.println("pass-through is the same HTTP stack and Stripe call without a database. \"Before\": the statements of main as of");
            out.println("71fb6c2 on the schema of migrations V1.0.0-V1.7.0 (bench/sql/before/, database chargeonce_before), same server.");
            out.println("The floor: the pass-through plus a committed claim and a committed finish on the minimal pair's table, through");
            out.println("the same pool and driver (bench/passthrough, MinimalPair): the least any exactly-once charge costs on this stack.");
            out.println();
            out.println("| concurrency | service JVM per charge | pass-through JVM per charge | × | floor JVM per charge | floor × | PostgreSQL per charge (service) | pgbench pair today | pgbench pair before | today ÷ before | minimal pair | service JVM per replay | PostgreSQL per replay (service) | pgbench replay today | before |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                int c = CONCURRENCY[i];
                double[] f = floorCpu("s1-fl-c" + c, floor[i]);
                double[] s = cpuPerRequest("s1-svc-c" + c, svc[i]), p = cpuPerRequest("s1-pt-c" + c, pt[i]),
                        r = cpuPerRequest("s2-svc-c" + c, rep[i]), a = cpuPerRequest("pgb-pair-c" + c, pair[i]),
                        b = cpuPerRequest("pgb-before-pair-c" + c, before[i]), m = cpuPerRequest("pgb-minimal-pair-c" + c, minimal[i]),
                        ra = cpuPerRequest("pgb-replay-c" + c, replayRef[i]), rb = cpuPerRequest("pgb-before-replay-c" + c, beforeReplay[i]);
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", c, part(s, 0), part(p, 1),
                        s == null || p == null ? "–" : ratio(s[0], p[1]), part(f, 0), f == null || p == null ? "–" : ratio(f[0], p[1]),
                        part(s, 3), part(a, 3), part(b, 3),
                        a == null || b == null ? "–" : ratio(a[3], b[3]), part(m, 3), part(r, 0), part(r, 3), part(ra, 3), part(rb, 3));
            }
            out.println();
            // targets
            double svcPeak = best(svc);
            double[] s64 = cpuPerRequest("s1-svc-c64", svc[2]), p64 = cpuPerRequest("s1-pt-c64", pt[2]);
            double jvm = s64 == null || p64 == null ? Double.NaN : s64[0] / p64[1];
            List<String[]> t14 = new ArrayList<>();
            double[] f64 = floorCpu("s1-fl-c64", floor[2]);
            t14.add(row("service JVM CPU per new charge vs the pass-through's (concurrency 64)", "≤ 1.3×", jvm, jvm <= 1.3,
                    f64 == null || p64 == null ? Double.NaN : f64[0] / p64[1]));
            double[] a16 = cpuPerRequest("pgb-pair-c16", pair[1]), b16 = cpuPerRequest("pgb-before-pair-c16", before[1]);
            double pg = a16 == null || b16 == null ? Double.NaN : a16[3] / b16[3];
            t14.add(row("PostgreSQL CPU per charge, today's statements ÷ before (pgbench, 16 clients)", "≤ 0.67", pg, pg <= 0.67));
            double replay = best(rep) / best(replayRef);
            t14.add(row("replays vs pgbench limit of the same read (best vs best)", "≥ 0.40", replay, replay >= 0.40));
            double newVsMinimal = svcPeak / best(minimal);
            t14.add(row("new charges vs pgbench limit of the minimal pair (best vs best)", "≥ 0.50", newVsMinimal, newVsMinimal >= 0.50,
                    best(floor) / best(minimal)));
            double slowRatio = slow.rate() / svcPeak;
            t14.add(row("slow Stripe (300 ms), largest in flight, vs the service's own zero-latency peak", "≥ 0.80", slowRatio, slowRatio >= 0.80));
            double mib = Math.max(rssPeak, hwm) / 1024.0;
            t14.add(new String[]{"slow Stripe: resident memory (VmHWM)", "< 512 MiB", String.format(Locale.ROOT, "%.0f MiB", mib),
                    mib > 0 && mib < 512 ? "met" : "**missed**", "–"});
            double added = (svc[0].p50() - pt[0].p50() - pair[0].p50()) / 1000.0;
            t14.add(new String[]{"added latency at concurrency 1 over PostgreSQL's own pair (p50: service − pass-through − pgbench pair)",
                    "≤ 0.3 ms", fmt(added) + " ms", added <= 0.3 ? "met" : "**missed**", "–"});
            out.println("#### Targets of issue 14 (measured / goal)");
            out.println();
            out.println("The floor's column: the same measure for the floor, where it has one (what no exactly-once charge on this");
            out.println("stack goes below).");
            out.println();
            out.println("| target | goal | measured | | the floor |");
            out.println("|---|---|---|---|---:|");
            for (String[] t : t14) {
                out.println("| " + String.join(" | ", t) + " |");
            }
            out.println();
            out.println("The fifth target of issue 14, no decay with volume, is `bench/run.sh --soak` (README).");
            out.println();
        }

        static String part(double[] cpu, int index) {
            return cpu == null ? "–" : String.format(Locale.ROOT, "%.3f", cpu[index]);
        }

        static String[] row(String name, String goal, double measured, boolean met) {
            return row(name, goal, measured, met, Double.NaN);
        }

        static String[] row(String name, String goal, double measured, boolean met, double floor) {
            return new String[]{name, goal, Double.isNaN(measured) ? "–" : String.format(Locale.ROOT, "%.2f", measured),
                    Double.isNaN(measured) ? "not measured" : met ? "met" : "**missed**",
                    Double.isNaN(floor) ? "–" : String.format(Locale.ROOT, "%.2f", floor)};
        }

        /** A floor run's CPU per request with the floor's JVM first: {floor, pass-through, stand-in, PostgreSQL}, or null. */
        double[] floorCpu(String name, Run run) {
            double[] c = cpuPerRequest(name, run);
            return c == null || c.length < 6 ? null : new double[]{c[5], c[1], c[2], c[3]};
        }

        /** Scenarios 6 and 7: refunds, each next to its references and to the charges of the same run. */
        void printRefunds(PrintStream out, Run[] charges, Run[] chargeReplays) {
            Run[] pgb = new Run[4], pgbHot = new Run[4], pgbReplay = new Run[4], many = new Run[4], hot = new Run[4],
                    ptMany = new Run[4], ptHot = new Run[4], replay = new Run[4];
            for (int i = 0; i < 4; i++) {
                int c = CONCURRENCY[i];
                pgb[i] = pgbench("pgb-refund-c" + c);
                pgbHot[i] = pgbench("pgb-refund-hot-c" + c);
                pgbReplay[i] = pgbench("pgb-refund-replay-c" + c);
                many[i] = wrk("r1-svc-c" + c);
                ptMany[i] = wrk("r1-pt-c" + c);
                hot[i] = wrk("r2-svc-c" + c);
                ptHot[i] = wrk("r2-pt-c" + c);
                replay[i] = wrk("r3-svc-c" + c);
            }
            if (Arrays.stream(many).noneMatch(Run::present) && Arrays.stream(pgb).noneMatch(Run::present)) {
                return;
            }
            double pgbLimit = best(pgb), pgbReplayLimit = best(pgbReplay);
            String cents = meta.getOrDefault("refund_amount", "1");

            out.println("#### 6. New refunds (Stripe latency 0): " + cents + " cent each, a fresh Idempotency-Key per request");
            out.println();
            out.println("References, same run: `pgbench` with the service's refund statements (the claim transaction: `SELECT … FOR"
                    + " UPDATE` of the charge, `INSERT` of the refund, `UPDATE` of the charge's reservation, `COMMIT`; then the"
                    + " fenced finish), on " + meta.getOrDefault("pgbench_refund_charges", "?") + " charges or all on one;"
                    + " the pass-through's refund (one Stripe call) on the same kind of PaymentIntents.");
            out.println();
            out.println("| concurrency | pgbench refund tx + finish, many charges, tx/s | p50 | p99 | pgbench, one hot charge, tx/s | p50 | p99 | pass-through refunds/s, many | p50 | p99 | pass-through refunds/s, hot | p50 | p99 |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", CONCURRENCY[i],
                        rate(pgb[i].rate()), ms(pgb[i].p50()), ms(pgb[i].p99()),
                        rate(pgbHot[i].rate()), ms(pgbHot[i].p50()), ms(pgbHot[i].p99()),
                        rate(ptMany[i].rate()), ms(ptMany[i].p50()), ms(ptMany[i].p99()),
                        rate(ptHot[i].rate()), ms(ptHot[i].p50()), ms(ptHot[i].p99()));
            }
            out.println();

            out.println("(a) Many charges, one refund each (" + meta.getOrDefault("refund_pool", "?") + " pre-made charges per run, each"
                    + " with its own PaymentIntent at the stand-in): no two refunds in flight share a charge.");
            out.println();
            out.println("| concurrency | refunds/s | p50 | p99 | p99.9 | × pass-through | × pgbench refund (same c) | × pgbench refund limit | new charges/s (scenario 1) | × new charges | added p50 | added p99 | connections busy / waiting on a lock | non-201 / socket errors |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                Run r = many[i];
                String name = "r1-svc-c" + CONCURRENCY[i];
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |%n", CONCURRENCY[i],
                        rate(r.rate()), ms(r.p50()), ms(r.p99()), ms(r.p999()), ratio(r.rate(), ptMany[i].rate()),
                        ratio(r.rate(), pgb[i].rate()), ratio(r.rate(), pgbLimit), rate(charges[i].rate()),
                        ratio(r.rate(), charges[i].rate()), ms(r.p50() - ptMany[i].p50()), ms(r.p99() - ptMany[i].p99()),
                        meta.getOrDefault(name + "_busy", "–"), meta.getOrDefault(name + "_lock_waits", "–"), nonCreated(r));
            }
            out.println();

            out.println("(b) One hot charge: every refund in flight is on the same charge, whose row lock the claim transaction"
                    + " holds from its `SELECT … FOR UPDATE` to its `COMMIT`, so the claims of that charge take turns (the"
                    + " Stripe call and the finish are outside the lock). The hot charge changes every second (" + meta.getOrDefault("hot_charges", "?")
                    + " charges made through the service per run), so that the stand-in, which scans a PaymentIntent's refunds"
                    + " on every refund create, does not slow down over the run. Connections: the service's PostgreSQL"
                    + " backends, sampled twice a second (pool maximum 32): busy (mean), waiting on a lock (mean / max).");
            out.println();
            out.println("| concurrency | refunds/s | p50 | p99 | p99.9 | × c=1 | × many charges (same c) | × pass-through hot | × pgbench hot (same c) | connections busy | waiting on a lock | non-201 / socket errors |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                Run r = hot[i];
                String name = "r2-svc-c" + CONCURRENCY[i];
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |%n", CONCURRENCY[i],
                        rate(r.rate()), ms(r.p50()), ms(r.p99()), ms(r.p999()), ratio(r.rate(), hot[0].rate()),
                        ratio(r.rate(), many[i].rate()), ratio(r.rate(), ptHot[i].rate()), ratio(r.rate(), pgbHot[i].rate()),
                        meta.getOrDefault(name + "_busy", "–"), meta.getOrDefault(name + "_lock_waits", "–"),
                        meta.getOrDefault(name + "_lock_waits_max", "–"), nonCreated(r));
            }
            out.println();
            long wrapped = Arrays.stream(many).mapToLong(r -> r.count("wrapped")).sum();
            if (wrapped > 0) {
                out.println("Some runs of (a) used up their charges and went on with a second refund of each: " + wrapped
                        + " refunds in all (no two in flight shared a charge still).");
                out.println();
            }

            out.println("CPU per refund, in ms, from /proc over the same runs (wrk's own CPU not counted), next to a new charge's.");
            out.println();
            out.println("| concurrency | refund, many charges: service + PostgreSQL + stand-in | refund, hot charge: service + PostgreSQL + stand-in | new charge (scenario 1): service + PostgreSQL + stand-in | pass-through refund: pass-through + stand-in | refund replay: service + PostgreSQL |");
            out.println("|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                int c = CONCURRENCY[i];
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s |%n", c, cpu(cpuPerRequest("r1-svc-c" + c, many[i]), 0, 3, 2),
                        cpu(cpuPerRequest("r2-svc-c" + c, hot[i]), 0, 3, 2), cpu(cpuPerRequest("s1-svc-c" + c, charges[i]), 0, 3, 2),
                        cpu(cpuPerRequest("r1-pt-c" + c, ptMany[i]), 1, 2), cpu(cpuPerRequest("r3-svc-c" + c, replay[i]), 0, 3));
            }
            out.println();

            out.println("#### 7. Replays of finished refunds (same key, same body)");
            out.println();
            out.println("| concurrency | replays/s | p50 | p99 | × pgbench refund replay (same c) | pgbench refund replay tx/s | p50 | p99 | × pgbench refund replay limit | charge replays/s (scenario 2) | × charge replays | answered as replay |");
            out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (int i = 0; i < 4; i++) {
                Run r = replay[i];
                out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d of %d |%n", CONCURRENCY[i],
                        rate(r.rate()), ms(r.p50()), ms(r.p99()), ratio(r.rate(), pgbReplay[i].rate()), rate(pgbReplay[i].rate()),
                        ms(pgbReplay[i].p50()), ms(pgbReplay[i].p99()), ratio(r.rate(), pgbReplayLimit),
                        rate(chargeReplays[i].rate()), ratio(r.rate(), chargeReplays[i].rate()), r.count("replayed"), r.requests());
            }
            out.println();
        }

        /** Answers other than 201 (by status) and socket errors of a refunds run. */
        static String nonCreated(Run r) {
            if (!r.present()) {
                return "–";
            }
            StringBuilder b = new StringBuilder();
            for (String k : List.of("s400", "s402", "s404", "s409", "s422", "s503", "other")) {
                if (r.count(k) > 0) {
                    b.append(b.length() == 0 ? "" : ", ").append(r.count(k)).append(" × ").append(k.startsWith("s") ? k.substring(1) : k);
                }
            }
            return (b.length() == 0 ? "0" : b.toString()) + " / " + r.errors();
        }

        static String fmt(double v) {
            return String.format(Locale.ROOT, "%.2f", v);
        }

        /** For "at least" ratios: how far above or below the goal, in points of the goal. */
        static String gap(double measured, double goal) {
            if (Double.isNaN(measured)) {
                return "not measured";
            }
            double d = measured - goal;
            return String.format(Locale.ROOT, "%s%.2f (%s%.0f%% of the goal)", d >= 0 ? "+" : "", d, d >= 0 ? "+" : "",
                    100 * d / goal);
        }

        static String msGap(double measured, double goal) {
            return Double.isNaN(measured) ? "not measured" : String.format(Locale.ROOT, "%.2f ms %s", Math.abs(goal - measured),
                    measured <= goal ? "to spare" : "over");
        }
    }
}

package bench;

import static bench.Tables.ms;
import static bench.Tables.rate;
import static bench.Tables.ratio;

import java.io.PrintStream;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * {@code focus <results dir>} ({@code bench/run.sh --focus}): the cost of exactly-once per request, CPU of each
 * process (wrk's and pgbench's own not counted), new charges against the pass-through, the floor and replays, each
 * round on its own line; then the floor against the pass-through and the service, and this build against another.
 */
final class FocusReport {
    private final Results results;

    FocusReport(Results results) {
        this.results = results;
    }

    void print(PrintStream out) {
        out.println("| run | requests/s | p50 ms | p99 ms | service JVM | pass-through JVM | Stripe stand-in | PostgreSQL |");
        out.println("|---|---:|---:|---:|---:|---:|---:|---:|");
        List<String> names = new ArrayList<>();
        int rounds = 0;
        while (Files.exists(results.dir.resolve("f-svc-new-" + (rounds + 1) + ".json"))) {
            rounds++;
            names.addAll(List.of("f-svc-new-" + rounds, "f-pt-new-" + rounds, "f-fl-new-" + rounds, "f-vs-new-" + rounds,
                    "f-svc-replay-" + rounds, "f-vs-replay-" + rounds));
        }
        // The --versus-jar service's runs (f-vs-*) and the floor's (f-fl-*) show their JVM in the service column,
        // marked "(versus)" and "(floor)".
        Map<String, double[]> perRequest = new LinkedHashMap<>();
        Map<String, Measurement> runs = new LinkedHashMap<>();
        for (String name : names) {
            if (!Files.exists(results.dir.resolve(name + ".json"))) {
                continue;
            }
            Measurement r = results.wrk(name);
            runs.put(name, r);
            double[] c = results.cpuPerRequest(name, r);
            boolean versus = name.startsWith("f-vs-"), floor = name.startsWith("f-fl-");
            if (c != null && versus) {
                c = new double[]{c.length > 4 ? c[4] : Double.NaN, c[1], c[2], c[3]};
            } else if (floor) {
                c = results.floorCpu(name, r);
            }
            perRequest.put(name, c);
            out.printf(Locale.ROOT, "| %s%s | %s | %s | %s | %s |%n", name, versus ? " (versus)" : floor ? " (floor)" : "",
                    rate(r.rate()), ms(r.p50()),
                    ms(r.p99()), c == null ? "– | – | – | –" : String.format(Locale.ROOT, "%.3f | %.3f | %.3f | %.3f", c[0], c[1], c[2], c[3]));
        }
        for (String name : List.of("f-pgb-pair-1", "f-pgb-before-pair-1", "f-pgb-pair-2", "f-pgb-before-pair-2",
                "f-pgb-replay-1", "f-pgb-before-replay-1", "f-pgb-replay-2", "f-pgb-before-replay-2",
                "f-pgb-minimal-pair-1", "f-pgb-minimal-pair-2")) {
            if (!Files.exists(results.dir.resolve(name + ".txt"))) {
                continue;
            }
            Measurement r = results.pgbench(name);
            runs.put(name, r);
            double[] c = results.cpuPerRequest(name, r); // a pgbench run's requests: its logged transactions
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
    static void printFloor(PrintStream out, Map<String, double[]> perRequest, Map<String, Measurement> runs) {
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
                .filter(r -> r != null && r.present()).mapToDouble(Measurement::rate).max().orElse(Double.NaN);
        if (!Double.isNaN(minimal)) {
            out.printf(Locale.ROOT, "Against pgbench's limit for the minimal pair (%s/s, 16 clients, best of two): the floor %s,"
                    + " the service %s.%n", rate(minimal), ratio(meanRate(runs, "f-fl-new-"), minimal),
                    ratio(meanRate(runs, "f-svc-new-"), minimal));
        }
    }

    static double meanRate(Map<String, Measurement> runs, String prefix) {
        return runs.entrySet().stream().filter(e -> e.getKey().startsWith(prefix) && e.getValue().present())
                .mapToDouble(e -> e.getValue().rate()).average().orElse(Double.NaN);
    }

    static double mean(Map<String, double[]> perRequest, String prefix, int column) {
        return perRequest.entrySet().stream().filter(e -> e.getKey().startsWith(prefix) && e.getValue() != null)
                .mapToDouble(e -> e.getValue()[column]).average().orElse(Double.NaN);
    }
}

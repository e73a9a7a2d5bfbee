package bench;

import static bench.Tables.best;
import static bench.Tables.fmt;
import static bench.Tables.part;
import static bench.Tables.ratio;
import static bench.Tables.row;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The cost of exactly-once: CPU per charge and per replay of each process, today's statements against those before
 * they were reworked for cost (bench/sql/before/: main as of 71fb6c2) on the same server, the floor (the least any
 * exactly-once charge costs on this stack), and the targets set for that cost, each as measured / goal.
 */
final class CostReport {
    private final Results results;

    CostReport(Results results) {
        this.results = results;
    }

    void print(PrintStream out, Measurement[] svc, Measurement[] pt, Measurement[] rep, Measurement[] pair, Measurement[] replayRef, Measurement slow, long rssPeak, long hwm) {
        Measurement[] before = new Measurement[4], beforeReplay = new Measurement[4], minimal = new Measurement[4], floor = new Measurement[4];
        for (int i = 0; i < 4; i++) {
            before[i] = results.pgbench("pgb-before-pair-c" + Report.CONCURRENCY[i]);
            beforeReplay[i] = results.pgbench("pgb-before-replay-c" + Report.CONCURRENCY[i]);
            minimal[i] = results.pgbench("pgb-minimal-pair-c" + Report.CONCURRENCY[i]);
            floor[i] = results.wrk("s1-fl-c" + Report.CONCURRENCY[i]);
        }
        out.println("#### The cost of exactly-once");
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
            int c = Report.CONCURRENCY[i];
            double[] f = results.floorCpu("s1-fl-c" + c, floor[i]);
            double[] s = results.cpuPerRequest("s1-svc-c" + c, svc[i]), p = results.cpuPerRequest("s1-pt-c" + c, pt[i]),
                    r = results.cpuPerRequest("s2-svc-c" + c, rep[i]), a = results.cpuPerRequest("pgb-pair-c" + c, pair[i]),
                    b = results.cpuPerRequest("pgb-before-pair-c" + c, before[i]), m = results.cpuPerRequest("pgb-minimal-pair-c" + c, minimal[i]),
                    ra = results.cpuPerRequest("pgb-replay-c" + c, replayRef[i]), rb = results.cpuPerRequest("pgb-before-replay-c" + c, beforeReplay[i]);
            out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", c, part(s, 0), part(p, 1),
                    s == null || p == null ? "–" : ratio(s[0], p[1]), part(f, 0), f == null || p == null ? "–" : ratio(f[0], p[1]),
                    part(s, 3), part(a, 3), part(b, 3),
                    a == null || b == null ? "–" : ratio(a[3], b[3]), part(m, 3), part(r, 0), part(r, 3), part(ra, 3), part(rb, 3));
        }
        out.println();
        // targets
        double svcPeak = best(svc);
        double[] s64 = results.cpuPerRequest("s1-svc-c64", svc[2]), p64 = results.cpuPerRequest("s1-pt-c64", pt[2]);
        double jvm = s64 == null || p64 == null ? Double.NaN : s64[0] / p64[1];
        List<String[]> goals = new ArrayList<>();
        double[] f64 = results.floorCpu("s1-fl-c64", floor[2]);
        goals.add(row("service JVM CPU per new charge vs the pass-through's (concurrency 64)", "≤ 1.3×", jvm, jvm <= 1.3,
                f64 == null || p64 == null ? Double.NaN : f64[0] / p64[1]));
        double[] a16 = results.cpuPerRequest("pgb-pair-c16", pair[1]), b16 = results.cpuPerRequest("pgb-before-pair-c16", before[1]);
        double pg = a16 == null || b16 == null ? Double.NaN : a16[3] / b16[3];
        goals.add(row("PostgreSQL CPU per charge, today's statements ÷ before (pgbench, 16 clients)", "≤ 0.67", pg, pg <= 0.67));
        double replay = best(rep) / best(replayRef);
        goals.add(row("replays vs pgbench limit of the same read (best vs best)", "≥ 0.40", replay, replay >= 0.40));
        double newVsMinimal = svcPeak / best(minimal);
        goals.add(row("new charges vs pgbench limit of the minimal pair (best vs best)", "≥ 0.50", newVsMinimal, newVsMinimal >= 0.50,
                best(floor) / best(minimal)));
        double slowRatio = slow.rate() / svcPeak;
        goals.add(row("slow Stripe (300 ms), largest in flight, vs the service's own zero-latency peak", "≥ 0.80", slowRatio, slowRatio >= 0.80));
        double mib = Math.max(rssPeak, hwm) / 1024.0;
        goals.add(new String[]{"slow Stripe: resident memory (VmHWM)", "< 512 MiB", String.format(Locale.ROOT, "%.0f MiB", mib),
                mib > 0 && mib < 512 ? "met" : "**missed**", "–"});
        double added = (svc[0].p50() - pt[0].p50() - pair[0].p50()) / 1000.0;
        goals.add(new String[]{"added latency at concurrency 1 over PostgreSQL's own pair (p50: service − pass-through − pgbench pair)",
                "≤ 0.3 ms", fmt(added) + " ms", added <= 0.3 ? "met" : "**missed**", "–"});
        out.println("#### Targets for the cost of exactly-once (measured / goal)");
        out.println();
        out.println("The floor's column: the same measure for the floor, where it has one (what no exactly-once charge on this");
        out.println("stack goes below).");
        out.println();
        out.println("| target | goal | measured | | the floor |");
        out.println("|---|---|---|---|---:|");
        for (String[] t : goals) {
            out.println("| " + String.join(" | ", t) + " |");
        }
        out.println();
        out.println("The fifth target for the cost of exactly-once, no decay with volume, is `bench/run.sh --soak` (README).");
        out.println();
    }
}

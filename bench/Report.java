package bench;

import static bench.Tables.best;
import static bench.Tables.cpu;
import static bench.Tables.fmt;
import static bench.Tables.gap;
import static bench.Tables.ms;
import static bench.Tables.msGap;
import static bench.Tables.rate;
import static bench.Tables.ratio;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code report <results dir>}: the full run's tables as Markdown: the references measured in the same run (pgbench
 * with the service's statements, the pass-through), scenarios 1-7 (new charges, replays, the mix, a slow Stripe,
 * growth, new refunds, refund replays), the cost of exactly-once (CostReport), and the targets, each as measured
 * against its goal.
 */
final class Report {
    /** The concurrencies every scenario runs at (bench/run.sh CONCURRENCY). */
    static final int[] CONCURRENCY = {1, 16, 64, 256};
    private final Results results;
    /** The targets met or missed, in the order the tables come: printed last. */
    private final List<String[]> targets = new ArrayList<>();

    Report(Results results) {
        this.results = results;
    }

    private void target(String name, String goal, String measured, boolean met, String distance) {
        targets.add(new String[]{name, goal, measured, met ? "met" : "**missed**", distance});
    }

    void print(PrintStream out) {
        out.println("### Benchmark run " + results.meta.getOrDefault("started", "?"));
        out.println();
        out.println("Machine: " + results.meta.getOrDefault("machine", "?") + ". " + results.meta.getOrDefault("software", ""));
        out.println("Each measurement: " + results.meta.getOrDefault("duration", "?") + " of closed-loop load (wrk: one request in"
                + " flight per connection, concurrency = connections), after a warm-up. Latencies in ms. Load generator,"
                + " PostgreSQL, service and Stripe stand-in share the same 2 cores with other engineers' work: numbers"
                + " are noisy, compare the ratios measured side by side in this run.");
        out.println();

        Measurement[] pair = new Measurement[4], replayRef = new Measurement[4], pt = new Measurement[4], svc = new Measurement[4], rep = new Measurement[4], mix = new Measurement[4];
        for (int i = 0; i < 4; i++) {
            int c = CONCURRENCY[i];
            pair[i] = results.pgbench("pgb-pair-c" + c);
            replayRef[i] = results.pgbench("pgb-replay-c" + c);
            pt[i] = results.wrk("s1-pt-c" + c);
            svc[i] = results.wrk("s1-svc-c" + c);
            rep[i] = results.wrk("s2-svc-c" + c);
            mix[i] = results.wrk("s3-svc-c" + c);
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
            Measurement s = svc[i];
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
            out.printf(Locale.ROOT, "| %d | %s | %s | %s |%n", c, cpu(results.cpuPerRequest("s1-svc-c" + c, svc[i]), 0, 3, 2),
                    cpu(results.cpuPerRequest("s1-pt-c" + c, pt[i]), 1, 2), cpu(results.cpuPerRequest("s2-svc-c" + c, rep[i]), 0, 3));
        }
        out.println();

        out.println("#### 2. Replays of finished keys");
        out.println();
        out.println("| concurrency | replays/s | p50 | p99 | × pgbench replay (same c) | × pgbench replay limit | answered as replay |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|");
        for (int i = 0; i < 4; i++) {
            Measurement r = rep[i];
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
            Measurement m = mix[i];
            out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %d | %d | %d | %d | %d / %d |%n", CONCURRENCY[i],
                    rate(m.rate()), ms(m.p50()), ms(m.p99()), ms(m.p999()), m.count("s201") - m.count("replayed"),
                    m.count("replayed"), m.count("s422"), m.count("s409"),
                    m.count("s402") + m.count("s503") + m.count("other"), m.errors());
        }
        out.println();

        String[] inFlights = results.meta.getOrDefault("slow_inflights", "2000").trim().split("\\s+");
        int latency = Integer.parseInt(results.meta.getOrDefault("slow_latency_ms", "300"));
        out.printf(Locale.ROOT, "#### 4. Slow Stripe: %d ms per call, requests in flight = connections; ceiling = in flight ÷ %d ms%n%n",
                latency, latency);
        out.println("| in flight | server | charges/s | Little's-law ceiling | × ceiling | p50 | p99 | non-201 / socket errors | CPU ms per charge (server + PostgreSQL + stand-in) | RSS peak (VmRSS) | VmHWM |");
        out.println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        Measurement slow = Measurement.MISSING;
        double ceiling = Double.NaN;
        long rssPeak = 0, hwm = 0;
        for (String n : inFlights) {
            int inFlight = Integer.parseInt(n);
            ceiling = inFlight / (latency / 1000.0);
            for (String target : List.of("svc", "pt")) {
                Measurement r = results.wrk("s4-" + target + "-" + n);
                long peak = Long.parseLong(results.meta.getOrDefault("s4_" + target + "_" + n + "_rss_peak_kb", "0"));
                long high = Long.parseLong(results.meta.getOrDefault("s4_" + target + "_" + n + "_hwm_kb", "0"));
                double[] cpu = results.cpuPerRequest("s4-" + target + "-" + n, r);
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
        out.println("Both JVMs: `" + results.meta.getOrDefault("service_jvm", "") + "`.");
        out.println();

        out.println("#### 5. Growth of stripe_intents (concurrency " + results.meta.getOrDefault("growth_concurrency", "16") + ")");
        out.println();
        out.println("| rows in stripe_intents | table + indexes | claim (new charge) p50 | p99 | charges/s | replay p50 | p99 | replays/s | pgbench claim+finish p50 | p99 | claim p99 × empty |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        String[] steps = results.meta.getOrDefault("growth_steps", "").split(",");
        double emptyP99 = Double.NaN;
        double lastP99 = Double.NaN;
        String lastStep = null;
        for (String step : steps) {
            if (step.isBlank()) {
                continue;
            }
            Measurement claim = results.wrk("s5-" + step + "-claim"), replay = results.wrk("s5-" + step + "-replay");
            Measurement ref = results.pgbench("pgb-s5-" + step + "-pair");
            if (Double.isNaN(emptyP99)) {
                emptyP99 = claim.p99();
            }
            lastP99 = claim.p99();
            lastStep = step;
            out.printf(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n",
                    results.meta.getOrDefault("growth_rows_" + step, step), results.meta.getOrDefault("growth_size_" + step, "?"),
                    ms(claim.p50()), ms(claim.p99()), rate(claim.rate()), ms(replay.p50()), ms(replay.p99()),
                    rate(replay.rate()), ms(ref.p50()), ms(ref.p99()), ratio(claim.p99(), emptyP99));
        }
        out.println();
        if (results.meta.containsKey("growth_load_seconds")) {
            out.println("Bulk loads (one INSERT … SELECT generate_series, then VACUUM ANALYZE): " + results.meta.get("growth_load_seconds") + ".");
            out.println();
        }

        new RefundReport(results).print(out, svc, rep);

        // ---- targets
        Measurement c16 = svc[1], pt16 = pt[1];
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
        target("claim p99 at " + (has10m ? "10 million" : results.meta.getOrDefault("growth_rows_" + lastStep, "largest") + " (10M not run)")
                        + " rows vs empty", "≤ 1.5×", ratio(lastP99, emptyP99), lastP99 / emptyP99 <= 1.5,
                gap(1.5, lastP99 / emptyP99));
        new CostReport(results).print(out, svc, pt, rep, pair, replayRef, slow, rssPeak, hwm);
        out.println("#### Targets: throughput, latency, memory and growth (measured / goal)");
        out.println();
        out.println("| target | goal | measured | | distance |");
        out.println("|---|---|---|---|---|");
        for (String[] t : targets) {
            out.println("| " + String.join(" | ", t) + " |");
        }
        out.println();
    }
}

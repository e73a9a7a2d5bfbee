package bench;

import static bench.Tables.best;
import static bench.Tables.cpu;
import static bench.Tables.ms;
import static bench.Tables.nonCreated;
import static bench.Tables.rate;
import static bench.Tables.ratio;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;

/**
 * Scenarios 6 and 7 of the full run: new refunds (on many charges, and all on one hot charge) and refund replays, each
 * next to its references (pgbench with the service's refund statements, the pass-through) and to the charges of the
 * same run.
 */
final class RefundReport {
    private final Results results;

    RefundReport(Results results) {
        this.results = results;
    }

    void print(PrintStream out, Measurement[] charges, Measurement[] chargeReplays) {
        Measurement[] pgb = new Measurement[4], pgbHot = new Measurement[4], pgbReplay = new Measurement[4], many = new Measurement[4], hot = new Measurement[4],
                ptMany = new Measurement[4], ptHot = new Measurement[4], replay = new Measurement[4];
        for (int i = 0; i < 4; i++) {
            int c = Report.CONCURRENCY[i];
            pgb[i] = results.pgbench("pgb-refund-c" + c);
            pgbHot[i] = results.pgbench("pgb-refund-hot-c" + c);
            pgbReplay[i] = results.pgbench("pgb-refund-replay-c" + c);
            many[i] = results.wrk("r1-svc-c" + c);
            ptMany[i] = results.wrk("r1-pt-c" + c);
            hot[i] = results.wrk("r2-svc-c" + c);
            ptHot[i] = results.wrk("r2-pt-c" + c);
            replay[i] = results.wrk("r3-svc-c" + c);
        }
        if (Arrays.stream(many).noneMatch(Measurement::present) && Arrays.stream(pgb).noneMatch(Measurement::present)) {
            return;
        }
        double pgbLimit = best(pgb), pgbReplayLimit = best(pgbReplay);
        String cents = results.meta.getOrDefault("refund_amount", "1");

        out.println("#### 6. New refunds (Stripe latency 0): " + cents + " cent each, a fresh Idempotency-Key per request");
        out.println();
        out.println("References, same run: `pgbench` with the service's refund statements (the claim transaction: `SELECT … FOR"
                + " UPDATE` of the charge, `INSERT` of the refund, `UPDATE` of the charge's reservation, `COMMIT`; then the"
                + " fenced finish), on " + results.meta.getOrDefault("pgbench_refund_charges", "?") + " charges or all on one;"
                + " the pass-through's refund (one Stripe call) on the same kind of PaymentIntents.");
        out.println();
        out.println("| concurrency | pgbench refund tx + finish, many charges, tx/s | p50 | p99 | pgbench, one hot charge, tx/s | p50 | p99 | pass-through refunds/s, many | p50 | p99 | pass-through refunds/s, hot | p50 | p99 |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (int i = 0; i < 4; i++) {
            out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |%n", Report.CONCURRENCY[i],
                    rate(pgb[i].rate()), ms(pgb[i].p50()), ms(pgb[i].p99()),
                    rate(pgbHot[i].rate()), ms(pgbHot[i].p50()), ms(pgbHot[i].p99()),
                    rate(ptMany[i].rate()), ms(ptMany[i].p50()), ms(ptMany[i].p99()),
                    rate(ptHot[i].rate()), ms(ptHot[i].p50()), ms(ptHot[i].p99()));
        }
        out.println();

        out.println("(a) Many charges, one refund each (" + results.meta.getOrDefault("refund_pool", "?") + " pre-made charges per run, each"
                + " with its own PaymentIntent at the stand-in): no two refunds in flight share a charge.");
        out.println();
        out.println("| concurrency | refunds/s | p50 | p99 | p99.9 | × pass-through | × pgbench refund (same c) | × pgbench refund limit | new charges/s (scenario 1) | × new charges | added p50 | added p99 | connections busy / waiting on a lock | non-201 / socket errors |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (int i = 0; i < 4; i++) {
            Measurement r = many[i];
            String name = "r1-svc-c" + Report.CONCURRENCY[i];
            out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |%n", Report.CONCURRENCY[i],
                    rate(r.rate()), ms(r.p50()), ms(r.p99()), ms(r.p999()), ratio(r.rate(), ptMany[i].rate()),
                    ratio(r.rate(), pgb[i].rate()), ratio(r.rate(), pgbLimit), rate(charges[i].rate()),
                    ratio(r.rate(), charges[i].rate()), ms(r.p50() - ptMany[i].p50()), ms(r.p99() - ptMany[i].p99()),
                    results.meta.getOrDefault(name + "_busy", "–"), results.meta.getOrDefault(name + "_lock_waits", "–"), nonCreated(r));
        }
        out.println();

        out.println("(b) One hot charge: every refund in flight is on the same charge, whose row lock the claim transaction"
                + " holds from its `SELECT … FOR UPDATE` to its `COMMIT`, so the claims of that charge take turns (the"
                + " Stripe call and the finish are outside the lock). The hot charge changes every second (" + results.meta.getOrDefault("hot_charges", "?")
                + " charges made through the service per run), so that the stand-in, which scans a PaymentIntent's refunds"
                + " on every refund create, does not slow down over the run. Connections: the service's PostgreSQL"
                + " backends, sampled twice a second (pool maximum 32): busy (mean), waiting on a lock (mean / max).");
        out.println();
        out.println("| concurrency | refunds/s | p50 | p99 | p99.9 | × c=1 | × many charges (same c) | × pass-through hot | × pgbench hot (same c) | connections busy | waiting on a lock | non-201 / socket errors |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (int i = 0; i < 4; i++) {
            Measurement r = hot[i];
            String name = "r2-svc-c" + Report.CONCURRENCY[i];
            out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |%n", Report.CONCURRENCY[i],
                    rate(r.rate()), ms(r.p50()), ms(r.p99()), ms(r.p999()), ratio(r.rate(), hot[0].rate()),
                    ratio(r.rate(), many[i].rate()), ratio(r.rate(), ptHot[i].rate()), ratio(r.rate(), pgbHot[i].rate()),
                    results.meta.getOrDefault(name + "_busy", "–"), results.meta.getOrDefault(name + "_lock_waits", "–"),
                    results.meta.getOrDefault(name + "_lock_waits_max", "–"), nonCreated(r));
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
            int c = Report.CONCURRENCY[i];
            out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s |%n", c, cpu(results.cpuPerRequest("r1-svc-c" + c, many[i]), 0, 3, 2),
                    cpu(results.cpuPerRequest("r2-svc-c" + c, hot[i]), 0, 3, 2), cpu(results.cpuPerRequest("s1-svc-c" + c, charges[i]), 0, 3, 2),
                    cpu(results.cpuPerRequest("r1-pt-c" + c, ptMany[i]), 1, 2), cpu(results.cpuPerRequest("r3-svc-c" + c, replay[i]), 0, 3));
        }
        out.println();

        out.println("#### 7. Replays of finished refunds (same key, same body)");
        out.println();
        out.println("| concurrency | replays/s | p50 | p99 | × pgbench refund replay (same c) | pgbench refund replay tx/s | p50 | p99 | × pgbench refund replay limit | charge replays/s (scenario 2) | × charge replays | answered as replay |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (int i = 0; i < 4; i++) {
            Measurement r = replay[i];
            out.printf(Locale.ROOT, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d of %d |%n", Report.CONCURRENCY[i],
                    rate(r.rate()), ms(r.p50()), ms(r.p99()), ratio(r.rate(), pgbReplay[i].rate()), rate(pgbReplay[i].rate()),
                    ms(pgbReplay[i].p50()), ms(pgbReplay[i].p99()), ratio(r.rate(), pgbReplayLimit),
                    rate(chargeReplays[i].rate()), ratio(r.rate(), chargeReplays[i].rate()), r.count("replayed"), r.requests());
        }
        out.println();
    }
}

package chaos;

import static chaos.Harness.log;
import static chaos.Harness.seconds;

import dev.chargeonce.testing.FreePorts;
import dev.chargeonce.testing.ServiceProcess;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The chaos run of chaos/run.sh: many clients paying against several instances of a target that share one
 * PostgreSQL primary, while instances are killed (-9) and stopped (SIGTERM) and restarted, the database is cut
 * away from instances through TCP proxies this harness owns, and the Stripe stand-in switches faults. Then the
 * faults stop, recovery finishes, and an audit compares what the clients were told, what the rows hold and what
 * Stripe has. Run against chargeonce and against the deliberately naive control (NaiveService).
 *
 * <p>The pieces: {@link Run} (one run against one target: its processes, its phases), {@link Clients} and
 * {@link RefundClients} (the workload), {@link FaultSchedule} and its families of faults ({@link ProcessFaults},
 * {@link DatabaseCuts}, {@link LostCommits}, {@link StripeFaults}, {@link WebhookFaults}), {@link Audit} with
 * {@link ChargeAudit}, {@link RefundAudit} and {@link EventAudit}, and {@link Report}, the table both runs print.
 * The processes are started by the test suite's launcher ({@link ServiceProcess}), the database cuts made by its
 * TCP proxy (dev.chargeonce.testing.TcpProxy): chaos/run.sh compiles both with these files.
 *
 * <p>Everything runs on 127.0.0.1. Every process it starts is recorded in {@code <work>/children.pids} and
 * killed on exit (and by run.sh's trap, should this JVM itself die).
 */
public final class Chaos {

    private Chaos() {
    }

    /** The options chaos/run.sh passes, by name without the dashes. */
    static final Map<String, String> OPT = new ConcurrentHashMap<>();

    static String opt(String name, String fallback) {
        return OPT.getOrDefault(name, fallback);
    }

    static final PrintStream OUT = System.out;
    static final Set<Process> CHILDREN = ConcurrentHashMap.newKeySet();
    static Path work;
    static Path results;
    /** Set on the way out: no process is started any more (a restart in flight must not outlive the harness). */
    static volatile boolean stopping;

    public static void main(String[] args) throws Exception {
        OPT.putAll(Harness.options(args));
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

        StripeFaults.checkSettings();
        List<Audit> audits = new ArrayList<>();
        Audit real = new Run(Variant.CHARGEONCE, duration, seed).execute();
        audits.add(real);
        Audit naive = null;
        if (!Boolean.parseBoolean(opt("skip-naive", "false"))) {
            naive = new Run(Variant.NAIVE, naiveDuration, seed).execute();
            audits.add(naive);
        }
        String table = Report.sideBySide(audits);
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

    /**
     * A free port below the kernel's ephemeral range, so that an instance can bind it again when it restarts (a port
     * in the ephemeral range may meanwhile be the local end of some outgoing connection): the test suite's own.
     */
    static int freePort() {
        return FreePorts.freePort();
    }

    /**
     * Every process started (instances, stand-ins) is killed on the way out: by the shutdown hook, or from
     * {@code children.pids} by run.sh's trap should this JVM die first. None is started once the way out began.
     */
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
}

package chaos;

import static chaos.Chaos.opt;
import static chaos.Harness.log;
import static chaos.Harness.seconds;
import static chaos.Harness.sleep;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stripe's faults, switched in the stand-in's control plane: latency spikes, creates that keep running after the
 * service gave up on them, edge 502s (nothing executed), 500s before and after charging, connections dropped after
 * charging, 429s. Against chargeonce every one of them also reaches refund creates (POST /v1/refunds goes through
 * StripeSandbox.idempotent like a PaymentIntent create): latency, the plan's slow / edge / fail_before / fail_after /
 * drop steps, and the drop_after and rate_limit counters, to whichever create comes next. The fail_before /
 * fail_after counters count PaymentIntent creates only: see fiveHundreds(). Kills, SIGTERMs, database cuts and
 * webhook faults reach refunds as they reach charges; lost commits take charges only (see LostCommits).
 */
final class StripeFaults implements FaultSchedule.Family {

    /** The longest latency spike the schedule injects (latencySpike): the stand-in runs the request that long. */
    static final int LONGEST_LATENCY_MS = 10_500;
    /** The longest {@code slow:<ms>} plan step the schedule injects (slowStepMillis). */
    static final int LONGEST_SLOW_STEP_MS = 9_000;

    /**
     * chargeonce.stripe.request-max-duration is the service's belief of how long Stripe may still execute a request
     * after it was sent: once it has passed since the key's last send, a list of the key's PaymentIntents is taken
     * as final and the next Stripe attempt may be sent. It MUST exceed the longest the stand-in can execute one
     * request here (the longest latency spike or slow step above, 10.5 s); otherwise the instances are configured to
     * believe a request is over while it still runs, and a second PaymentIntent would be the configuration's fault,
     * not the service's. Raising those faults means raising this setting (Chaos option --request-max-duration) too.
     */
    static void checkSettings() {
        long maxDurationMs = seconds(opt("request-max-duration", "15s")) * 1000;
        long longestInjected = Math.max(LONGEST_LATENCY_MS, LONGEST_SLOW_STEP_MS);
        // One second of margin: on a busy machine the stand-in may start a request's clock late.
        if (maxDurationMs <= longestInjected + 1_000) {
            throw new IllegalStateException("request-max-duration " + maxDurationMs + " ms does not exceed the longest"
                    + " request the stand-in executes in this run (" + longestInjected + " ms) by a second");
        }
        log("instances: lease " + opt("lease", "10s") + ", Stripe connect/read timeout " + opt("stripe-connect-timeout", "1s")
                + "/" + opt("stripe-read-timeout", "2s") + ", request-max-duration " + maxDurationMs + " ms (longest injected "
                + longestInjected + " ms), lookup-skew " + opt("lookup-skew", "10s") + "; webhooks: secrets " + Keys.WEBHOOK_SECRETS
                + ", catch-up every " + opt("catch-up-interval", "5s") + " (overlap " + opt("catch-up-overlap", "10s")
                + "), 3-D Secure expiry " + opt("requires-action-expiry", "20s") + ", pending re-checks "
                + opt("pending-recheck", "2s,5s") + ", sync worker every " + opt("sync-interval", "2s"));
    }

    private final Run run;
    /** The latest spike: its end resets the latency only if no later spike started meanwhile. */
    private final AtomicLong latencyGeneration = new AtomicLong();

    StripeFaults(Run run) {
        this.run = run;
    }

    @Override
    public Map<String, Integer> kinds() {
        Map<String, Integer> kinds = new LinkedHashMap<>();
        kinds.put("stripe_latency_spike", 3);
        kinds.put("stripe_keeps_running", 3);
        kinds.put("stripe_edge_after_slow", 2);
        kinds.put("stripe_edge", 2);
        kinds.put("stripe_500_before_charging", 2);
        kinds.put("stripe_500_after_charging", 2);
        kinds.put("stripe_drop_after_charging", 2);
        kinds.put("stripe_429", 2);
        return kinds;
    }

    @Override
    public boolean inject(String kind, SplittableRandom r) {
        switch (kind) {
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
            default -> throw new IllegalArgumentException("unknown fault " + kind);
        }
        return true;
    }

    static long slowStepMillis(SplittableRandom r) {
        return 3_000 + r.nextInt(LONGEST_SLOW_STEP_MS - 3_000 + 1);
    }

    /** A script for the next creates; it replaces what is left of an earlier one (the stand-in keeps one plan). */
    private void plan(String kind, List<String> steps) {
        if (run.stripe.faults("plan=" + String.join(",", steps))) {
            run.faults.note(kind, "plan " + String.join(",", steps));
        }
    }

    /**
     * Stripe 500s before or after executing. The stand-in's counters {@code fail_before} / {@code fail_after} count
     * PaymentIntent creates only (StripeSandbox.execute consumes them; SandboxRefunds.create looks at the plan's
     * step only), so against chargeonce half of these faults are a plan of as many {@code fail_before} /
     * {@code fail_after} steps instead: the next creates take them whichever they are, refunds included (a plan
     * replaces what is left of an earlier one, as every plan does).
     */
    private void fiveHundreds(String kind, String step, int n, SplittableRandom r) {
        if (run.variant == Variant.CHARGEONCE && r.nextBoolean()) {
            List<String> steps = Collections.nCopies(n, step);
            if (run.stripe.faults("plan=" + String.join(",", steps))) {
                run.faults.note(kind, "plan " + String.join(",", steps) + " (the next creates, refunds included)");
            }
        } else if (run.stripe.faults(step + "=" + n)) {
            run.faults.note(kind, "next " + n + " PaymentIntent creates (counter)");
        }
    }

    private void counter(String kind, String counter, int n) {
        if (run.stripe.faults(counter + "=" + n)) {
            run.faults.note(kind, "next " + n + " creates");
        }
    }

    private void latencySpike(SplittableRandom r) {
        // Mostly 0.3-5.3 s; one in ten 8.5-10.5 s, longer than a whole create call (9.7 s) and than the lease.
        long latency = r.nextInt(100) < 10 ? LONGEST_LATENCY_MS - 2_000 + r.nextInt(2_001) : 300 + r.nextInt(5_000);
        long span = 1_000 + r.nextInt(5_000);
        long generation = latencyGeneration.incrementAndGet();
        if (!run.stripe.faults("latency_ms=" + latency)) {
            return;
        }
        run.faults.note("stripe_latency_spike", latency + " ms for " + span + " ms");
        run.background.submit(() -> {
            sleep(span);
            if (latencyGeneration.get() == generation) {
                run.stripe.faults("latency_ms=0");
            }
        });
    }
}

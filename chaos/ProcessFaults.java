package chaos;

import static chaos.Chaos.results;
import static chaos.Chaos.stopping;
import static chaos.Harness.sleep;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Crashes and restarts: an instance killed with SIGKILL (an OOM kill, a node lost) or stopped with SIGTERM (a
 * rollout, a scale-down), and started again 0.3-3.3 s later on the same ports, in the background while the chaos
 * goes on. Only an instance that is up and not already being stopped or started is taken.
 */
final class ProcessFaults implements FaultSchedule.Family {

    private final Run run;

    ProcessFaults(Run run) {
        this.run = run;
    }

    @Override
    public Map<String, Integer> kinds() {
        Map<String, Integer> kinds = new LinkedHashMap<>();
        kinds.put("kill_9", 4);
        kinds.put("sigterm", 2);
        return kinds;
    }

    @Override
    public boolean inject(String kind, SplittableRandom r) {
        return killAndRestart(r, kind.equals("kill_9"));
    }

    private boolean killAndRestart(SplittableRandom r, boolean kill9) {
        List<Instance> candidates = run.instances.stream().filter(i -> !i.busy && i.alive()).toList();
        if (candidates.isEmpty()) {
            return false;
        }
        Instance victim = candidates.get(r.nextInt(candidates.size()));
        victim.busy = true;
        long down = 300 + r.nextInt(3_000);
        run.faults.note(kill9 ? "kill_9" : "sigterm", victim.name() + ", restart after " + down + " ms");
        run.background.submit(() -> {
            try {
                if (kill9) {
                    if (!victim.kill9()) {
                        run.switchFailed("kill -9 of " + victim.name() + ": still running 10 s later");
                    }
                } else {
                    String stopped = victim.terminate();
                    if (stopped.equals("killed")) {
                        run.faults.finding("sigterm_needed_kill_9", victim.name() + " did not stop within 15 s of SIGTERM");
                    } else if (stopped.equals("failed")) {
                        run.switchFailed("SIGTERM of " + victim.name() + ": still running after SIGTERM and kill -9");
                    }
                }
                sleep(down);
                long restart = System.currentTimeMillis();
                // As long as a first start may take (90 s): a restart on a loaded machine takes 20-30 s, and one cut
                // from its database while it starts exits and is started again.
                if (victim.start(Duration.ofSeconds(90))) {
                    run.faults.event(victim.name() + " ready again, " + (System.currentTimeMillis() - restart) + " ms after its restart");
                } else if (!stopping) {
                    run.switchFailed("restart of " + victim.name() + ": not ready within 90 s (see its log in "
                            + results.resolve("logs") + ")");
                }
            } catch (RuntimeException e) {
                run.switchFailed("kill/restart of " + victim.name() + ": " + e);
            } finally {
                victim.busy = false;
            }
        });
        return true;
    }
}

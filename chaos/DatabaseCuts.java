package chaos;

import static chaos.Harness.sleep;

import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Database outages as the instances see them: the TCP proxies between one instance (or, one time in three, every
 * instance) and PostgreSQL drop every connection and refuse new ones for 0.3-5 s (the replica's too, half of the
 * times), then let traffic through again. PostgreSQL itself keeps running: what was committed stays committed.
 */
final class DatabaseCuts implements FaultSchedule.Family {

    private final Run run;

    DatabaseCuts(Run run) {
        this.run = run;
    }

    @Override
    public Map<String, Integer> kinds() {
        return Map.of("db_cut", 4);
    }

    @Override
    public boolean inject(String kind, SplittableRandom r) {
        cutDatabase(r);
        return true;
    }

    private void cutDatabase(SplittableRandom r) {
        boolean all = r.nextInt(100) < 30;
        List<Instance> targets = all ? run.instances : List.of(run.anyInstance(r));
        long outage = 300 + r.nextInt(4_700);
        run.faults.note("db_cut", (all ? "all run.instances" : targets.get(0).name()) + " for " + outage + " ms");
        for (Instance i : targets) {
            i.primaryProxy.cut();
            if (i.replicaProxy != null && r.nextBoolean()) {
                i.replicaProxy.cut();
            }
        }
        run.background.submit(() -> {
            sleep(outage);
            for (Instance i : targets) {
                i.primaryProxy.restore();
                if (i.replicaProxy != null) {
                    i.replicaProxy.restore();
                }
            }
        });
    }
}

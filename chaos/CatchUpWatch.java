package chaos;

import static chaos.Chaos.results;
import static chaos.Harness.sleep;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * How the service's event catch-up fared through a run: its place's lag behind now (the gauge
 * {@code chargeonce_webhooks_catchup_lag_seconds}, sampled on every instance every 2 s from the chaos to the audit,
 * the most counted from the first time it was within a minute of now, every sample in
 * {@code <target>-catch-up-lag.csv}; bounded means it kept up), and how many passes stopped on their page budget (read from the instances' logs, which
 * survive the kills): at least one means the window held more events than one pass reads, the case a catch-up with
 * a cap and no place of its own never finishes. {@code --require-catch-up-overflow} makes a run without one fail: it
 * did not test that case.
 */
final class CatchUpWatch {

    private static final String LAG = "chargeonce_webhooks_catchup_lag_seconds";
    private static final String BUDGET_STOP = "event catch-up pass stopped (PAGE_BUDGET)";

    private final List<Instance> instances;
    private volatile boolean watching = true;
    private volatile double maxLagSeconds = -1;
    private volatile double lastLagSeconds = -1;
    private volatile boolean caughtUpOnce;
    private static final double CAUGHT_UP_SECONDS = 60;
    /** Every sample, {@code <epoch second>,<lag>}: written beside the report. */
    private final List<String> samples = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
    private Thread sampler;

    CatchUpWatch(List<Instance> instances) {
        this.instances = instances;
    }

    void start() {
        sampler = Thread.ofVirtual().name("catch-up-watch").start(() -> {
            while (watching) {
                double lag = -1;
                for (Instance instance : instances) {
                    lag = Math.max(lag, lagOf(instance));
                }
                if (lag >= 0) {
                    lastLagSeconds = lag;
                    samples.add(System.currentTimeMillis() / 1000 + "," + lag);
                    // Before its first pass the place is the first window's start (an hour ago): the lag counts from
                    // the first time the catch-up was near now.
                    caughtUpOnce |= lag < CAUGHT_UP_SECONDS;
                    if (caughtUpOnce) {
                        maxLagSeconds = Math.max(maxLagSeconds, lag);
                    }
                }
                sleep(2_000);
            }
        });
    }

    void stop(Variant variant) throws InterruptedException, IOException {
        watching = false;
        if (sampler != null) {
            sampler.join();
        }
        synchronized (samples) {
            Files.writeString(results.resolve(variant.database + "-catch-up-lag.csv"), "epoch_second,lag_seconds\n"
                    + String.join("\n", samples) + "\n");
        }
    }

    double maxLagSeconds() {
        return maxLagSeconds;
    }

    double lastLagSeconds() {
        return lastLagSeconds;
    }

    /** Passes that stopped on their page budget, over every start of every instance of this target. */
    long budgetStops(Variant variant) throws IOException {
        long stops = 0;
        try (Stream<Path> logs = Files.list(results.resolve("logs"))) {
            for (Path log : logs.filter(p -> p.getFileName().toString().startsWith(variant.database + "-")).toList()) {
                try (Stream<String> lines = Files.lines(log)) {
                    stops += lines.filter(line -> line.contains(BUDGET_STOP)).count();
                }
            }
        }
        return stops;
    }

    /** The instance's gauge; -1 when it is down, has not run a pass yet, or runs none. */
    private static double lagOf(Instance instance) {
        try {
            String metrics = Http.call("GET", URI.create("http://127.0.0.1:" + instance.managementPort + "/q/metrics"));
            return metrics.lines().filter(line -> line.startsWith(LAG + " ") || line.startsWith(LAG + "{"))
                    .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
                    .findFirst().orElse(-1);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}

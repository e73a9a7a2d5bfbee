package bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * What a run of bench/run.sh left in its results directory, read back: meta.properties, each wrk run's JSON line,
 * each pgbench run's output and per-transaction logs, and the CPU each process used over a run (its .cpu file).
 */
final class Results {
    final Path dir;
    final Map<String, String> meta = new LinkedHashMap<>();

    Results(Path dir) throws IOException {
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

    Measurement wrk(String name) {
        Path p = dir.resolve(name + ".json");
        try {
            if (!Files.exists(p)) {
                return Measurement.MISSING;
            }
            String json = Files.readAllLines(p).stream().filter(l -> l.startsWith("{")).reduce((a, b) -> b).orElse(null);
            if (json == null) {
                return Measurement.MISSING;
            }
            Map<String, Long> counts = new LinkedHashMap<>();
            Matcher m = Pattern.compile("\"(\\w+)\":(-?[0-9.]+)").matcher(json);
            Map<String, Double> v = new LinkedHashMap<>();
            while (m.find()) {
                v.put(m.group(1), Double.parseDouble(m.group(2)));
                counts.put(m.group(1), (long) Double.parseDouble(m.group(2)));
            }
            double seconds = v.get("duration_us") / 1e6;
            return new Measurement(v.get("requests") / seconds, v.get("p50"), v.get("p99"), v.get("p999"), v.get("requests").longValue(), counts);
        } catch (IOException | RuntimeException e) {
            return Measurement.MISSING;
        }
    }

    Measurement pgbench(String name) {
        Path out = dir.resolve(name + ".txt");
        try {
            if (!Files.exists(out)) {
                return Measurement.MISSING;
            }
            Matcher tps = Pattern.compile("tps = ([0-9.]+) \\(without initial connection time\\)").matcher(Files.readString(out));
            if (!tps.find()) {
                return Measurement.MISSING;
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
            return new Measurement(Double.parseDouble(tps.group(1)), pct(sorted, 50), pct(sorted, 99), pct(sorted, 99.9),
                    sorted.length, Map.of());
        } catch (IOException | RuntimeException e) {
            return Measurement.MISSING;
        }
    }

    /** CPU ms per request of a wrk run: {service, pass-through, Stripe stand-in, PostgreSQL, versus service}, or null. */
    double[] cpuPerRequest(String name, Measurement run) {
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

    /** A floor run's CPU per request with the floor's JVM first: {floor, pass-through, stand-in, PostgreSQL}, or null. */
    double[] floorCpu(String name, Measurement run) {
        double[] c = cpuPerRequest(name, run);
        return c == null || c.length < 6 ? null : new double[]{c[5], c[1], c[2], c[3]};
    }

    /** The p-th percentile of sorted latencies (the nearest rank), NaN of none. */
    static double pct(long[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }
}

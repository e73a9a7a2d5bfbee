package bench;

import java.util.Map;

/** One wrk run (latencies in microseconds) or one pgbench run. */
record Measurement(double rate, double p50, double p99, double p999, long requests, Map<String, Long> counts) {
    static final Measurement MISSING = new Measurement(Double.NaN, Double.NaN, Double.NaN, Double.NaN, 0, Map.of());

    boolean present() {
        return !Double.isNaN(rate);
    }

    long count(String k) {
        return counts.getOrDefault(k, 0L);
    }

    long errors() {
        return count("errors_connect") + count("errors_read") + count("errors_write") + count("errors_timeout");
    }
}

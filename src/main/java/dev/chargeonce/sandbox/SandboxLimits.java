package dev.chargeonce.sandbox;

import static dev.chargeonce.sandbox.SandboxJson.quote;

import dev.chargeonce.sandbox.SandboxHttp.Response;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Stripe's rate limits, a switch of the sandbox (off unless configured): per endpoint (named by
 * {@link SandboxRoutes#endpoint}) at most N requests admitted in any one-second window, optionally a global rate over
 * every API request, and optionally a limit on the requests in progress at once. A request beyond a limit answers as
 * Stripe does: {@code 429}, code {@code rate_limit}, header {@code Stripe-Rate-Limited-Reason} ({@code endpoint-rate},
 * {@code global-rate}, {@code global-concurrency}); it is not executed, not stored for its idempotency key, and does
 * not use up the window (only admitted requests count, as at Stripe).
 *
 * <p>The window slides over the admitted arrival times and is strict: with a limit of 25, the 26th request less than
 * 1000 ms after the first of the 25 before it is refused. While on, every admitted arrival is kept (8 bytes each, since
 * the last reset), so that what the sandbox admitted can be measured exactly afterwards: {@code max_in_any_second}
 * is the largest number of admitted requests in any one-second window, per endpoint and over all, and
 * {@code first_to_last_ms} the time from the first admitted request to the last (the rate a flow was admitted at).
 *
 * <p>Control plane: {@code POST /_sandbox/limits?default=&global=&concurrency=&<endpoint>=} sets the whole
 * configuration and switches it on (0 or absent: no limit; {@code default} applies to every endpoint not named),
 * {@code POST /_sandbox/limits?off=1} switches it off, {@code GET /_sandbox/limits} answers the configuration and the
 * records, {@code POST /_sandbox/limits/clear} clears the records (the configuration kept). A reset clears the records and returns to the configuration the sandbox started with; the fault switches
 * do not touch it.
 */
final class SandboxLimits {

    static final long ONE_SECOND = 1_000_000_000L;
    static final String ENDPOINT_RATE = "endpoint-rate";
    static final String GLOBAL_RATE = "global-rate";
    static final String GLOBAL_CONCURRENCY = "global-concurrency";

    /** Admitted arrival times (nanoTime), in order: appended under the limits' lock with the time read there. */
    static final class Arrivals {
        private long[] times = new long[64];
        private int size;

        void add(long nanos) {
            if (size == times.length) {
                times = Arrays.copyOf(times, size * 2);
            }
            times[size++] = nanos;
        }

        int size() {
            return size;
        }

        /** {@code limit} admitted already within the second before {@code now}: one more would exceed it. */
        boolean full(int limit, long now) {
            return size >= limit && now - times[size - limit] < ONE_SECOND;
        }

        /**
         * Milliseconds from the first arrival to the last (0 for fewer than two): with {@link #size} the rate a
         * flow was admitted at, measured where Stripe measures it.
         */
        long firstToLastMillis() {
            return size < 2 ? 0 : (times[size - 1] - times[0]) / 1_000_000L;
        }

        /** The largest number of arrivals within any one-second window ({@code [t, t + 1 s)}), exactly. */
        int maxInAnySecond() {
            int max = 0;
            for (int first = 0, last = 0; last < size; last++) {
                while (times[last] - times[first] >= ONE_SECOND) {
                    first++;
                }
                max = Math.max(max, last - first + 1);
            }
            return max;
        }
    }

    private final LongSupplier clock;
    /** Read without the lock: a sandbox without limits (the default) adds no lock to a request. */
    private volatile boolean on;
    private int defaultLimit;
    private int globalLimit;
    private int concurrencyLimit;
    private Map<String, Integer> endpointLimits = Map.of();
    /** What the sandbox started with ({@code sandbox.limits}): a reset returns to it. */
    private Map<String, String> startup = Map.of("off", "1");

    private final Map<String, Arrivals> admitted = new TreeMap<>();
    private final Arrivals all = new Arrivals();
    /** Per endpoint, per reason. */
    private final Map<String, Map<String, Long>> refused = new TreeMap<>();
    /** Admitted requests still being answered; not reset (they still run). */
    private int inFlight;
    private int maxInFlight;

    SandboxLimits(LongSupplier clock) {
        this.clock = clock;
    }

    /** The answer to one API request for {@code endpoint}: a refusal, or what {@code handler} answers. */
    Response apply(String endpoint, Supplier<Response> handler) {
        if (!on) {
            return handler.get();
        }
        String reason = admit(endpoint);
        if (reason != null) {
            return new Response(429, SandboxJson.error("invalid_request_error", "rate_limit",
                    "Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.", null),
                    Map.of("Stripe-Rate-Limited-Reason", reason));
        }
        try {
            return handler.get();
        } finally {
            finished();
        }
    }

    /** Null: admitted (and recorded); otherwise why it is refused. */
    synchronized String admit(String endpoint) {
        long now = clock.getAsLong();
        Arrivals mine = admitted.computeIfAbsent(endpoint, e -> new Arrivals());
        int limit = limitOf(endpoint);
        String reason = !on ? null
                : concurrencyLimit > 0 && inFlight >= concurrencyLimit ? GLOBAL_CONCURRENCY
                : globalLimit > 0 && all.full(globalLimit, now) ? GLOBAL_RATE
                : limit > 0 && mine.full(limit, now) ? ENDPOINT_RATE
                : null;
        if (reason != null) {
            refused.computeIfAbsent(endpoint, e -> new TreeMap<>()).merge(reason, 1L, Long::sum);
            return reason;
        }
        if (on) {
            mine.add(now);
            all.add(now);
        }
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        return null;
    }

    synchronized void finished() {
        inFlight--;
    }

    private int limitOf(String endpoint) {
        return endpointLimits.getOrDefault(endpoint, defaultLimit);
    }

    /** The start-up configuration ({@code default=25,global=25}); a reset returns to it. */
    synchronized void configureAtStart(String spec) {
        Map<String, String> settings = new LinkedHashMap<>();
        for (String pair : spec.split("[,&]")) {
            if (!pair.isBlank()) {
                int eq = pair.indexOf('=');
                settings.put(pair.substring(0, eq < 0 ? pair.length() : eq).trim(), eq < 0 ? "" : pair.substring(eq + 1).trim());
            }
        }
        configure(settings);
        startup = Map.copyOf(settings);
    }

    /**
     * {@code POST /_sandbox/limits}: the whole configuration (absent or 0: no limit) and on, or {@code off=1}.
     * An unknown endpoint name or a negative limit is refused (IllegalArgumentException), the configuration unchanged.
     */
    synchronized String configure(Map<String, String> query) {
        if (query.containsKey("off")) {
            on = false;
            return json();
        }
        Map<String, Integer> named = new TreeMap<>();
        int[] general = new int[3];
        query.forEach((name, value) -> {
            int limit = Integer.parseInt(value);
            if (limit < 0) {
                throw new IllegalArgumentException("a limit is 0 (none) or more: " + name + "=" + value);
            }
            switch (name) {
                case "default" -> general[0] = limit;
                case "global" -> general[1] = limit;
                case "concurrency" -> general[2] = limit;
                default -> {
                    if (!SandboxRoutes.ENDPOINTS.contains(name)) {
                        throw new IllegalArgumentException("no endpoint " + name + "; the sandbox's: " + SandboxRoutes.ENDPOINTS);
                    }
                    named.put(name, limit);
                }
            }
        });
        defaultLimit = general[0];
        globalLimit = general[1];
        concurrencyLimit = general[2];
        endpointLimits = named;
        on = true;
        return json();
    }

    /** Clears the records and returns to the start-up configuration. */
    synchronized void reset() {
        clearRecords();
        configure(startup);
    }

    /**
     * {@code POST /_sandbox/limits/clear}: what was admitted and refused is forgotten, the configuration kept: a test
     * measures one phase of a run apart from the phase before.
     */
    synchronized String clearRecords() {
        admitted.clear();
        refused.clear();
        all.size = 0;
        maxInFlight = inFlight;
        return json();
    }

    boolean on() {
        return on;
    }

    /** {@code GET /_sandbox/limits}: the configuration, and per endpoint what was admitted and refused. */
    synchronized String json() {
        StringBuilder out = new StringBuilder("{\"on\":").append(on)
                .append(",\"default\":").append(defaultLimit).append(",\"global\":").append(globalLimit)
                .append(",\"concurrency\":").append(concurrencyLimit).append(",\"limits\":{");
        String sep = "";
        for (var limit : endpointLimits.entrySet()) {
            out.append(sep).append(quote(limit.getKey())).append(':').append(limit.getValue());
            sep = ",";
        }
        Map<String, Long> refusedAll = new TreeMap<>();
        refused.values().forEach(reasons -> reasons.forEach((r, n) -> refusedAll.merge(r, n, Long::sum)));
        out.append("},\"in_flight\":").append(inFlight).append(",\"max_in_flight\":").append(maxInFlight)
                .append(",\"all\":");
        record(out, globalLimit, all, refusedAll);
        out.append(",\"endpoints\":{");
        sep = "";
        for (var endpoint : admitted.entrySet()) {
            out.append(sep).append(quote(endpoint.getKey())).append(':');
            record(out, limitOf(endpoint.getKey()), endpoint.getValue(), refused.getOrDefault(endpoint.getKey(), Map.of()));
            sep = ",";
        }
        return out.append("}}").toString();
    }

    private static void record(StringBuilder out, int limit, Arrivals arrivals, Map<String, Long> refusedBy) {
        out.append("{\"limit\":").append(limit).append(",\"admitted\":").append(arrivals.size()).append(",\"refused\":{");
        String sep = "";
        for (var reason : refusedBy.entrySet()) {
            out.append(sep).append(quote(reason.getKey())).append(':').append(reason.getValue());
            sep = ",";
        }
        out.append("},\"max_in_any_second\":").append(arrivals.maxInAnySecond())
                .append(",\"first_to_last_ms\":").append(arrivals.firstToLastMillis()).append('}');
    }
}

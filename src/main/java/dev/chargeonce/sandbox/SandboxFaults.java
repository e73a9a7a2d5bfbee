package dev.chargeonce.sandbox;

import dev.chargeonce.sandbox.SandboxHttp.Response;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The sandbox's fault switches: the latency of every create, counters that fault the next N requests, and the plan
 * that scripts the next create requests one by one ({@code POST /_sandbox/faults?...}, see {@link StripeSandbox}).
 * A counter is used up one request at a time ({@code consume...}); the plan's steps are taken before any counter.
 */
final class SandboxFaults {

    /** One scripted create request (see {@code plan} in {@link StripeSandbox}). */
    record Step(String kind, long millis) {
        static Step parse(String text) {
            String[] parts = text.trim().split(":", 2);
            String kind = parts[0];
            if (!List.of("ok", "slow", "hold", "edge", "fail_before", "fail_after", "drop", "rate_limit").contains(kind)) {
                throw new IllegalArgumentException("unknown plan step " + text);
            }
            return new Step(kind, parts.length > 1 ? Long.parseLong(parts[1]) : 0);
        }
    }

    private final AtomicInteger failBefore = new AtomicInteger();
    private final AtomicInteger failAfter = new AtomicInteger();
    private final AtomicInteger dropAfter = new AtomicInteger();
    private final AtomicInteger rateLimit = new AtomicInteger();
    private final AtomicInteger listEmptyHasMore = new AtomicInteger();
    /** The next N list requests (PaymentIntents, refunds) answer 429, as Stripe's read rate limit does. */
    private final AtomicInteger listRateLimit = new AtomicInteger();
    private volatile long latencyMillis;
    /** How long every list request takes (a list of 100 objects on a busy account is not instant). */
    private volatile long listLatencyMillis;
    /** How long every events list request takes (a catch-up pass that is slow at Stripe). */
    private volatile long eventsListLatencyMillis;
    private final ConcurrentLinkedQueue<Step> plan = new ConcurrentLinkedQueue<>();
    /** What the creates on a {@code hold} step wait for: counted down (and replaced) by {@code release=1}. */
    private volatile CountDownLatch release = new CountDownLatch(1);

    // ---- switches ----------------------------------------------------------------------------------------------

    void setLatencyMillis(long millis) {
        this.latencyMillis = millis;
    }

    long latencyMillis() {
        return latencyMillis;
    }

    long listLatencyMillis() {
        return listLatencyMillis;
    }

    long eventsListLatencyMillis() {
        return eventsListLatencyMillis;
    }

    void failNextBeforeCharging(int count) {
        failBefore.set(count);
    }

    void failNextAfterCharging(int count) {
        failAfter.set(count);
    }

    void dropNextResponses(int count) {
        dropAfter.set(count);
    }

    void rateLimitNext(int count) {
        rateLimit.set(count);
    }

    /** Adds steps to the plan. */
    void plan(String... steps) {
        for (String step : steps) {
            plan.add(Step.parse(step));
        }
    }

    /** Steps of the plan not used yet. */
    int planLeft() {
        return plan.size();
    }

    /**
     * {@code POST /_sandbox/faults}: sets the switches the query names ({@code latency_ms}, {@code fail_before},
     * {@code fail_after}, {@code drop_after}, {@code rate_limit}, {@code list_empty_has_more}, {@code list_rate_limit},
     * {@code list_latency_ms}, {@code events_list_latency_ms}; {@code plan} replaces what is left of the plan) and answers them as they are now.
     */
    String configure(Map<String, String> query) {
        if (query.containsKey("latency_ms")) latencyMillis = Long.parseLong(query.get("latency_ms"));
        if (query.containsKey("fail_before")) failBefore.set(Integer.parseInt(query.get("fail_before")));
        if (query.containsKey("fail_after")) failAfter.set(Integer.parseInt(query.get("fail_after")));
        if (query.containsKey("drop_after")) dropAfter.set(Integer.parseInt(query.get("drop_after")));
        if (query.containsKey("rate_limit")) rateLimit.set(Integer.parseInt(query.get("rate_limit")));
        if (query.containsKey("list_empty_has_more")) listEmptyHasMore.set(Integer.parseInt(query.get("list_empty_has_more")));
        if (query.containsKey("list_rate_limit")) listRateLimit.set(Integer.parseInt(query.get("list_rate_limit")));
        if (query.containsKey("list_latency_ms")) listLatencyMillis = Long.parseLong(query.get("list_latency_ms"));
        if (query.containsKey("events_list_latency_ms")) eventsListLatencyMillis = Long.parseLong(query.get("events_list_latency_ms"));
        if (query.containsKey("release")) {
            releaseHeld();
        }
        if (query.containsKey("plan")) {
            plan.clear();
            if (!query.get("plan").isBlank()) {
                plan(query.get("plan").split(","));
            }
        }
        return "{\"latency_ms\":" + latencyMillis + ",\"fail_before\":" + failBefore.get()
                + ",\"fail_after\":" + failAfter.get() + ",\"drop_after\":" + dropAfter.get()
                + ",\"rate_limit\":" + rateLimit.get() + ",\"plan_left\":" + plan.size() + "}";
    }

    /** Lets every create on a {@code hold} step execute now; a later {@code hold} waits for the next release. */
    void releaseHeld() {
        CountDownLatch released = release;
        release = new CountDownLatch(1);
        released.countDown();
    }

    /** A {@code hold} step: waits for {@link #releaseHeld} or {@code maxMillis}, whichever comes first. */
    void awaitRelease(long maxMillis) {
        try {
            release.await(maxMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Every switch off, the plan empty, held creates let go. */
    void clear() {
        failBefore.set(0);
        failAfter.set(0);
        dropAfter.set(0);
        rateLimit.set(0);
        listEmptyHasMore.set(0);
        listRateLimit.set(0);
        listLatencyMillis = 0;
        eventsListLatencyMillis = 0;
        plan.clear();
        latencyMillis = 0;
        releaseHeld();
    }

    // ---- what the next request meets ----------------------------------------------------------------------------

    /** The plan's next step, taken; null when the plan is empty. */
    Step nextStep() {
        return plan.poll();
    }

    boolean consumeRateLimit() {
        return consume(rateLimit);
    }

    boolean consumeDrop() {
        return consume(dropAfter);
    }

    /** The 500 counters, for refund creates as for PaymentIntent creates. */
    boolean consumeFailBefore() {
        return consume(failBefore);
    }

    boolean consumeFailAfter() {
        return consume(failAfter);
    }

    boolean consumeListEmptyHasMore() {
        return consume(listEmptyHasMore);
    }

    /** A list request refused for the rate limit (429, not stored for anything): consumes one from the switch. */
    Response listRateLimited() {
        return consume(listRateLimit) ? new Response(429, SandboxJson.error("invalid_request_error", "rate_limit",
                "Too many requests hit the API too quickly.", null), Map.of()) : null;
    }

    private static boolean consume(AtomicInteger counter) {
        return counter.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
    }

    static void sleep(long millis) {
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package chaos;

import static chaos.Chaos.opt;
import static chaos.Chaos.results;
import static chaos.Harness.log;

import dev.chargeonce.testing.ServiceProcess;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The Stripe stand-in (dev.chargeonce.sandbox.StripeSandbox) as a process of its own, started by the test suite's
 * launcher ({@link ServiceProcess}), and its control plane: the faults and webhook deliveries the schedule switches,
 * 3-D Secure that customers complete, and what the audit reads (ledger, refunds, events).
 */
final class StripeStandIn {
    final int port = Chaos.freePort();
    /** Where a control-plane call that failed is reported: a fault that was not switched fails the run. */
    final java.util.function.Consumer<String> failed;
    private final ServiceProcess process;

    StripeStandIn(java.util.function.Consumer<String> failed) {
        this.failed = failed;
        this.process = ServiceProcess.builder("stripe-" + port).port(port).jvmOptions(List.of("-Xmx1g"))
                .mainClass(opt("sandbox-jar", ""), "dev.chargeonce.sandbox.StripeSandbox", Integer.toString(port), "0", limits())
                .readyPath("/_sandbox/stats").logDirectory(results.resolve("logs")).onLaunch(Chaos::recordChild).build();
    }

    /** Stripe's rate limits, when the run asks for them (--stripe-rate-limit): creates and refunds, per second. */
    static int rateLimit() {
        return Integer.parseInt(opt("stripe-rate-limit", "0"));
    }

    private static String limits() {
        int limit = rateLimit();
        return limit <= 0 ? "" : "payment_intents.create=" + limit + ",refunds.create=" + limit;
    }

    void start() {
        try {
            process.startProcess(Duration.ofSeconds(30));
        } catch (IllegalStateException e) {
            throw new IllegalStateException("Stripe stand-in did not start", e);
        }
    }

    String base() {
        return "http://127.0.0.1:" + port;
    }

    /** Switches the stand-in's faults; a failure (an HTTP error, no answer) is reported and returns false. */
    boolean faults(String query) {
        try {
            Http.call("POST", URI.create(base() + "/_sandbox/faults?" + query));
            return true;
        } catch (IOException | RuntimeException e) {
            log("sandbox faults " + query + " failed: " + e.getMessage());
            failed.accept("Stripe stand-in control plane: faults?" + query + " failed: " + e.getMessage());
            return false;
        }
    }

    String get(String path) throws IOException {
        return Http.call("GET", URI.create(base() + path));
    }

    /** Switches the stand-in's webhook delivery (url, secret, duplicates, reorder, delay_ms, lose); reported like faults(). */
    boolean webhooks(String query) {
        try {
            Http.call("POST", URI.create(base() + "/_sandbox/webhooks?" + query));
            return true;
        } catch (IOException | RuntimeException e) {
            log("sandbox webhooks " + query + " failed: " + e.getMessage());
            failed.accept("Stripe stand-in control plane: webhooks?" + query + " failed: " + e.getMessage());
            return false;
        }
    }

    /** The stand-in's event counts: {@code events} made, {@code delivered} (2xx), {@code failed_deliveries} (tries). */
    Map<?, ?> webhookStats() throws IOException {
        return (Map<?, ?>) Json.parse(Http.call("POST", URI.create(base() + "/_sandbox/webhooks")));
    }

    /** The customer completes (or fails) 3-D Secure in Stripe.js; an IOException when Stripe refuses (too late). */
    void authenticate(String paymentIntentId, String result) throws IOException {
        Http.call("POST", URI.create(base() + "/_sandbox/payment_intents/" + paymentIntentId + "/authenticate?result=" + result));
    }

    /** A Stripe API read, as the service makes it (the stand-in wants a secret key). */
    String api(String pathAndQuery) throws IOException {
        try {
            HttpResponse<String> r = Http.CLIENT.send(HttpRequest.newBuilder(URI.create(base() + pathAndQuery))
                    .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer sk_test_chaos_audit").GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IOException("GET " + pathAndQuery + " -> " + r.statusCode() + " " + r.body());
            }
            return r.body();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    /** The events listed so far: id -> type, oldest first (the stand-in only ever adds events, newest on top). */
    private final Map<String, String> eventsSeen = new LinkedHashMap<>();
    /** The object each listed event names (its data.object.id): a PaymentIntent or a refund. */
    final Map<String, String> eventObjects = new ConcurrentHashMap<>();

    /**
     * Every event the stand-in made (its Events API, page after page, no filter): id -> type. Pages from the
     * newest until an event listed by an earlier call, so the settle phase can ask every 2 s.
     */
    synchronized Map<String, String> events() throws IOException {
        Map<String, String> fresh = new LinkedHashMap<>();
        String after = null;
        paging:
        while (true) {
            Map<?, ?> page = (Map<?, ?>) Json.parse(api("/v1/events?limit=100"
                    + (after == null ? "" : "&starting_after=" + after)));
            List<?> data = (List<?>) page.get("data");
            for (Object o : data) {
                after = (String) ((Map<?, ?>) o).get("id");
                if (eventsSeen.containsKey(after)) {
                    break paging;
                }
                fresh.put(after, (String) ((Map<?, ?>) o).get("type"));
                if (((Map<?, ?>) o).get("data") instanceof Map<?, ?> d && d.get("object") instanceof Map<?, ?> object
                        && object.get("id") instanceof String objectId) {
                    eventObjects.put(after, objectId);
                }
            }
            if (!Boolean.TRUE.equals(page.get("has_more")) || data.isEmpty()) {
                break;
            }
        }
        List<Map.Entry<String, String>> oldestFirst = new ArrayList<>(fresh.entrySet());
        Collections.reverse(oldestFirst);
        oldestFirst.forEach(e -> eventsSeen.put(e.getKey(), e.getValue()));
        return Collections.unmodifiableMap(new LinkedHashMap<>(eventsSeen));
    }

    void stop() {
        process.kill9(Duration.ofSeconds(10));
    }
}

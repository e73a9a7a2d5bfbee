package dev.chargeonce.sandbox;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The sandbox's events, as Stripe keeps and delivers them: every PaymentIntent change becomes an event (listed by
 * {@code GET /v1/events}, newest first) and, when an endpoint is configured, is POSTed to it signed like Stripe
 * ({@code Stripe-Signature: t=<seconds>,v1=<HMAC-SHA256 of "t.payload">}), retried on a non-2xx answer or a
 * connection error. JDK only, like the rest of the sandbox.
 *
 * <p>Switches ({@code POST /_sandbox/webhooks?...}): {@code url}, {@code secret}, {@code duplicates=N} (each event
 * delivered N times, concurrently), {@code reorder=true} (each delivery waits a random 0..{@code delay_ms}, so
 * events overtake each other), {@code delay_ms}, {@code lose=true} (events are made and listed, never delivered: an
 * endpoint outage longer than Stripe's retries), {@code api_version} (the version events are rendered in).
 */
public final class SandboxWebhooks implements AutoCloseable {

    /** The API version of stripe-java 33.3.0, the one Stripe renders events in unless the account pins another. */
    public static final String DEFAULT_API_VERSION = "2026-07-29.dahlia";

    /** One event as Stripe stores it. */
    public record Event(String id, String type, long created, String json) {
    }

    private final List<Event> events = new ArrayList<>();
    private final ExecutorService deliveries = Executors.newVirtualThreadPerTaskExecutor();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final SecureRandom random = new SecureRandom();
    private final AtomicLong delivered = new AtomicLong();
    private final AtomicLong failedDeliveries = new AtomicLong();
    private volatile String url;
    private volatile String secret = "whsec_sandbox";
    private volatile int duplicates = 1;
    private volatile boolean reorder;
    private volatile long delayMillis;
    private volatile boolean lose;
    private volatile String apiVersion = DEFAULT_API_VERSION;

    /** Makes the event of a PaymentIntent change ({@code piJson} is the object as it is now) and delivers it. */
    public Event emit(String type, String piJson) {
        String id = "evt_" + randomId(24);
        long created = System.currentTimeMillis() / 1000;
        String json = "{\"id\":\"" + id + "\",\"object\":\"event\",\"api_version\":\"" + apiVersion + "\",\"created\":" + created
                + ",\"data\":{\"object\":" + piJson + "},\"livemode\":false,\"pending_webhooks\":1,"
                + "\"request\":{\"id\":null,\"idempotency_key\":null},\"type\":\"" + type + "\"}";
        Event event = new Event(id, type, created, json);
        synchronized (events) {
            events.add(event);
        }
        String target = url;
        if (target != null && !lose) {
            for (int i = 0; i < duplicates; i++) {
                deliveries.submit(() -> deliver(target, event));
            }
        }
        return event;
    }

    /** Delivers again, now, every event made so far (a replay of what an outage swallowed, for tests). */
    public void redeliverAll() {
        String target = url;
        if (target != null) {
            for (Event event : all()) {
                deliveries.submit(() -> deliver(target, event));
            }
        }
    }

    private void deliver(String target, Event event) {
        if (reorder || delayMillis > 0) {
            sleep(reorder ? (long) (random.nextDouble() * Math.max(1, delayMillis)) : delayMillis);
        }
        // Stripe retries for three days with growing pauses; here, a few seconds.
        long[] pauses = {200, 500, 1_000, 2_000, 4_000};
        for (int attempt = 0; attempt <= pauses.length; attempt++) {
            try {
                long t = System.currentTimeMillis() / 1000;
                HttpResponse<String> answer = http.send(HttpRequest.newBuilder(URI.create(target))
                        .timeout(Duration.ofSeconds(10))
                        .header("Content-Type", "application/json; charset=utf-8")
                        .header("Stripe-Signature", signatureHeader(event.json(), secret, t))
                        .POST(HttpRequest.BodyPublishers.ofString(event.json(), StandardCharsets.UTF_8)).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (answer.statusCode() / 100 == 2) {
                    delivered.incrementAndGet();
                    return;
                }
            } catch (java.io.IOException e) {
                // the endpoint is down: retried below, as Stripe does
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            failedDeliveries.incrementAndGet();
            if (attempt < pauses.length) {
                sleep(pauses[attempt]);
            }
        }
    }

    /** {@code t=<seconds>,v1=<hex HMAC-SHA256 of "t.payload" with the secret>}, as Stripe signs. */
    public static String signatureHeader(String payload, String secret, long timestampSeconds) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            byte[] signature = mac.doFinal((timestampSeconds + "." + payload).getBytes(StandardCharsets.UTF_8));
            return "t=" + timestampSeconds + ",v1=" + HexFormat.of().formatHex(signature);
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is always present", e);
        }
    }

    public void configure(Map<String, String> query) {
        if (query.containsKey("url")) url = query.get("url").isBlank() ? null : query.get("url");
        if (query.containsKey("secret")) secret = query.get("secret");
        if (query.containsKey("duplicates")) duplicates = Math.max(1, Integer.parseInt(query.get("duplicates")));
        if (query.containsKey("reorder")) reorder = Boolean.parseBoolean(query.get("reorder"));
        if (query.containsKey("delay_ms")) delayMillis = Long.parseLong(query.get("delay_ms"));
        if (query.containsKey("lose")) lose = Boolean.parseBoolean(query.get("lose"));
        if (query.containsKey("api_version")) apiVersion = query.get("api_version");
    }

    /** Back to one prompt delivery per event, to whatever endpoint is configured (the endpoint stays). */
    public void resetSwitches() {
        duplicates = 1;
        reorder = false;
        delayMillis = 0;
        lose = false;
        apiVersion = DEFAULT_API_VERSION;
    }

    public void clear() {
        synchronized (events) {
            events.clear();
        }
        resetSwitches();
    }

    public List<Event> all() {
        synchronized (events) {
            return List.copyOf(events);
        }
    }

    public long delivered() {
        return delivered.get();
    }

    public long failedDeliveries() {
        return failedDeliveries.get();
    }

    /**
     * {@code GET /v1/events}: newest first, {@code created[gte]}, {@code created[lte]}, and as at Stripe either
     * {@code type} (one name, or a group with {@code *}) or {@code types[]} (up to 20 exact names, no wildcard):
     * anything else is refused, so that a filter Stripe would refuse fails here too. Null: refused.
     */
    String list(Map<String, String> query) {
        int limit = Math.min(100, Integer.parseInt(query.getOrDefault("limit", "10")));
        long gte = Long.parseLong(query.getOrDefault("created[gte]", "0"));
        long lte = Long.parseLong(query.getOrDefault("created[lte]", Long.toString(Long.MAX_VALUE)));
        List<String> types = new ArrayList<>();
        query.forEach((k, v) -> {
            if (k.startsWith("types[")) {
                types.add(v);
            }
        });
        if ((query.containsKey("type") && !types.isEmpty()) || types.size() > 20 || types.stream().anyMatch(t -> t.contains("*"))) {
            return null;
        }
        if (query.containsKey("type")) {
            types.add(query.get("type"));
        }
        String startingAfter = query.get("starting_after");
        List<Event> newestFirst = new ArrayList<>(all());
        java.util.Collections.reverse(newestFirst);
        StringBuilder page = new StringBuilder();
        int count = 0;
        boolean skipping = startingAfter != null;
        boolean more = false;
        for (Event event : newestFirst) {
            if (skipping) {
                skipping = !event.id().equals(startingAfter);
                continue;
            }
            if (event.created() < gte || event.created() > lte || (!types.isEmpty() && types.stream().noneMatch(t -> matches(t, event.type())))) {
                continue;
            }
            if (count == limit) {
                more = true;
                break;
            }
            page.append(count++ == 0 ? "" : ",").append(event.json());
        }
        return "{\"object\":\"list\",\"url\":\"/v1/events\",\"has_more\":" + more + ",\"data\":[" + page + "]}";
    }

    private static boolean matches(String pattern, String type) {
        return pattern.endsWith(".*") ? type.startsWith(pattern.substring(0, pattern.length() - 1)) : pattern.equals(type);
    }

    String stats() {
        return "{\"events\":" + all().size() + ",\"delivered\":" + delivered.get() + ",\"failed_deliveries\":"
                + failedDeliveries.get() + ",\"url\":" + SandboxJson.quote(url) + ",\"lose\":" + lose + "}";
    }

    private String randomId(int length) {
        String alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        StringBuilder id = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            id.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return id.toString();
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        deliveries.shutdownNow();
    }
}

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
 * The sandbox's events, as Stripe keeps and delivers them: every PaymentIntent and refund change becomes an event
 * (listed by {@code GET /v1/events}, newest first) and, when an endpoint is configured, is POSTed to it signed like
 * Stripe ({@code Stripe-Signature: t=<seconds>,v1=<HMAC-SHA256 of "t.payload">}), retried on a non-2xx answer or a
 * connection error. JDK only, like the rest of the sandbox.
 *
 * <p>Switches ({@code POST /_sandbox/webhooks?...}): {@code url}, {@code secret}, {@code duplicates=N} (each event
 * delivered N times, concurrently), {@code reorder=true} (each delivery waits a random 0..{@code delay_ms}, so
 * events overtake each other), {@code delay_ms}, {@code lose=true} (events are made and listed, never delivered: an
 * endpoint outage longer than Stripe's retries), {@code api_version} (the version events are rendered in: before
 * 2022-11-15, a charge's events list its refunds).
 */
public final class SandboxWebhooks implements AutoCloseable {

    /** The API version of stripe-java 33.3.0, the one Stripe renders events in unless the account pins another. */
    public static final String DEFAULT_API_VERSION = "2026-07-29.dahlia";

    /** One event as Stripe stores it; {@code seq} orders the events of one second as they were made. */
    public record Event(String id, String type, long created, long seq, String json) {
    }

    /** Stripe's order, oldest first: by {@code created}, then as made. */
    private static final java.util.Comparator<Event> OLDEST_FIRST =
            java.util.Comparator.comparingLong(Event::created).thenComparingLong(Event::seq);

    /** Every event, oldest first (the list reads it backwards); an event made with an earlier {@code created} than
     *  the newest one (a backdated one) takes its place by {@code created}, as it would appear at Stripe. */
    private final List<Event> events = new ArrayList<>();
    private final Map<String, Event> byId = new java.util.HashMap<>();
    private long nextSeq;
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

    /** The API request that causes the events made while it is served: {@code Request-Id} and {@code Idempotency-Key}. */
    record CausingRequest(String id, String idempotencyKey) {
    }

    /** The API request served on this thread, if any (the control plane and the bank cause events with none). */
    private static final ThreadLocal<CausingRequest> CAUSE = new ThreadLocal<>();

    /**
     * Runs {@code work} (an API request's handling) so that the events it makes name {@code request} as Stripe's do
     * ({@code request.id}, {@code request.idempotency_key}); events made otherwise name none (both null).
     */
    static <T> T causedBy(CausingRequest request, java.util.function.Supplier<T> work) {
        CAUSE.set(request);
        try {
            return work.get();
        } finally {
            CAUSE.remove();
        }
    }

    /** Makes the event of a PaymentIntent change ({@code piJson} is the object as it is now) and delivers it. */
    public Event emit(String type, String piJson) {
        Event event = store(type, piJson, null, CAUSE.get());
        String target = url;
        if (target != null && !lose) {
            for (int i = 0; i < duplicates; i++) {
                deliveries.submit(() -> deliver(target, event));
            }
        }
        return event;
    }

    /**
     * {@code POST /_sandbox/events?count=&type=&created_from=&created_to=}: events Stripe made while the endpoint was
     * down, listed and never delivered, their {@code created} spread evenly from {@code created_from} to
     * {@code created_to} (epoch seconds, default now), each about a PaymentIntent no charge has (the inbox records
     * them as {@code unknown}). Answers their ids, oldest first.
     */
    String seed(Map<String, String> query) {
        int count = Integer.parseInt(query.getOrDefault("count", "1"));
        String type = query.getOrDefault("type", "payment_intent.succeeded");
        long now = System.currentTimeMillis() / 1000;
        long from = Long.parseLong(query.getOrDefault("created_from", Long.toString(now)));
        long to = Long.parseLong(query.getOrDefault("created_to", Long.toString(now)));
        StringBuilder ids = new StringBuilder();
        for (int i = 0; i < count; i++) {
            long created = count == 1 ? to : from + (to - from) * i / (count - 1);
            String pi = "{\"id\":\"pi_" + randomId(24) + "\",\"object\":\"payment_intent\",\"amount\":100,\"currency\":\"eur\","
                    + "\"status\":\"succeeded\",\"created\":" + created + ",\"livemode\":false,\"metadata\":{}}";
            ids.append(i == 0 ? "" : ",").append(SandboxJson.quote(store(type, pi, created, null).id()));
        }
        return "{\"made\":" + count + ",\"ids\":[" + ids + "]}";
    }

    /**
     * Stores an event made now ({@code backdatedTo} null: on top of the list, as made) or at an earlier second, caused
     * by {@code request} (null: by no API request).
     */
    private Event store(String type, String objectJson, Long backdatedTo, CausingRequest request) {
        String id = "evt_" + randomId(24);
        synchronized (events) {
            long created = backdatedTo != null ? backdatedTo : System.currentTimeMillis() / 1000;
            String json = "{\"id\":\"" + id + "\",\"object\":\"event\",\"api_version\":\"" + apiVersion + "\",\"created\":" + created
                    + ",\"data\":{\"object\":" + objectJson + "},\"livemode\":false,\"pending_webhooks\":1,"
                    + "\"request\":{\"id\":" + SandboxJson.quote(request == null ? null : request.id())
                    + ",\"idempotency_key\":" + SandboxJson.quote(request == null ? null : request.idempotencyKey())
                    + "},\"type\":\"" + type + "\"}";
            Event event = new Event(id, type, created, nextSeq++, json);
            int at = events.size();
            while (at > 0 && OLDEST_FIRST.compare(events.get(at - 1), event) > 0) {
                at--;
            }
            events.add(at, event);
            byId.put(id, event);
            return event;
        }
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

    /**
     * Whether events are rendered in an API version whose Charge lists its refunds (those before 2022-11-15: since
     * then only an expanded charge does, and an event's object never is).
     */
    boolean rendersChargeRefunds() {
        return apiVersion.compareTo("2022-11-15") < 0;
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
            byId.clear();
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
     * {@code GET /v1/events}, as Stripe answers it: newest {@code created} first (of one second, the later made
     * first), {@code limit} (1-100, default 10), {@code created[gte|gt|lte|lt]}, either {@code type} (one name, or a
     * group with {@code *}) or {@code types[]} (up to 20 exact names, no wildcard), and one cursor at most:
     * {@code starting_after} (the page after an event: older ones) or {@code ending_before} (the page before it: the
     * {@code limit} newer events closest to it, still newest first; {@code has_more} says whether newer ones are
     * left). A cursor names an event by id wherever it stands in the whole list, whatever the filters; an id the
     * list does not have (never made, or dropped by a reset) is refused as Stripe refuses it, {@code resource_missing}.
     */
    SandboxHttp.Response list(Map<String, String> query) {
        int limit = Math.max(1, Math.min(100, Integer.parseInt(query.getOrDefault("limit", "10"))));
        long gte = Math.max(Long.parseLong(query.getOrDefault("created[gte]", Long.toString(Long.MIN_VALUE))),
                query.containsKey("created[gt]") ? Long.parseLong(query.get("created[gt]")) + 1 : Long.MIN_VALUE);
        long lte = Math.min(Long.parseLong(query.getOrDefault("created[lte]", Long.toString(Long.MAX_VALUE))),
                query.containsKey("created[lt]") ? Long.parseLong(query.get("created[lt]")) - 1 : Long.MAX_VALUE);
        List<String> types = new ArrayList<>();
        query.forEach((k, v) -> {
            if (k.startsWith("types[")) {
                types.add(v);
            }
        });
        if ((query.containsKey("type") && !types.isEmpty()) || types.size() > 20 || types.stream().anyMatch(t -> t.contains("*"))) {
            return SandboxHttp.Response.json(400, SandboxJson.error("invalid_request_error", "parameter_invalid",
                    "Pass either type (wildcards allowed) or types (up to 20 exact event names), not both.", "types"));
        }
        if (query.containsKey("type")) {
            types.add(query.get("type"));
        }
        String startingAfter = query.get("starting_after");
        String endingBefore = query.get("ending_before");
        if (startingAfter != null && endingBefore != null) {
            return SandboxHttp.Response.json(400, SandboxJson.error("invalid_request_error", "parameter_invalid",
                    "You may only specify one of these parameters: ending_before, starting_after.", "ending_before"));
        }
        String cursor = startingAfter != null ? startingAfter : endingBefore;
        List<Event> page = new ArrayList<>();
        boolean more = false;
        synchronized (events) {
            int at = -1;
            if (cursor != null) {
                Event named = byId.get(cursor);
                if (named == null) {
                    return SandboxHttp.Response.json(400, SandboxJson.error("invalid_request_error", "resource_missing",
                            "No such event: '" + cursor + "'", startingAfter != null ? "starting_after" : "ending_before"));
                }
                at = indexOf(named);
            }
            if (endingBefore != null) {
                // Toward newer events: the closest ones after the cursor, then shown newest first like every page.
                for (int i = at + 1; i < events.size(); i++) {
                    Event event = events.get(i);
                    if (event.created() > lte) {
                        break;
                    }
                    if (event.created() < gte || !ofTypes(types, event)) {
                        continue;
                    }
                    if (page.size() == limit) {
                        more = true;
                        break;
                    }
                    page.add(event);
                }
                java.util.Collections.reverse(page);
            } else {
                for (int i = (startingAfter != null ? at : events.size()) - 1; i >= 0; i--) {
                    Event event = events.get(i);
                    if (event.created() < gte) {
                        break;
                    }
                    if (event.created() > lte || !ofTypes(types, event)) {
                        continue;
                    }
                    if (page.size() == limit) {
                        more = true;
                        break;
                    }
                    page.add(event);
                }
            }
        }
        StringBuilder data = new StringBuilder();
        for (int i = 0; i < page.size(); i++) {
            data.append(i == 0 ? "" : ",").append(page.get(i).json());
        }
        return SandboxHttp.Response.json(200, "{\"object\":\"list\",\"url\":\"/v1/events\",\"has_more\":" + more
                + ",\"data\":[" + data + "]}");
    }

    private static boolean ofTypes(List<String> types, Event event) {
        return types.isEmpty() || types.stream().anyMatch(t -> matches(t, event.type()));
    }

    /** Where an event stands in the list, oldest first (called holding the list's lock). */
    private int indexOf(Event event) {
        int low = 0;
        int high = events.size() - 1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            int order = OLDEST_FIRST.compare(events.get(mid), event);
            if (order < 0) {
                low = mid + 1;
            } else if (order > 0) {
                high = mid - 1;
            } else {
                return mid;
            }
        }
        throw new IllegalStateException("event " + event.id() + " is indexed but not listed");
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

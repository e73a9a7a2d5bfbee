package dev.chargeonce.sandbox;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A stand-in for the slice of Stripe's API that chargeonce uses, with Stripe's idempotency semantics.
 *
 * <p>It speaks plain HTTP/1.1 on a raw socket (JDK only, no framework) so that it can run inside the dev
 * service, inside a test JVM, or as its own process ({@code java -cp target/classes
 * dev.chargeonce.sandbox.StripeSandbox 12111}) and outlive a service that is killed with {@code kill -9}.
 * A raw socket also lets it do what a real network does and a framework would hide: drop a connection
 * after the charge was made, without an answer.
 *
 * <p>Emulated: {@code POST /v1/payment_intents} (create + confirm), {@code GET /v1/payment_intents/{id}},
 * {@code GET /v1/payment_intents} (newest first, {@code created[gte]}, {@code created[lte]}, {@code limit},
 * {@code starting_after}). A test may backdate a create with the sandbox-only header {@code Sandbox-Created}
 * (epoch seconds), to stand for a payment made long ago.
 * Idempotency as Stripe does it: same key and same parameters replay the first answer (even a 500) with
 * {@code Idempotent-Replayed: true}; same key and other parameters answer {@code 400 idempotency_error};
 * a key whose first request is still running answers {@code 409}; 429 answers are not stored.
 *
 * <p>Control plane under {@code /_sandbox}: {@code GET ledger} ({@code ?charge_id=} or {@code ?key=}, the
 * {@code chargeonce_key} metadata), {@code GET stats}, {@code POST reset},
 * {@code POST faults?latency_ms=&fail_before=&fail_after=&drop_after=&rate_limit=&list_empty_has_more=&list_latency_ms=&plan=},
 * {@code POST seed}, {@code POST payment_intents/{id}/backdate?seconds=}
 * (PaymentIntents made behind the service's back: {@code count}, {@code created_from}, {@code created_to},
 * {@code status}, {@code metadata[...]}) and {@code POST payment_intents/{id}/settle?status=} (a pending payment
 * reaches its outcome). The fault counters apply to the next N create requests.
 *
 * <p>{@code plan} scripts the next create requests one by one, before any counter: a comma-separated list of
 * {@link Step}s, e.g. {@code plan=slow:3000,edge,ok}. {@code slow:N} executes after N ms whether or not the client
 * is still waiting (a request keeps running at Stripe after the client gave up); {@code edge} is a 5xx from Stripe's
 * edge: not JSON, no {@code Request-Id}, nothing executed and nothing stored for the key.
 *
 * <p>The payment method {@code pm_sandbox_processing} leaves its PaymentIntent {@code processing} (as a bank debit
 * does) until it is settled through the control plane; {@code pm_card_authenticationRequired} and
 * {@code pm_card_threeDSecure2Required} leave it {@code requires_action} until {@code POST
 * /_sandbox/payment_intents/{id}/authenticate?result=succeeded|failed} (the customer, in Stripe.js) or a cancel.
 * Every change becomes an event ({@code GET /v1/events}) delivered to a webhook endpoint: see {@link SandboxWebhooks}
 * and {@code POST /_sandbox/webhooks}. Also: {@code POST /v1/payment_intents/{id}/cancel}.
 */
public final class StripeSandbox implements AutoCloseable {

    /** One PaymentIntent the sandbox created: the ledger is the source of truth for "charged exactly once". */
    public record PaymentIntent(String id, long amount, String currency, String status, String paymentMethod,
                                String customer, String description, Map<String, String> metadata, long created,
                                long createdNanos, String idempotencyKey, String declineCode) {
        public boolean charged() {
            return "succeeded".equals(status);
        }
    }

    private record StoredAnswer(String paramsFingerprint, int status, String body, boolean finished) {
    }

    /** One scripted create request (see {@code plan}). */
    public record Step(String kind, long millis) {
        public static Step parse(String text) {
            String[] parts = text.trim().split(":", 2);
            String kind = parts[0];
            if (!List.of("ok", "slow", "edge", "fail_before", "fail_after", "drop", "rate_limit").contains(kind)) {
                throw new IllegalArgumentException("unknown plan step " + text);
            }
            return new Step(kind, parts.length > 1 ? Long.parseLong(parts[1]) : 0);
        }
    }

    record Response(int status, String body, Map<String, String> headers) {
        static Response json(int status, String body) {
            return new Response(status, body, Map.of());
        }
    }

    private final ServerSocket server;
    private final ExecutorService connections = Executors.newVirtualThreadPerTaskExecutor();
    private final Map<String, StoredAnswer> idempotency = new ConcurrentHashMap<>();
    private final Map<String, PaymentIntent> intents = new ConcurrentHashMap<>();
    /** Append-only; read by copying under its lock (a copy-on-write list would copy on every create). */
    private final List<PaymentIntent> ledger = java.util.Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong createRequests = new AtomicLong();
    private final AtomicLong apiRequests = new AtomicLong();
    private final AtomicInteger failBefore = new AtomicInteger();
    private final AtomicInteger failAfter = new AtomicInteger();
    private final AtomicInteger dropAfter = new AtomicInteger();
    private final AtomicInteger rateLimit = new AtomicInteger();
    private final AtomicInteger executing = new AtomicInteger();
    private final AtomicInteger listEmptyHasMore = new AtomicInteger();
    /** The next N list requests (PaymentIntents, refunds) answer 429, as Stripe's read rate limit does. */
    private final AtomicInteger listRateLimit = new AtomicInteger();
    private volatile long latencyMillis;
    /** How long every list request takes (a list of 100 objects on a busy account is not instant). */
    private volatile long listLatencyMillis;
    private final java.util.concurrent.ConcurrentLinkedQueue<Step> plan = new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** The ledger sorted as Stripe lists it (newest {@code created} first), rebuilt only after a change. */
    private volatile List<PaymentIntent> listOrder = List.of();
    private volatile boolean listOrderStale;
    private final SecureRandom random = new SecureRandom();
    private final SandboxWebhooks webhooks = new SandboxWebhooks();
    private final SandboxRefunds refunds = new SandboxRefunds(this);
    /**
     * Held while a PaymentIntent changes after its create (settle, 3-D Secure completion, cancel): Stripe applies one
     * change of a PaymentIntent at a time, so a check of its status and the change it allows are one step, and its
     * events are made in the order of its changes.
     */
    private final Object transitions = new Object();
    private volatile boolean closed;

    private StripeSandbox(ServerSocket server) {
        this.server = server;
        Thread acceptor = Thread.ofPlatform().daemon().name("stripe-sandbox-accept").start(this::acceptLoop);
        acceptor.setUncaughtExceptionHandler((t, e) -> { });
    }

    /** Starts a sandbox on 127.0.0.1; port 0 picks a free one. */
    public static StripeSandbox start(int port) throws IOException {
        ServerSocket socket = new ServerSocket();
        socket.setReuseAddress(true);
        socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1024);
        return new StripeSandbox(socket);
    }

    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 12111;
        StripeSandbox sandbox = start(port);
        if (args.length > 1) {
            sandbox.latencyMillis = Long.parseLong(args[1]);
        }
        System.out.println("stripe-sandbox listening on " + sandbox.baseUrl() + " latency_ms=" + sandbox.latencyMillis);
        Thread.currentThread().join();
    }

    public String baseUrl() {
        return "http://127.0.0.1:" + server.getLocalPort();
    }

    public int port() {
        return server.getLocalPort();
    }

    // ---- fault switches and observations, for tests in the same JVM -------------------------------------

    /** Its events and their delivery to a webhook endpoint. */
    public SandboxWebhooks webhooks() {
        return webhooks;
    }

    /** Its refunds. */
    public SandboxRefunds refunds() {
        return refunds;
    }

    /** A PaymentIntent by id, as it is now (null when there is none). */
    PaymentIntent paymentIntent(String id) {
        return intents.get(id);
    }

    public void setLatencyMillis(long millis) {
        this.latencyMillis = millis;
    }

    public void failNextBeforeCharging(int count) {
        failBefore.set(count);
    }

    public void failNextAfterCharging(int count) {
        failAfter.set(count);
    }

    public void dropNextResponses(int count) {
        dropAfter.set(count);
    }

    public void rateLimitNext(int count) {
        rateLimit.set(count);
    }

    /** Scripts the next create requests, one step each (see the class comment). */
    public void plan(String... steps) {
        for (String step : steps) {
            plan.add(Step.parse(step));
        }
    }

    /** Steps of the plan not used yet. */
    public int planLeft() {
        return plan.size();
    }

    /**
     * Adds {@code count} PaymentIntents that the service did not make (other payments of the same account), created
     * evenly between the two epoch seconds, with the given status and metadata.
     */
    public List<PaymentIntent> seed(int count, long createdFrom, long createdTo, String status, Map<String, String> metadata) {
        List<PaymentIntent> made = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            long created = count == 1 ? createdTo : createdFrom + (createdTo - createdFrom) * i / (count - 1);
            Map<String, String> md = new LinkedHashMap<>(metadata);
            md.putIfAbsent("seeded", Integer.toString(i));
            PaymentIntent pi = new PaymentIntent("pi_" + randomId(24), 1000, "usd", status, "pm_card_visa", null, null,
                    Map.copyOf(md), created, System.nanoTime(), null, null);
            intents.put(pi.id(), pi);
            ledger.add(pi);
            made.add(pi);
        }
        listOrderStale = true;
        return made;
    }

    /** Customers, by id, as their JSON (id, object, metadata): what a merchant created in Stripe beforehand. */
    private final Map<String, String> customers = new ConcurrentHashMap<>();

    private Response createCustomer(Map<String, String> form) {
        String id = "cus_" + randomId(14);
        StringBuilder metadata = new StringBuilder();
        form.forEach((k, v) -> {
            if (k.startsWith("metadata[") && k.endsWith("]")) {
                metadata.append(metadata.length() == 0 ? "" : ",").append(quote(k.substring(9, k.length() - 1))).append(':').append(quote(v));
            }
        });
        String json = "{\"id\":" + quote(id) + ",\"object\":\"customer\",\"metadata\":{" + metadata + "}}";
        customers.put(id, json);
        return Response.json(200, json);
    }

    /** Removes one PaymentIntent from everything the API shows. */
    public synchronized boolean forget(String id) {
        PaymentIntent gone = intents.remove(id);
        synchronized (ledger) {
            ledger.removeIf(pi -> pi.id().equals(id));
        }
        listOrderStale = true;
        return gone != null;
    }

    /** Removes what {@link #seed} added, so that other tests' lookups do not page through it. */
    public int forgetSeeded() {
        int before = ledger.size();
        synchronized (ledger) {
            ledger.removeIf(pi -> pi.idempotencyKey() == null && pi.metadata().containsKey("seeded"));
        }
        intents.values().removeIf(pi -> pi.idempotencyKey() == null && pi.metadata().containsKey("seeded"));
        listOrderStale = true;
        return before - ledger.size();
    }

    /** A pending PaymentIntent reaches its outcome ({@code succeeded}, or {@code requires_payment_method} = failed). */
    public PaymentIntent settle(String paymentIntentId, String status) {
        synchronized (transitions) {
            return settleLocked(paymentIntentId, status);
        }
    }

    private PaymentIntent settleLocked(String paymentIntentId, String status) {
        PaymentIntent pi = intents.get(paymentIntentId);
        if (pi == null) {
            throw new IllegalArgumentException("no PaymentIntent " + paymentIntentId);
        }
        PaymentIntent settled = new PaymentIntent(pi.id(), pi.amount(), pi.currency(), status, pi.paymentMethod(), pi.customer(),
                pi.description(), pi.metadata(), pi.created(), pi.createdNanos(), pi.idempotencyKey(),
                "succeeded".equals(status) ? null : "generic_decline");
        replace(settled);
        webhooks.emit("succeeded".equals(status) ? "payment_intent.succeeded" : "payment_intent.payment_failed", toJson(settled));
        return settled;
    }

    /**
     * The customer completes (or fails) the 3-D Secure authentication of a PaymentIntent that requires action, as
     * Stripe.js would after the merchant's page showed the challenge.
     */
    public PaymentIntent authenticate(String paymentIntentId, boolean success) {
        // Checked and changed under one lock: a cancel (the service giving up on an abandoned 3-D Secure) and the
        // customer's completion of the same PaymentIntent are serialized, as at Stripe; one of them is refused.
        synchronized (transitions) {
            PaymentIntent pi = intents.get(paymentIntentId);
            if (pi == null || !"requires_action".equals(pi.status())) {
                throw new IllegalArgumentException(paymentIntentId + " does not require action"
                        + (pi == null ? "" : " (it is " + pi.status() + ")"));
            }
            return settleLocked(paymentIntentId, success ? "succeeded" : "requires_payment_method");
        }
    }

    /** {@code POST /v1/payment_intents/{id}/cancel}: only a PaymentIntent that is not final can be canceled. */
    private Response cancel(String paymentIntentId) {
        synchronized (transitions) {
            return cancelLocked(paymentIntentId);
        }
    }

    private Response cancelLocked(String paymentIntentId) {
        PaymentIntent pi = intents.get(paymentIntentId);
        if (pi == null) {
            return Response.json(404, error("invalid_request_error", "resource_missing", "No such payment_intent", "intent"));
        }
        if (List.of("succeeded", "canceled").contains(pi.status())) {
            return Response.json(400, error("invalid_request_error", "payment_intent_unexpected_state",
                    "You cannot cancel this PaymentIntent because it has a status of " + pi.status() + ".", null));
        }
        PaymentIntent canceled = new PaymentIntent(pi.id(), pi.amount(), pi.currency(), "canceled", pi.paymentMethod(),
                pi.customer(), pi.description(), pi.metadata(), pi.created(), pi.createdNanos(), pi.idempotencyKey(),
                pi.declineCode());
        replace(canceled);
        webhooks.emit("payment_intent.canceled", toJson(canceled));
        return Response.json(200, toJson(canceled));
    }

    private void replace(PaymentIntent changed) {
        intents.put(changed.id(), changed);
        synchronized (ledger) {
            ledger.replaceAll(p -> p.id().equals(changed.id()) ? changed : p);
        }
        listOrderStale = true;
    }

    /**
     * PaymentIntents of one (client, Idempotency-Key): its {@code chargeonce_key} metadata (the service's stable
     * identity of a charge) is {@code identity}, or it was created with a Stripe key derived from it
     * ({@code chargeonce-<identity>-a<attempt>}).
     */
    public List<PaymentIntent> intentsForKey(String identity) {
        String keyPrefix = "chargeonce-" + identity + "-a";
        return ledger().stream().filter(pi -> identity.equals(pi.metadata().get("chargeonce_key"))
                || (pi.idempotencyKey() != null && pi.idempotencyKey().startsWith(keyPrefix))).toList();
    }

    /** Moves a PaymentIntent's {@code created} back in time, as if it had been made that much earlier. */
    public PaymentIntent backdate(String paymentIntentId, long seconds) {
        PaymentIntent pi = intents.get(paymentIntentId);
        if (pi == null) {
            throw new IllegalArgumentException("no PaymentIntent " + paymentIntentId);
        }
        PaymentIntent older = new PaymentIntent(pi.id(), pi.amount(), pi.currency(), pi.status(), pi.paymentMethod(),
                pi.customer(), pi.description(), pi.metadata(), pi.created() - seconds, pi.createdNanos(),
                pi.idempotencyKey(), pi.declineCode());
        intents.put(pi.id(), older);
        synchronized (ledger) {
            ledger.replaceAll(p -> p.id().equals(pi.id()) ? older : p);
        }
        listOrderStale = true;
        return older;
    }

    /** Create requests that are still executing (a slow step or latency): Stripe has not answered them yet. */
    public int executing() {
        return executing.get();
    }

    public List<PaymentIntent> ledger() {
        synchronized (ledger) {
            return List.copyOf(ledger);
        }
    }

    /** PaymentIntents whose metadata names the given chargeonce charge id. */
    public List<PaymentIntent> intentsForCharge(String chargeId) {
        return ledger().stream().filter(pi -> chargeId.equals(pi.metadata().get("chargeonce_charge_id"))).toList();
    }

    public long createRequests() {
        return createRequests.get();
    }

    public long apiRequests() {
        return apiRequests.get();
    }

    public void reset() {
        idempotency.clear();
        intents.clear();
        ledger.clear();
        createRequests.set(0);
        apiRequests.set(0);
        failBefore.set(0);
        failAfter.set(0);
        dropAfter.set(0);
        rateLimit.set(0);
        listEmptyHasMore.set(0);
        listRateLimit.set(0);
        listLatencyMillis = 0;
        plan.clear();
        webhooks.clear();
        refunds.clear();
        latencyMillis = 0;
        listOrderStale = true;
    }

    @Override
    public void close() throws IOException {
        closed = true;
        webhooks.close();
        server.close();
        connections.shutdownNow();
    }

    // ---- HTTP ----------------------------------------------------------------------------------------------

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket socket = server.accept();
                socket.setTcpNoDelay(true);
                connections.submit(() -> serve(socket));
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void serve(Socket socket) {
        try (socket) {
            InputStream in = new BufferedInputStream(socket.getInputStream());
            OutputStream out = socket.getOutputStream();
            while (true) {
                String requestLine = readLine(in);
                if (requestLine == null || requestLine.isEmpty()) {
                    return;
                }
                Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
                for (String line = readLine(in); line != null && !line.isEmpty(); line = readLine(in)) {
                    int colon = line.indexOf(':');
                    if (colon > 0) {
                        headers.put(line.substring(0, colon).trim(), line.substring(colon + 1).trim());
                    }
                }
                int length = Integer.parseInt(headers.getOrDefault("Content-Length", "0"));
                byte[] body = in.readNBytes(length);
                if (body.length < length) {
                    // The client died while sending: like Stripe, never execute a request that did not arrive whole.
                    return;
                }
                String[] parts = requestLine.split(" ");
                Response response = handle(parts[0], parts[1], headers, new String(body, StandardCharsets.UTF_8));
                if (response == null) {
                    // Drop: the connection dies without an answer, as a network failure after the charge would.
                    socket.setSoLinger(true, 0);
                    return;
                }
                byte[] payload = response.body().getBytes(StandardCharsets.UTF_8);
                Map<String, String> responseHeaders = new LinkedHashMap<>();
                responseHeaders.put("Content-Type", "application/json");
                responseHeaders.put("Request-Id", "req_" + randomId(14));
                responseHeaders.putAll(response.headers());
                StringBuilder head = new StringBuilder()
                        .append("HTTP/1.1 ").append(response.status()).append(' ').append(reason(response.status())).append("\r\n")
                        .append("Content-Length: ").append(payload.length).append("\r\n");
                responseHeaders.forEach((k, v) -> {
                    if (!v.isEmpty()) {
                        head.append(k).append(": ").append(v).append("\r\n");
                    }
                });
                out.write(head.append("\r\n").toString().getBytes(StandardCharsets.US_ASCII));
                out.write(payload);
                out.flush();
                if ("close".equalsIgnoreCase(headers.get("Connection"))) {
                    return;
                }
            }
        } catch (IOException | RuntimeException e) {
            // The peer went away; nothing to answer.
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream(128);
        int b;
        while ((b = in.read()) != -1) {
            if (b == '\n') {
                break;
            }
            if (b != '\r') {
                line.write(b);
            }
        }
        if (b == -1 && line.size() == 0) {
            return null;
        }
        return line.toString(StandardCharsets.ISO_8859_1);
    }

    private static String reason(int status) {
        return switch (status) {
            case 200 -> "OK";
            case 400 -> "Bad Request";
            case 402 -> "Request Failed";
            case 404 -> "Not Found";
            case 409 -> "Conflict";
            case 429 -> "Too Many Requests";
            case 502 -> "Bad Gateway";
            default -> "Server Error";
        };
    }

    private Response handle(String method, String target, Map<String, String> headers, String body) {
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        Map<String, String> query = parseForm(q < 0 ? "" : target.substring(q + 1));
        if (path.startsWith("/_sandbox/")) {
            return control(method, path, query);
        }
        apiRequests.incrementAndGet();
        if (!headers.getOrDefault("Authorization", "").startsWith("Bearer sk_")) {
            return Response.json(401, error("invalid_request_error", null, "Invalid API Key provided.", null));
        }
        if (method.equals("POST") && path.equals("/v1/payment_intents")) {
            Map<String, String> form = parseForm(body);
            if (headers.containsKey("Sandbox-Created")) {
                form.put("__sandbox_created", headers.get("Sandbox-Created"));
            }
            return create(headers.get("Idempotency-Key"), form);
        }
        if (method.equals("GET") && path.equals("/v1/payment_intents")) {
            return list(query);
        }
        if (path.startsWith("/v1/refunds")) {
            Map<String, String> form = parseForm(body);
            return refunds.handle(method, path, query, form, headers.get("Idempotency-Key"));
        }
        if (method.equals("POST") && path.startsWith("/v1/payment_intents/") && path.endsWith("/cancel")) {
            return cancel(path.substring("/v1/payment_intents/".length(), path.length() - "/cancel".length()));
        }
        if (method.equals("POST") && path.equals("/v1/customers")) {
            return createCustomer(parseForm(body));
        }
        if (method.equals("GET") && path.startsWith("/v1/customers/")) {
            String customer = customers.get(path.substring("/v1/customers/".length()));
            return customer != null ? Response.json(200, customer) : Response.json(404, error("invalid_request_error", "resource_missing",
                    "No such customer: '" + path.substring("/v1/customers/".length()) + "'", "id"));
        }
        if (method.equals("GET") && path.equals("/v1/events")) {
            String page = webhooks.list(query);
            return page != null ? Response.json(200, page) : Response.json(400, error("invalid_request_error", "parameter_invalid",
                    "Pass either type (wildcards allowed) or types (up to 20 exact event names), not both.", "types"));
        }
        if (method.equals("GET") && path.startsWith("/v1/payment_intents/")) {
            PaymentIntent pi = intents.get(path.substring("/v1/payment_intents/".length()));
            return pi == null
                    ? Response.json(404, error("invalid_request_error", "resource_missing", "No such payment_intent", "intent"))
                    : Response.json(200, toJson(pi));
        }
        return Response.json(404, error("invalid_request_error", null, "Unrecognized request URL (" + method + ": " + path + ")", null));
    }

    private Response control(String method, String path, Map<String, String> query) {
        if (path.startsWith("/_sandbox/payment_intents/") && path.endsWith("/backdate")) {
            String id = path.substring("/_sandbox/payment_intents/".length(), path.length() - "/backdate".length());
            return Response.json(200, toJson(backdate(id, Long.parseLong(query.getOrDefault("seconds", "0")))));
        }
        if (path.startsWith("/_sandbox/refunds")) {
            return refunds.control(path, query);
        }
        if (path.startsWith("/_sandbox/payment_intents/") && path.endsWith("/authenticate")) {
            String id = path.substring("/_sandbox/payment_intents/".length(), path.length() - "/authenticate".length());
            try {
                return Response.json(200, toJson(authenticate(id, !"failed".equals(query.get("result")))));
            } catch (IllegalArgumentException e) {
                // Too late (canceled meanwhile) or no such PaymentIntent: an answer, not a dropped connection.
                return Response.json(400, error("invalid_request_error", "payment_intent_unexpected_state", e.getMessage(), null));
            }
        }
        if (path.startsWith("/_sandbox/payment_intents/") && path.endsWith("/forget")) {
            // Stripe losing a PaymentIntent the service knows: what reconciliation must notice (missing at Stripe).
            String id = path.substring("/_sandbox/payment_intents/".length(), path.length() - "/forget".length());
            return Response.json(200, "{\"forgotten\":" + forget(id) + "}");
        }
        if (path.startsWith("/_sandbox/payment_intents/") && path.endsWith("/settle")) {
            String id = path.substring("/_sandbox/payment_intents/".length(), path.length() - "/settle".length());
            return Response.json(200, toJson(settle(id, query.getOrDefault("status", "succeeded"))));
        }
        switch (path) {
            case "/_sandbox/webhooks" -> {
                webhooks.configure(query);
                if (Boolean.parseBoolean(query.getOrDefault("redeliver", "false"))) {
                    webhooks.redeliverAll();
                }
                return Response.json(200, webhooks.stats());
            }
            case "/_sandbox/customers" -> {
                // A customer with a chosen id (tests that need a long or a known one), named for a client or not.
                String id = query.getOrDefault("id", "cus_" + randomId(14));
                String client = query.get("client");
                String json = "{\"id\":" + quote(id) + ",\"object\":\"customer\",\"metadata\":{"
                        + (client == null ? "" : "\"chargeonce_client_id\":" + quote(client)) + "}}";
                customers.put(id, json);
                return Response.json(200, json);
            }
            case "/_sandbox/forget_seeded" -> {
                return Response.json(200, "{\"forgotten\":" + forgetSeeded() + "}");
            }
            case "/_sandbox/seed" -> {
                long now = System.currentTimeMillis() / 1000;
                Map<String, String> metadata = new LinkedHashMap<>();
                query.forEach((k, v) -> {
                    if (k.startsWith("metadata[") && k.endsWith("]")) {
                        metadata.put(k.substring(9, k.length() - 1), v);
                    }
                });
                List<PaymentIntent> made = seed(Integer.parseInt(query.getOrDefault("count", "1")),
                        Long.parseLong(query.getOrDefault("created_from", Long.toString(now))),
                        Long.parseLong(query.getOrDefault("created_to", Long.toString(now))),
                        query.getOrDefault("status", "succeeded"), metadata);
                return Response.json(200, "{\"seeded\":" + made.size() + ",\"last\":" + quote(made.isEmpty() ? null : made.get(made.size() - 1).id()) + "}");
            }
            case "/_sandbox/reset" -> {
                reset();
                return Response.json(200, "{\"reset\":true}");
            }
            case "/_sandbox/faults" -> {
                if (query.containsKey("latency_ms")) latencyMillis = Long.parseLong(query.get("latency_ms"));
                if (query.containsKey("fail_before")) failBefore.set(Integer.parseInt(query.get("fail_before")));
                if (query.containsKey("fail_after")) failAfter.set(Integer.parseInt(query.get("fail_after")));
                if (query.containsKey("drop_after")) dropAfter.set(Integer.parseInt(query.get("drop_after")));
                if (query.containsKey("rate_limit")) rateLimit.set(Integer.parseInt(query.get("rate_limit")));
                if (query.containsKey("list_empty_has_more")) listEmptyHasMore.set(Integer.parseInt(query.get("list_empty_has_more")));
                if (query.containsKey("list_rate_limit")) listRateLimit.set(Integer.parseInt(query.get("list_rate_limit")));
                if (query.containsKey("list_latency_ms")) listLatencyMillis = Long.parseLong(query.get("list_latency_ms"));
                if (query.containsKey("plan")) {
                    plan.clear();
                    if (!query.get("plan").isBlank()) {
                        plan(query.get("plan").split(","));
                    }
                }
                return Response.json(200, "{\"latency_ms\":" + latencyMillis + ",\"fail_before\":" + failBefore.get()
                        + ",\"fail_after\":" + failAfter.get() + ",\"drop_after\":" + dropAfter.get()
                        + ",\"rate_limit\":" + rateLimit.get() + ",\"plan_left\":" + plan.size() + "}");
            }
            case "/_sandbox/stats" -> {
                long charged = ledger().stream().filter(PaymentIntent::charged).count();
                return Response.json(200, "{\"create_requests\":" + createRequests.get() + ",\"api_requests\":" + apiRequests.get()
                        + ",\"payment_intents\":" + ledger.size() + ",\"succeeded\":" + charged + ",\"executing\":" + executing.get() + "}");
            }
            case "/_sandbox/ledger" -> {
                StringBuilder json = new StringBuilder("{\"data\":[");
                String chargeId = query.get("charge_id");
                String key = query.get("key");
                // (stats and ledger are read-only views)
                List<PaymentIntent> all = key != null ? intentsForKey(key) : chargeId == null ? ledger() : intentsForCharge(chargeId);
                for (int i = 0; i < all.size(); i++) {
                    String pi = toJson(all.get(i));
                    json.append(i == 0 ? "" : ",").append(pi, 0, pi.length() - 1)
                            .append(",\"sandbox_idempotency_key\":").append(quote(all.get(i).idempotencyKey())).append('}');
                }
                return Response.json(200, json.append("]}").toString());
            }
            default -> {
                return Response.json(404, error("invalid_request_error", null, "unknown sandbox control " + path, null));
            }
        }
    }

    // ---- Stripe semantics ------------------------------------------------------------------------------------

    /** How a create request is carried out once the key lets it run ({@code planned}: the plan's step, or ""). */
    @FunctionalInterface
    interface Execution {
        Response execute(String idempotencyKey, Map<String, String> params, String planned);
    }

    private Response create(String idempotencyKey, Map<String, String> params) {
        return idempotent("/v1/payment_intents", idempotencyKey, params, this::execute);
    }

    /**
     * A create request with Stripe's idempotency and the fault switches: plan steps and counters apply to every
     * create (PaymentIntents and refunds alike), and a key is bound to its endpoint and parameters.
     */
    Response idempotent(String endpoint, String idempotencyKey, Map<String, String> params, Execution execution) {
        createRequests.incrementAndGet();
        Step step = plan.poll();
        String kind = step == null ? "" : step.kind();
        if (kind.equals("edge")) {
            // Stripe's edge failed: the API never saw the request, so nothing ran and nothing is stored for the key.
            return EDGE_ERROR;
        }
        if (kind.equals("rate_limit") || (step == null && consume(rateLimit))) {
            // Stripe does not store 429s for a key: the request was not executed.
            return new Response(429, error("invalid_request_error", "rate_limit", "Too many requests hit the API too quickly.", null),
                    Map.of());
        }
        String fingerprint = endpoint + " " + new TreeMap<>(params);
        if (idempotencyKey != null) {
            StoredAnswer running = new StoredAnswer(fingerprint, 0, null, false);
            StoredAnswer previous = idempotency.putIfAbsent(idempotencyKey, running);
            if (previous != null) {
                if (!previous.paramsFingerprint().equals(fingerprint)) {
                    return Response.json(400, error("idempotency_error", null,
                            "Keys for idempotent requests can only be used with the same parameters they were first used with. "
                                    + "Try using a key other than '" + idempotencyKey + "' if you meant to execute a different request.",
                            null));
                }
                if (!previous.finished()) {
                    return Response.json(409, error("invalid_request_error", "idempotency_key_in_use",
                            "There is currently another in-progress request using this Idempotent Key.", null));
                }
                return maybeDrop(new Response(previous.status(), previous.body(), Map.of("Idempotent-Replayed", "true")),
                        kind.equals("drop"));
            }
        }
        // A slow request keeps running whether or not its client still waits for it, as at Stripe.
        executing.incrementAndGet();
        Response answer;
        try {
            sleep(kind.equals("slow") ? step.millis() : latencyMillis);
            answer = execution.execute(idempotencyKey, params, kind);
        } finally {
            executing.decrementAndGet();
        }
        if (idempotencyKey != null) {
            idempotency.put(idempotencyKey, new StoredAnswer(fingerprint, answer.status(), answer.body(), true));
        }
        return maybeDrop(answer, kind.equals("drop"));
    }

    /** A 5xx from Stripe's edge: HTML, no {@code Request-Id}, never a stored answer of the key. */
    private static final Response EDGE_ERROR = new Response(502, "<html><body><h1>502 Bad Gateway</h1></body></html>",
            Map.of("Content-Type", "text/html", "Request-Id", ""));

    private Response maybeDrop(Response answer, boolean planned) {
        return planned || (!planned && consume(dropAfter)) ? null : answer;
    }

    private Response execute(String idempotencyKey, Map<String, String> params, String planned) {
        if (planned.equals("fail_before") || (planned.isEmpty() && consume(failBefore))) {
            return Response.json(500, error("api_error", null, "An unknown error occurred (sandbox: before charging).", null));
        }
        String amountText = params.get("amount");
        if (amountText == null) {
            return Response.json(400, error("invalid_request_error", "parameter_missing", "Missing required param: amount.", "amount"));
        }
        long amount;
        try {
            amount = Long.parseLong(amountText);
        } catch (NumberFormatException e) {
            return Response.json(400, error("invalid_request_error", "parameter_invalid_integer", "Invalid integer: " + amountText, "amount"));
        }
        if (amount < 1 || amount > 99_999_999L) {
            return Response.json(400, error("invalid_request_error", "amount_too_small", "Amount must be at least 1 and at most 99999999.", "amount"));
        }
        String currency = params.getOrDefault("currency", "");
        if (!currency.matches("[a-z]{3}")) {
            return Response.json(400, error("invalid_request_error", "parameter_missing", "Missing or invalid currency.", "currency"));
        }
        String paymentMethod = params.get("payment_method");
        if (paymentMethod == null || !paymentMethod.startsWith("pm_")) {
            return Response.json(400, error("invalid_request_error", "resource_missing",
                    "No such PaymentMethod: '" + paymentMethod + "'", "payment_method"));
        }
        Map<String, String> metadata = new LinkedHashMap<>();
        params.forEach((k, v) -> {
            if (k.startsWith("metadata[") && k.endsWith("]")) {
                metadata.put(k.substring(9, k.length() - 1), v);
            }
        });
        if (metadata.size() > 50) {
            // Stripe's limit, which the service's own three keys count against.
            return Response.json(400, error("invalid_request_error", "parameter_invalid",
                    "You can specify up to 50 keys in metadata.", "metadata"));
        }
        String status;
        String declineCode = null;
        switch (paymentMethod) {
            case "pm_card_chargeDeclined" -> { status = "requires_payment_method"; declineCode = "generic_decline"; }
            case "pm_card_visa_chargeDeclinedInsufficientFunds" -> { status = "requires_payment_method"; declineCode = "insufficient_funds"; }
            case "pm_card_authenticationRequired", "pm_card_threeDSecure2Required" -> status = "requires_action";
            case "pm_sandbox_processing" -> status = "processing";
            case "pm_card_visa", "pm_card_mastercard", "pm_card_amex" -> status = "succeeded";
            default -> {
                return Response.json(400, error("invalid_request_error", "resource_missing",
                        "No such PaymentMethod: '" + paymentMethod + "'", "payment_method"));
            }
        }
        long created = params.containsKey("__sandbox_created") ? Long.parseLong(params.get("__sandbox_created"))
                : System.currentTimeMillis() / 1000;
        PaymentIntent pi = new PaymentIntent("pi_" + randomId(24), amount, currency, status, paymentMethod,
                params.get("customer"), params.get("description"), Map.copyOf(metadata), created,
                System.nanoTime(), idempotencyKey, declineCode);
        intents.put(pi.id(), pi);
        ledger.add(pi);
        listOrderStale = true;
        webhooks.emit("payment_intent.created", toJson(pi));
        webhooks.emit(switch (status) {
            case "succeeded" -> "payment_intent.succeeded";
            case "requires_action" -> "payment_intent.requires_action";
            case "processing" -> "payment_intent.processing";
            default -> "payment_intent.payment_failed";
        }, toJson(pi));
        if (planned.equals("fail_after") || (planned.isEmpty() && consume(failAfter))) {
            return Response.json(500, error("api_error", null, "An unknown error occurred (sandbox: after charging).", null));
        }
        if (declineCode != null) {
            String err = "{\"error\":{\"type\":\"card_error\",\"code\":\"card_declined\",\"decline_code\":\"" + declineCode
                    + "\",\"message\":\"Your card was declined.\",\"param\":\"payment_method\",\"payment_intent\":" + toJson(pi) + "}}";
            return Response.json(402, err);
        }
        return Response.json(200, toJson(pi));
    }

    /** A list request refused for the rate limit (429, not stored for anything): consumes one from the switch. */
    Response listRateLimited() {
        return consume(listRateLimit) ? new Response(429, error("invalid_request_error", "rate_limit",
                "Too many requests hit the API too quickly.", null), Map.of()) : null;
    }

    private Response list(Map<String, String> query) {
        sleep(listLatencyMillis);
        Response limited = listRateLimited();
        if (limited != null) {
            return limited;
        }
        if (consume(listEmptyHasMore)) {
            // A broken page: nothing in it, yet "more to come". A client must not read it as the end of the list.
            return Response.json(200, "{\"object\":\"list\",\"url\":\"/v1/payment_intents\",\"has_more\":true,\"data\":[]}");
        }
        int limit = Math.min(100, Integer.parseInt(query.getOrDefault("limit", "10")));
        long createdGte = Long.parseLong(query.getOrDefault("created[gte]", "0"));
        long createdLte = Long.parseLong(query.getOrDefault("created[lte]", Long.toString(Long.MAX_VALUE)));
        String startingAfter = query.get("starting_after");
        List<PaymentIntent> newestFirst = listOrder();
        List<PaymentIntent> page = new ArrayList<>();
        boolean skipping = startingAfter != null;
        boolean hasMore = false;
        for (PaymentIntent pi : newestFirst) {
            if (skipping) {
                skipping = !pi.id().equals(startingAfter);
                continue;
            }
            if (pi.created() < createdGte || pi.created() > createdLte) {
                continue;
            }
            if (page.size() == limit) {
                hasMore = true;
                break;
            }
            page.add(pi);
        }
        StringBuilder json = new StringBuilder("{\"object\":\"list\",\"url\":\"/v1/payment_intents\",\"has_more\":")
                .append(hasMore).append(",\"data\":[");
        for (int i = 0; i < page.size(); i++) {
            json.append(i == 0 ? "" : ",").append(toJson(page.get(i)));
        }
        return Response.json(200, json.append("]}").toString());
    }

    /**
     * The ledger as Stripe lists it: newest {@code created} first (ties: the later made first). Rebuilt under the
     * lock, and the flag cleared only once the new order is published: a list must never miss a PaymentIntent that
     * was made before it started (the lookup's absence proofs rely on exactly that, as on Stripe's own list).
     */
    private synchronized List<PaymentIntent> listOrder() {
        if (listOrderStale) {
            listOrderStale = false;
            List<PaymentIntent> sorted = new ArrayList<>(ledger());
            sorted.sort(java.util.Comparator.comparingLong(PaymentIntent::created)
                    .thenComparingLong(PaymentIntent::createdNanos).reversed());
            listOrder = List.copyOf(sorted);
        }
        return listOrder;
    }

    private static String toJson(PaymentIntent pi) {
        StringBuilder json = new StringBuilder(512)
                .append("{\"id\":").append(quote(pi.id()))
                .append(",\"object\":\"payment_intent\"")
                .append(",\"amount\":").append(pi.amount())
                .append(",\"amount_received\":").append(pi.charged() ? pi.amount() : 0)
                .append(",\"currency\":").append(quote(pi.currency()))
                .append(",\"status\":").append(quote(pi.status()))
                .append(",\"payment_method\":").append(quote(pi.paymentMethod()))
                .append(",\"customer\":").append(quote(pi.customer()))
                .append(",\"description\":").append(quote(pi.description()))
                .append(",\"created\":").append(pi.created())
                .append(",\"livemode\":false")
                .append(",\"latest_charge\":").append(pi.charged() ? quote("ch_" + pi.id().substring(3)) : "null")
                .append(",\"metadata\":{");
        int i = 0;
        for (Map.Entry<String, String> e : new TreeMap<>(pi.metadata()).entrySet()) {
            json.append(i++ == 0 ? "" : ",").append(quote(e.getKey())).append(':').append(quote(e.getValue()));
        }
        json.append('}');
        if (pi.declineCode() != null) {
            json.append(",\"last_payment_error\":{\"type\":\"card_error\",\"code\":\"card_declined\",\"decline_code\":")
                    .append(quote(pi.declineCode())).append(",\"message\":\"Your card was declined.\"}");
        }
        json.append(",\"client_secret\":").append(quote(pi.id() + "_secret_sandbox"));
        if ("requires_action".equals(pi.status())) {
            json.append(",\"next_action\":{\"type\":\"use_stripe_sdk\",\"use_stripe_sdk\":{\"type\":\"three_d_secure_redirect\","
                    + "\"stripe_js\":\"https://hooks.stripe.com/3d_secure_2/hosted?payment_intent=").append(pi.id()).append("\"}}");
        }
        return json.append('}').toString();
    }

    static String error(String type, String code, String message, String param) {
        return "{\"error\":{\"type\":" + quote(type) + (code == null ? "" : ",\"code\":" + quote(code))
                + ",\"message\":" + quote(message) + (param == null ? "" : ",\"param\":" + quote(param)) + "}}";
    }

    static String quote(String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder(value.length() + 2).append('"');
        for (char c : value.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    static Map<String, String> parseForm(String form) {
        Map<String, String> out = new LinkedHashMap<>();
        if (form == null || form.isEmpty()) {
            return out;
        }
        for (String pair : form.split("&")) {
            int eq = pair.indexOf('=');
            String key = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            out.put(key, value);
        }
        return out;
    }

    /** The 500 counters, for refund creates as for PaymentIntent creates (see {@link #idempotent}). */
    boolean consumeFailBefore() {
        return consume(failBefore);
    }

    boolean consumeFailAfter() {
        return consume(failAfter);
    }

    private static boolean consume(AtomicInteger counter) {
        return counter.getAndUpdate(n -> n > 0 ? n - 1 : 0) > 0;
    }

    private static void sleep(long millis) {
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    String randomId(int length) {
        String alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        StringBuilder id = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            id.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return id.toString();
    }
}

package dev.chargeonce.sandbox;

import dev.chargeonce.sandbox.SandboxHttp.Response;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sandbox's refunds, as Stripe makes them: {@code POST /v1/refunds} (a PaymentIntent that succeeded; the amount
 * defaults to what is left; more than what is left is refused; the same idempotency and fault switches as
 * creates), {@code GET /v1/refunds} ({@code payment_intent}, {@code charge}, {@code created[gte|lte]}, newest first),
 * {@code GET /v1/refunds/{id}}, {@code POST /v1/refunds/{id}/cancel} ({@code requires_action} only). A refund of a
 * payment made with {@code pm_sandbox_processing} (a bank debit) stays {@code pending} until settled. Its events are
 * Stripe's, wherever it was made (the API, the Dashboard): {@code refund.created} and the charge's
 * {@code charge.refunded} when it is made; {@code refund.updated} (or {@code refund.failed}) and the charge's
 * {@code charge.refund.updated} (the refund) whenever its status changes after. Control plane:
 * {@code POST /_sandbox/dashboard/refunds} (a refund made in Stripe's Dashboard: {@link #dashboard}),
 * {@code GET /_sandbox/refunds?key=} (the ledger, by the refund's identity), {@code POST
 * /_sandbox/refunds/{id}/settle?status=succeeded|failed&failure_reason=}.
 */
public final class SandboxRefunds {

    /** One refund the sandbox made. */
    public record Refund(String id, String paymentIntentId, long amount, String currency, String status, String reason,
                         Map<String, String> metadata, long created, long createdNanos, String idempotencyKey,
                         String failureReason) {
    }

    private final SandboxPaymentIntents intents;
    private final SandboxIdempotency answers;
    private final SandboxFaults faults;
    private final SandboxWebhooks webhooks;
    private final Map<String, Refund> byId = new ConcurrentHashMap<>();
    private final List<Refund> ledger = java.util.Collections.synchronizedList(new ArrayList<>());
    private final java.util.concurrent.atomic.AtomicInteger createRequests = new java.util.concurrent.atomic.AtomicInteger();

    SandboxRefunds(SandboxPaymentIntents intents, SandboxIdempotency answers, SandboxFaults faults, SandboxWebhooks webhooks) {
        this.intents = intents;
        this.answers = answers;
        this.faults = faults;
        this.webhooks = webhooks;
    }

    Response handle(String method, String path, Map<String, String> query, Map<String, String> form, String idempotencyKey) {
        if (method.equals("POST") && path.equals("/v1/refunds")) {
            createRequests.incrementAndGet();
            return answers.idempotent("/v1/refunds", idempotencyKey, form, this::invalid, this::create);
        }
        if (method.equals("GET") && path.equals("/v1/refunds")) {
            Response limited = faults.listRateLimited();
            return limited != null ? limited : Response.json(200, list(query));
        }
        if (method.equals("POST") && path.endsWith("/cancel")) {
            return cancel(path.substring("/v1/refunds/".length(), path.length() - "/cancel".length()));
        }
        if (method.equals("GET") && path.startsWith("/v1/refunds/")) {
            Refund refund = byId.get(path.substring("/v1/refunds/".length()));
            return refund == null ? missing() : Response.json(200, toJson(refund));
        }
        return Response.json(404, SandboxJson.error("invalid_request_error", null, "Unrecognized request URL (" + method + ": " + path + ")", null));
    }

    /**
     * A refund's parameter validation, before anything executes (null: valid): a PaymentIntent that exists, an
     * amount that is a positive integer. Its 400 is not saved for the key (see {@link SandboxIdempotency}); what the
     * PaymentIntent's state refuses (nothing to refund, more than is left) is decided by the endpoint, and saved.
     */
    private Response invalid(Map<String, String> params) {
        if (intents.get(params.getOrDefault("payment_intent", "")) == null) {
            return Response.json(400, SandboxJson.error("invalid_request_error", "resource_missing",
                    "No such payment_intent: '" + params.get("payment_intent") + "'", "payment_intent"));
        }
        if (params.containsKey("amount")) {
            long amount;
            try {
                amount = Long.parseLong(params.get("amount"));
            } catch (NumberFormatException e) {
                amount = 0;
            }
            if (amount < 1) {
                return Response.json(400, SandboxJson.error("invalid_request_error", "parameter_invalid_integer",
                        "Invalid positive integer: " + params.get("amount"), "amount"));
            }
        }
        return null;
    }

    /** Serialized: two refunds of one PaymentIntent must see each other's amounts, as at Stripe. */
    private synchronized Response create(String idempotencyKey, Map<String, String> params, String planned) {
        if (planned.equals("fail_before") || (planned.isEmpty() && faults.consumeFailBefore())) {
            return Response.json(500, SandboxJson.error("api_error", null, "An unknown error occurred (sandbox: before refunding).", null));
        }
        StripeSandbox.PaymentIntent pi = intents.get(params.get("payment_intent"));
        if (pi == null) {
            // Forgotten (through the control plane) while this request waited for its turn.
            return Response.json(400, SandboxJson.error("invalid_request_error", "resource_missing",
                    "No such payment_intent: '" + params.get("payment_intent") + "'", "payment_intent"));
        }
        if (!pi.charged()) {
            return Response.json(400, SandboxJson.error("invalid_request_error", "charge_not_refundable",
                    "This PaymentIntent has no successful charge to refund.", "payment_intent"));
        }
        long left = pi.amount() - refunded(pi.id());
        if (left <= 0) {
            return Response.json(400, SandboxJson.error("invalid_request_error", "charge_already_refunded",
                    "Charge has already been refunded.", null));
        }
        long amount = params.containsKey("amount") ? Long.parseLong(params.get("amount")) : left;
        if (amount > left) {
            return Response.json(400, SandboxJson.error("invalid_request_error", "amount_too_large",
                    "Refund amount (" + amount + ") is greater than unrefunded amount on charge (" + left + ").", "amount"));
        }
        Map<String, String> metadata = new TreeMap<>();
        params.forEach((k, v) -> {
            if (k.startsWith("metadata[") && k.endsWith("]")) {
                metadata.put(k.substring(9, k.length() - 1), v);
            }
        });
        String status = "pm_sandbox_processing".equals(pi.paymentMethod()) ? "pending" : "succeeded";
        Refund refund = new Refund("re_" + SandboxJson.randomId(24), pi.id(), amount, pi.currency(), status, params.get("reason"),
                Map.copyOf(metadata), System.currentTimeMillis() / 1000, System.nanoTime(), idempotencyKey, null);
        byId.put(refund.id(), refund);
        ledger.add(refund);
        webhooks.emit("refund.created", toJson(refund));
        // The charge is refunded (in part) from the refund's creation on, a pending refund too: its amount_refunded
        // counts it, as Stripe's does; a later failure is told by charge.refund.updated.
        webhooks.emit("charge.refunded", chargeJson(pi));
        if (planned.equals("fail_after") || (planned.isEmpty() && faults.consumeFailAfter())) {
            return Response.json(500, SandboxJson.error("api_error", null, "An unknown error occurred (sandbox: after refunding).", null));
        }
        return Response.json(200, toJson(refund));
    }

    /** The plan step of a refund made in Stripe's Dashboard: no idempotency key, no fault switch applies. */
    private static final String DASHBOARD = "dashboard";

    /**
     * {@code POST /_sandbox/dashboard/refunds?payment_intent=&amount=&reason=}: a refund made in Stripe's Dashboard,
     * with none of the service's metadata (whatever {@code metadata[...]} the query names) and no idempotency key;
     * refused as the API refuses a refund (more than what is left, a payment that did not succeed). Its events are
     * an API refund's, naming no request.
     */
    Response dashboard(Map<String, String> query) {
        Map<String, String> params = new LinkedHashMap<>();
        query.forEach((k, v) -> {
            if (!k.startsWith("metadata[")) {
                params.put(k, v);
            }
        });
        if (params.containsKey("charge") && !params.containsKey("payment_intent")) {
            params.put("payment_intent", "pi_" + params.get("charge").substring("ch_".length()));
        }
        Response refusal = invalid(params);
        return refusal != null ? refusal : create(null, params, DASHBOARD);
    }

    /**
     * A charge as Stripe's events carry it: the PaymentIntent's charge, with what its refunds took back
     * ({@code amount_refunded}: the pending and succeeded ones). Its {@code refunds} list only in events rendered in an
     * API version before 2022-11-15: since then Stripe lists a charge's refunds only when expanded, and never expands
     * an event's object.
     */
    private String chargeJson(StripeSandbox.PaymentIntent pi) {
        long refunded = refunded(pi.id());
        String chargeId = chargeId(pi.id());
        String json = "{\"id\":" + SandboxJson.quote(chargeId) + ",\"object\":\"charge\",\"amount\":" + pi.amount()
                + ",\"amount_captured\":" + pi.amount() + ",\"amount_refunded\":" + refunded
                + ",\"currency\":" + SandboxJson.quote(pi.currency()) + ",\"payment_intent\":" + SandboxJson.quote(pi.id())
                + ",\"customer\":" + SandboxJson.quote(pi.customer()) + ",\"paid\":true,\"captured\":true"
                + ",\"refunded\":" + (refunded >= pi.amount()) + ",\"status\":\"succeeded\",\"created\":" + pi.created()
                + ",\"livemode\":false,\"metadata\":{}";
        if (!webhooks.rendersChargeRefunds()) {
            return json + "}";
        }
        StringBuilder list = new StringBuilder();
        for (Refund refund : all()) {
            if (refund.paymentIntentId().equals(pi.id())) {
                list.append(list.isEmpty() ? "" : ",").append(toJson(refund));
            }
        }
        return json + ",\"refunds\":{\"object\":\"list\",\"data\":[" + list + "],\"has_more\":false,\"url\":\"/v1/charges/"
                + chargeId + "/refunds\"}}";
    }

    /** The id of a PaymentIntent's charge, as {@link SandboxPaymentIntents} names it. */
    private static String chargeId(String paymentIntentId) {
        return "ch_" + paymentIntentId.substring("pi_".length());
    }

    /** Pending and succeeded refunds of a PaymentIntent (what it can no longer refund). */
    private long refunded(String paymentIntentId) {
        synchronized (ledger) {
            return ledger.stream().filter(r -> r.paymentIntentId().equals(paymentIntentId))
                    .filter(r -> byId.get(r.id()).status().matches("pending|succeeded|requires_action"))
                    .mapToLong(Refund::amount).sum();
        }
    }

    private synchronized Response cancel(String id) {
        Refund refund = byId.get(id);
        if (refund == null) {
            return missing();
        }
        if (!"requires_action".equals(refund.status())) {
            return Response.json(400, SandboxJson.error("invalid_request_error", "refund_unexpected_state",
                    "Only a refund with status requires_action can be canceled.", null));
        }
        return Response.json(200, toJson(change(id, "canceled", null)));
    }

    /** A pending refund reaches its outcome (as the bank answers). */
    public synchronized Refund settle(String id, String status, String failureReason) {
        return change(id, status, "failed".equals(status) ? (failureReason == null ? "lost_or_stolen_card" : failureReason) : null);
    }

    private Refund change(String id, String status, String failureReason) {
        Refund before = byId.get(id);
        if (before == null) {
            throw new IllegalArgumentException("no refund " + id);
        }
        Refund after = new Refund(before.id(), before.paymentIntentId(), before.amount(), before.currency(), status, before.reason(),
                before.metadata(), before.created(), before.createdNanos(), before.idempotencyKey(), failureReason);
        byId.put(id, after);
        webhooks.emit("failed".equals(status) ? "refund.failed" : "refund.updated", toJson(after));
        webhooks.emit("charge.refund.updated", toJson(after));
        return after;
    }

    Response control(String path, Map<String, String> query) {
        if (path.endsWith("/settle")) {
            String id = path.substring("/_sandbox/refunds/".length(), path.length() - "/settle".length());
            return Response.json(200, toJson(settle(id, query.getOrDefault("status", "succeeded"), query.get("failure_reason"))));
        }
        if (path.endsWith("/requests")) {
            return Response.json(200, "{\"create_requests\":" + createRequests() + "}");
        }
        String key = query.get("key");
        StringBuilder json = new StringBuilder("{\"data\":[");
        List<Refund> all = key == null ? all() : forKey(key);
        for (int i = 0; i < all.size(); i++) {
            String refund = toJson(all.get(i));
            json.append(i == 0 ? "" : ",").append(refund, 0, refund.length() - 1)
                    .append(",\"sandbox_idempotency_key\":").append(SandboxJson.quote(all.get(i).idempotencyKey())).append('}');
        }
        return Response.json(200, json.append("]}").toString());
    }

    /** Every refund, as it is now, oldest first. */
    public List<Refund> all() {
        synchronized (ledger) {
            return ledger.stream().map(r -> byId.get(r.id())).toList();
        }
    }

    /** The refunds whose {@code chargeonce_key} metadata (a refund's identity) is {@code identity}. */
    public List<Refund> forKey(String identity) {
        return all().stream().filter(r -> identity.equals(r.metadata().get("chargeonce_key"))).toList();
    }

    /** How many refund creates reached the sandbox (refused and faulted ones included). */
    public int createRequests() {
        return createRequests.get();
    }

    void clear() {
        createRequests.set(0);
        byId.clear();
        ledger.clear();
    }

    private String list(Map<String, String> query) {
        int limit = Math.min(100, Integer.parseInt(query.getOrDefault("limit", "10")));
        long gte = Long.parseLong(query.getOrDefault("created[gte]", "0"));
        long lte = Long.parseLong(query.getOrDefault("created[lte]", Long.toString(Long.MAX_VALUE)));
        String pi = query.get("payment_intent");
        // A PaymentIntent has one charge here (it is never confirmed twice): ch_ and pi_ share their suffix.
        String charge = query.get("charge");
        String startingAfter = query.get("starting_after");
        List<Refund> newestFirst = new ArrayList<>(all());
        newestFirst.sort(java.util.Comparator.comparingLong(Refund::created).thenComparingLong(Refund::createdNanos).reversed());
        StringBuilder page = new StringBuilder();
        int count = 0;
        boolean skipping = startingAfter != null;
        boolean more = false;
        for (Refund refund : newestFirst) {
            if (skipping) {
                skipping = !refund.id().equals(startingAfter);
                continue;
            }
            if (refund.created() < gte || refund.created() > lte || (pi != null && !pi.equals(refund.paymentIntentId()))
                    || (charge != null && !charge.equals(chargeId(refund.paymentIntentId())))) {
                continue;
            }
            if (count == limit) {
                more = true;
                break;
            }
            page.append(count++ == 0 ? "" : ",").append(toJson(refund));
        }
        return "{\"object\":\"list\",\"url\":\"/v1/refunds\",\"has_more\":" + more + ",\"data\":[" + page + "]}";
    }

    private static Response missing() {
        return Response.json(404, SandboxJson.error("invalid_request_error", "resource_missing", "No such refund", "refund"));
    }

    static String toJson(Refund refund) {
        StringBuilder json = new StringBuilder(256)
                .append("{\"id\":").append(SandboxJson.quote(refund.id()))
                .append(",\"object\":\"refund\"")
                .append(",\"amount\":").append(refund.amount())
                .append(",\"currency\":").append(SandboxJson.quote(refund.currency()))
                .append(",\"charge\":").append(SandboxJson.quote(chargeId(refund.paymentIntentId())))
                .append(",\"payment_intent\":").append(SandboxJson.quote(refund.paymentIntentId()))
                .append(",\"status\":").append(SandboxJson.quote(refund.status()))
                .append(",\"reason\":").append(SandboxJson.quote(refund.reason()))
                // Stripe sends failure_reason only on a refund that failed: absent otherwise, never null.
                .append(refund.failureReason() == null ? "" : ",\"failure_reason\":" + SandboxJson.quote(refund.failureReason()))
                .append(",\"created\":").append(refund.created())
                .append(",\"metadata\":{");
        int i = 0;
        for (Map.Entry<String, String> e : new LinkedHashMap<>(new TreeMap<>(refund.metadata())).entrySet()) {
            json.append(i++ == 0 ? "" : ",").append(SandboxJson.quote(e.getKey())).append(':').append(SandboxJson.quote(e.getValue()));
        }
        return json.append("}}").toString();
    }
}

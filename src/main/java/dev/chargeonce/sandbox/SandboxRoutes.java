package dev.chargeonce.sandbox;

import static dev.chargeonce.sandbox.SandboxJson.error;
import static dev.chargeonce.sandbox.SandboxJson.quote;

import dev.chargeonce.sandbox.SandboxHttp.Response;
import dev.chargeonce.sandbox.StripeSandbox.PaymentIntent;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Which part of the sandbox answers a request: Stripe's API under {@code /v1} (an API key required) and the control
 * plane under {@code /_sandbox} (see {@link StripeSandbox} for both).
 */
final class SandboxRoutes {

    private final SandboxPaymentIntents intents;
    private final SandboxRefunds refunds;
    private final SandboxCustomers customers;
    private final SandboxWebhooks webhooks;
    private final SandboxFaults faults;
    private final SandboxIdempotency answers;
    private final SandboxLimits limits;
    /** {@code POST /_sandbox/reset}: the whole sandbox, as {@link StripeSandbox#reset}. */
    private final Runnable reset;
    private final AtomicLong apiRequests = new AtomicLong();

    SandboxRoutes(SandboxPaymentIntents intents, SandboxRefunds refunds, SandboxCustomers customers, SandboxWebhooks webhooks,
                  SandboxFaults faults, SandboxIdempotency answers, SandboxLimits limits, Runnable reset) {
        this.intents = intents;
        this.refunds = refunds;
        this.customers = customers;
        this.webhooks = webhooks;
        this.faults = faults;
        this.answers = answers;
        this.limits = limits;
        this.reset = reset;
    }

    /** The endpoints the sandbox serves, by Stripe's names: what a rate limit counts (see {@link SandboxLimits}). */
    static final List<String> ENDPOINTS = List.of("payment_intents.create", "payment_intents.list", "payment_intents.retrieve",
            "payment_intents.cancel", "refunds.create", "refunds.list", "refunds.retrieve", "refunds.cancel",
            "customers.create", "customers.retrieve", "events.list");

    /**
     * The endpoint an API request is for ({@code POST /v1/payment_intents}: {@code payment_intents.create}; {@code GET
     * /v1/payment_intents/{id}}: {@code payment_intents.retrieve}, whichever the id), {@code other} for what the
     * sandbox does not serve.
     */
    static String endpoint(String method, String path) {
        String[] parts = path.split("/");
        if (parts.length < 3 || !parts[1].equals("v1")) {
            return "other";
        }
        String action = switch (parts.length) {
            case 3 -> method.equals("POST") ? "create" : method.equals("GET") ? "list" : "";
            case 4 -> method.equals("GET") ? "retrieve" : "";
            case 5 -> method.equals("POST") ? parts[4] : "";
            default -> "";
        };
        String endpoint = parts[2] + "." + action;
        return ENDPOINTS.contains(endpoint) ? endpoint : "other";
    }

    /** Requests to Stripe's API (not the control plane), since the start or the last reset. */
    long apiRequests() {
        return apiRequests.get();
    }

    void clear() {
        apiRequests.set(0);
    }

    /** The answer to one request; null: the connection is dropped without one. */
    Response handle(String method, String target, Map<String, String> headers, String body) {
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        Map<String, String> query = SandboxHttp.parseForm(q < 0 ? "" : target.substring(q + 1));
        if (path.startsWith("/_sandbox/")) {
            return control(method, path, query);
        }
        apiRequests.incrementAndGet();
        String requestId = "req_" + SandboxJson.randomId(14);
        String idempotencyKey = headers.get("Idempotency-Key");
        Response answer = !headers.getOrDefault("Authorization", "").startsWith("Bearer sk_")
                ? Response.json(401, error("invalid_request_error", null, "Invalid API Key provided.", null))
                : SandboxWebhooks.causedBy(new SandboxWebhooks.CausingRequest(requestId, idempotencyKey),
                        () -> limits.apply(endpoint(method, path), () -> api(method, path, query, headers, body)));
        return withRequestHeaders(method, requestId, idempotencyKey, answer);
    }

    /**
     * Stripe's headers of an API answer: its {@code Request-Id} (the one its events name) and, on a POST, the
     * request's {@code Idempotency-Key} echoed back (stripe-java reads it as {@code StripeResponse.idempotencyKey()});
     * an answer's own headers win (the edge's empty ones: no such header).
     */
    private static Response withRequestHeaders(String method, String requestId, String idempotencyKey, Response answer) {
        if (answer == null) {
            return null;
        }
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Request-Id", requestId);
        if (idempotencyKey != null && method.equals("POST")) {
            headers.put("Idempotency-Key", idempotencyKey);
        }
        headers.putAll(answer.headers());
        return new Response(answer.status(), answer.body(), headers);
    }

    /** A request to Stripe's API that its rate limits admitted. */
    private Response api(String method, String path, Map<String, String> query, Map<String, String> headers, String body) {
        if (method.equals("POST") && path.equals("/v1/payment_intents")) {
            Map<String, String> form = SandboxHttp.parseForm(body);
            if (headers.containsKey("Sandbox-Created")) {
                form.put("__sandbox_created", headers.get("Sandbox-Created"));
            }
            return intents.create(headers.get("Idempotency-Key"), form);
        }
        if (method.equals("GET") && path.equals("/v1/payment_intents")) {
            return intents.list(query);
        }
        if (path.startsWith("/v1/refunds")) {
            Map<String, String> form = SandboxHttp.parseForm(body);
            return refunds.handle(method, path, query, form, headers.get("Idempotency-Key"));
        }
        if (method.equals("POST") && path.startsWith("/v1/payment_intents/") && path.endsWith("/cancel")) {
            return intents.cancel(path.substring("/v1/payment_intents/".length(), path.length() - "/cancel".length()),
                    SandboxHttp.parseForm(body));
        }
        if (method.equals("POST") && path.equals("/v1/customers")) {
            return customers.create(SandboxHttp.parseForm(body));
        }
        if (method.equals("GET") && path.startsWith("/v1/customers/")) {
            return customers.retrieve(path.substring("/v1/customers/".length()));
        }
        if (method.equals("GET") && path.equals("/v1/events")) {
            SandboxFaults.sleep(faults.eventsListLatencyMillis());
            return webhooks.list(query);
        }
        if (method.equals("GET") && path.startsWith("/v1/payment_intents/")) {
            return intents.retrieve(path.substring("/v1/payment_intents/".length()));
        }
        return Response.json(404, error("invalid_request_error", null, "Unrecognized request URL (" + method + ": " + path + ")", null));
    }

    private Response control(String method, String path, Map<String, String> query) {
        if (path.startsWith("/_sandbox/payment_intents/") && path.endsWith("/backdate")) {
            String id = path.substring("/_sandbox/payment_intents/".length(), path.length() - "/backdate".length());
            return Response.json(200, SandboxPaymentIntents.toJson(intents.backdate(id, Long.parseLong(query.getOrDefault("seconds", "0")))));
        }
        // Stripe's Dashboard: what the account's people do at Stripe, without the service (none of its metadata).
        if (path.equals("/_sandbox/dashboard/payment_intents")) {
            return intents.dashboard(query);
        }
        if (path.equals("/_sandbox/dashboard/refunds")) {
            return refunds.dashboard(query);
        }
        if (path.startsWith("/_sandbox/refunds")) {
            return refunds.control(path, query);
        }
        if (path.startsWith("/_sandbox/payment_intents/") && path.endsWith("/authenticate")) {
            String id = path.substring("/_sandbox/payment_intents/".length(), path.length() - "/authenticate".length());
            try {
                return Response.json(200, SandboxPaymentIntents.toJson(intents.authenticate(id, !"failed".equals(query.get("result")))));
            } catch (IllegalArgumentException e) {
                // Too late (canceled meanwhile) or no such PaymentIntent: an answer, not a dropped connection.
                return Response.json(400, error("invalid_request_error", "payment_intent_unexpected_state", e.getMessage(), null));
            }
        }
        if (path.startsWith("/_sandbox/payment_intents/") && path.endsWith("/forget")) {
            // Stripe losing a PaymentIntent the service knows: what reconciliation must notice (missing at Stripe).
            String id = path.substring("/_sandbox/payment_intents/".length(), path.length() - "/forget".length());
            return Response.json(200, "{\"forgotten\":" + intents.forget(id) + "}");
        }
        if (path.startsWith("/_sandbox/payment_intents/") && path.endsWith("/settle")) {
            String id = path.substring("/_sandbox/payment_intents/".length(), path.length() - "/settle".length());
            return Response.json(200, SandboxPaymentIntents.toJson(intents.settle(id, query.getOrDefault("status", "succeeded"))));
        }
        switch (path) {
            case "/_sandbox/webhooks" -> {
                webhooks.configure(query);
                if (Boolean.parseBoolean(query.getOrDefault("redeliver", "false"))) {
                    webhooks.redeliverAll();
                }
                return Response.json(200, webhooks.stats());
            }
            case "/_sandbox/events" -> {
                return Response.json(200, webhooks.seed(query));
            }
            case "/_sandbox/customers" -> {
                return customers.control(query);
            }
            case "/_sandbox/forget_seeded" -> {
                return Response.json(200, "{\"forgotten\":" + intents.forgetSeeded() + "}");
            }
            case "/_sandbox/seed" -> {
                long now = System.currentTimeMillis() / 1000;
                Map<String, String> metadata = new LinkedHashMap<>();
                query.forEach((k, v) -> {
                    if (k.startsWith("metadata[") && k.endsWith("]")) {
                        metadata.put(k.substring(9, k.length() - 1), v);
                    }
                });
                List<PaymentIntent> made = intents.seed(Integer.parseInt(query.getOrDefault("count", "1")),
                        Long.parseLong(query.getOrDefault("created_from", Long.toString(now))),
                        Long.parseLong(query.getOrDefault("created_to", Long.toString(now))),
                        query.getOrDefault("status", "succeeded"), metadata);
                return Response.json(200, "{\"seeded\":" + made.size() + ",\"last\":" + quote(made.isEmpty() ? null : made.get(made.size() - 1).id()) + "}");
            }
            case "/_sandbox/reset" -> {
                reset.run();
                return Response.json(200, "{\"reset\":true}");
            }
            case "/_sandbox/limits" -> {
                try {
                    return Response.json(200, method.equals("POST") ? limits.configure(query) : limits.json());
                } catch (IllegalArgumentException e) {
                    return Response.json(400, error("invalid_request_error", null, e.getMessage(), null));
                }
            }
            case "/_sandbox/limits/clear" -> {
                return Response.json(200, limits.clearRecords());
            }
            case "/_sandbox/faults" -> {
                return Response.json(200, faults.configure(query));
            }
            case "/_sandbox/stats" -> {
                long charged = intents.ledger().stream().filter(PaymentIntent::charged).count();
                return Response.json(200, "{\"create_requests\":" + answers.createRequests() + ",\"api_requests\":" + apiRequests.get()
                        + ",\"payment_intents\":" + intents.count() + ",\"succeeded\":" + charged + ",\"executing\":" + answers.executing() + "}");
            }
            case "/_sandbox/ledger" -> {
                StringBuilder json = new StringBuilder("{\"data\":[");
                String chargeId = query.get("charge_id");
                String key = query.get("key");
                // (stats and ledger are read-only views)
                List<PaymentIntent> all = key != null ? intents.forKey(key) : chargeId == null ? intents.ledger() : intents.forCharge(chargeId);
                for (int i = 0; i < all.size(); i++) {
                    String pi = SandboxPaymentIntents.toJson(all.get(i));
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
}

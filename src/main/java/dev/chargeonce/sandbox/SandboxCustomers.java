package dev.chargeonce.sandbox;

import dev.chargeonce.sandbox.SandboxHttp.Response;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sandbox's Customers, what a merchant created in Stripe beforehand: {@code POST /v1/customers} (with
 * {@code metadata[...]}), {@code GET /v1/customers/{id}}, and {@code POST /_sandbox/customers?id=&client=} (a
 * customer with a chosen id, named for a client in its {@code chargeonce_client_id} metadata or not).
 */
final class SandboxCustomers {

    /** Customers, by id, as their JSON (id, object, created, livemode, metadata: what Stripe always sends). */
    private final Map<String, String> customers = new ConcurrentHashMap<>();

    /** {@code POST /v1/customers}. */
    Response create(Map<String, String> form) {
        String id = "cus_" + SandboxJson.randomId(14);
        StringBuilder metadata = new StringBuilder();
        form.forEach((k, v) -> {
            if (k.startsWith("metadata[") && k.endsWith("]")) {
                metadata.append(metadata.length() == 0 ? "" : ",").append(SandboxJson.quote(k.substring(9, k.length() - 1)))
                        .append(':').append(SandboxJson.quote(v));
            }
        });
        String json = toJson(id, metadata.toString());
        customers.put(id, json);
        return Response.json(200, json);
    }

    /** {@code GET /v1/customers/{id}}. */
    Response retrieve(String id) {
        String customer = customers.get(id);
        return customer != null ? Response.json(200, customer) : Response.json(404, SandboxJson.error("invalid_request_error",
                "resource_missing", "No such customer: '" + id + "'", "id"));
    }

    /** {@code POST /_sandbox/customers}: a customer with a chosen id (tests that need a long or a known one). */
    Response control(Map<String, String> query) {
        String id = query.getOrDefault("id", "cus_" + SandboxJson.randomId(14));
        String client = query.get("client");
        String json = toJson(id, client == null ? "" : "\"chargeonce_client_id\":" + SandboxJson.quote(client));
        customers.put(id, json);
        return Response.json(200, json);
    }

    /** A customer made now, its metadata's members already written as JSON. */
    private static String toJson(String id, String metadataMembers) {
        return "{\"id\":" + SandboxJson.quote(id) + ",\"object\":\"customer\",\"created\":" + System.currentTimeMillis() / 1000
                + ",\"livemode\":false,\"metadata\":{" + metadataMembers + "}}";
    }
}

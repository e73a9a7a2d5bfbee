package dev.chargeonce.sandbox;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/**
 * Stripe's API of a sandbox over plain HTTP, as a client sends it (form bodies, the API key, an optional
 * Idempotency-Key): for tests that check what the sandbox writes byte for byte (a field absent, not null).
 */
final class SandboxApiClient {

    static final ObjectMapper JSON = new ObjectMapper();

    private final String base;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    SandboxApiClient(String base) {
        this.base = base;
    }

    /** {@code POST path} with a form body; {@code idempotencyKey} null: none sent. */
    HttpResponse<String> post(String path, String form, String idempotencyKey) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path))
                .header("Authorization", "Bearer sk_test_sandbox")
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form));
        if (idempotencyKey != null) {
            request.header("Idempotency-Key", idempotencyKey);
        }
        return send(request.build());
    }

    HttpResponse<String> get(String path) {
        return send(HttpRequest.newBuilder(URI.create(base + path)).header("Authorization", "Bearer sk_test_sandbox").build());
    }

    /** {@code POST} to the control plane ({@code /_sandbox/...}), no body. */
    HttpResponse<String> control(String pathAndQuery) {
        return send(HttpRequest.newBuilder(URI.create(base + pathAndQuery)).POST(HttpRequest.BodyPublishers.noBody()).build());
    }

    static JsonNode json(HttpResponse<String> answer) {
        try {
            return JSON.readTree(answer.body());
        } catch (Exception e) {
            throw new IllegalStateException("not JSON: " + answer.body(), e);
        }
    }

    /** The events of one type about one object id, newest first, as {@code GET /v1/events} lists them. */
    JsonNode eventAbout(String type, String objectId) {
        for (JsonNode event : json(get("/v1/events?limit=100&type=" + type)).get("data")) {
            if (objectId.equals(event.at("/data/object/id").asText())) {
                return event;
            }
        }
        throw new AssertionError("no " + type + " event about " + objectId);
    }

    private HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}

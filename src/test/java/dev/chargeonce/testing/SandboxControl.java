package dev.chargeonce.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;

/** The sandbox's control plane over HTTP: its ledger (what Stripe charged), counters and fault switches. */
public final class SandboxControl {

    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newHttpClient();
    private final String base;

    public SandboxControl(String base) {
        this.base = base;
    }

    /** PaymentIntents whose metadata names this charge id. */
    public List<JsonNode> intentsForCharge(String chargeId) {
        List<JsonNode> out = new ArrayList<>();
        get("/_sandbox/ledger?charge_id=" + chargeId).get("data").forEach(out::add);
        return out;
    }

    public List<JsonNode> ledger() {
        List<JsonNode> out = new ArrayList<>();
        get("/_sandbox/ledger").get("data").forEach(out::add);
        return out;
    }

    /** Every request the Stripe API part received (creates, lists, reads). */
    public long apiRequests() {
        return get("/_sandbox/stats").get("api_requests").asLong();
    }

    public long createRequests() {
        return get("/_sandbox/stats").get("create_requests").asLong();
    }

    /** Sets fault switches, e.g. {@code faults("fail_before=1")} or {@code faults("latency_ms=3000")}. */
    public void faults(String query) {
        post("/_sandbox/faults?" + query);
    }

    public void clearFaults() {
        faults("latency_ms=0&fail_before=0&fail_after=0&drop_after=0&rate_limit=0");
    }

    private JsonNode get(String path) {
        return send(HttpRequest.newBuilder(URI.create(base + path)).GET().build());
    }

    private JsonNode post(String path) {
        return send(HttpRequest.newBuilder(URI.create(base + path)).POST(HttpRequest.BodyPublishers.noBody()).build());
    }

    private JsonNode send(HttpRequest request) {
        try {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            return JSON.readTree(response.body());
        } catch (IOException e) {
            throw new IllegalStateException("sandbox control plane unreachable at " + base, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

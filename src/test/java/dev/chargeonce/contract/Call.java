package dev.chargeonce.contract;

import static dev.chargeonce.contract.ContractSupport.CHARGE;
import static dev.chargeonce.contract.ContractSupport.CHARGES;
import static dev.chargeonce.contract.ContractSupport.CHARGE_REFUNDS;
import static dev.chargeonce.contract.ContractSupport.KEY;
import static dev.chargeonce.contract.ContractSupport.REFUND;
import static dev.chargeonce.testing.TestClients.ACME_KEY;

import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleRequest;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Collectors;

/** One request of the contract's checks, as the service receives it and as the validator sees it. */
final class Call {
    final Request.Method method;
    final String template;
    final String path;
    final Map<String, String> query = new LinkedHashMap<>();
    final Map<String, String> headers = new LinkedHashMap<>();
    final String body;

    Call(Request.Method method, String template, String path, String body) {
        this.method = method;
        this.template = template;
        this.path = path;
        this.body = body;
        headers.put("Authorization", "Bearer " + ACME_KEY);
    }

    /** A POST as a client sends it; a null key sends no Idempotency-Key header. */
    static Call createCharge(String idempotencyKey, String body) {
        Call call = new Call(Request.Method.POST, CHARGES, CHARGES, body);
        call.headers.put("Content-Type", "application/json");
        if (idempotencyKey != null) {
            call.headers.put("Idempotency-Key", idempotencyKey);
        }
        return call;
    }

    /** A refund POST; a null key sends no Idempotency-Key header, a null body sends none. */
    static Call createRefund(String chargeId, String idempotencyKey, String body) {
        Call call = new Call(Request.Method.POST, CHARGE_REFUNDS, CHARGES + "/" + chargeId + "/refunds", body);
        call.headers.put("Content-Type", "application/json");
        if (idempotencyKey != null) {
            call.headers.put("Idempotency-Key", idempotencyKey);
        }
        return call;
    }

    static Call listRefunds(String chargeId) {
        return new Call(Request.Method.GET, CHARGE_REFUNDS, CHARGES + "/" + chargeId + "/refunds", null);
    }

    static Call getRefund(String id) {
        return new Call(Request.Method.GET, REFUND, "/v1/refunds/" + id, null);
    }

    /** GET the key's status; the key percent-encoded into the path. */
    static Call getKey(String key) {
        return new Call(Request.Method.GET, KEY, "/v1/idempotency-keys/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20"), null);
    }

    static Call getCharge(String id) {
        return new Call(Request.Method.GET, CHARGE, CHARGES + "/" + id, null);
    }

    static Call listCharges() {
        return new Call(Request.Method.GET, CHARGES, CHARGES, null);
    }

    /** What Stripe sends the webhook endpoint: no API key; {@code signature} null sends no signature. */
    static Call webhook(String event, String signature) {
        Call call = new Call(Request.Method.POST, "/v1/webhooks/stripe", "/v1/webhooks/stripe", event);
        call.headers.remove("Authorization");
        call.headers.put("Content-Type", "application/json");
        if (signature != null) {
            call.headers.put("Stripe-Signature", signature);
        }
        return call;
    }

    /** A document the service serves (not an API operation: never validated against the contract). */
    static Call document(String path) {
        return new Call(Request.Method.GET, path, path, null);
    }

    Call header(String name, String value) {
        headers.put(name, value);
        return this;
    }

    Call without(String name) {
        headers.remove(name);
        return this;
    }

    Call query(String name, String value) {
        query.put(name, value);
        return this;
    }

    SimpleRequest asValidatorRequest() {
        SimpleRequest.Builder request = new SimpleRequest.Builder(method, path);
        headers.forEach(request::withHeader);
        query.forEach(request::withQueryParam);
        if (body != null) {
            request.withBody(body);
        }
        return request.build();
    }

    String pathAndQuery() {
        return path + (query.isEmpty() ? "" : "?" + query.entrySet().stream()
                .map(e -> e.getKey() + "=" + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
                .collect(Collectors.joining("&")));
    }

    boolean needsRawBytes() {
        return headers.values().stream().anyMatch(value -> value.chars().anyMatch(c -> c > 0x7e));
    }

    HttpRequest asHttpRequest(URI base) {
        HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(pathAndQuery()))
                .timeout(Duration.ofSeconds(30))
                .method(method.name(), body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
        headers.forEach(request::header);
        return request.build();
    }

    @Override
    public String toString() {
        return method + " " + path + (query.isEmpty() ? "" : " " + query) + " " + headers.keySet();
    }
}

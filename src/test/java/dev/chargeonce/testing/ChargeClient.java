package dev.chargeonce.testing;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** A plain HTTP client of {@code POST /v1/charges}, for tests that talk to service processes. */
public final class ChargeClient {

    public static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final String apiKey;

    public ChargeClient(String apiKey) {
        this.apiKey = apiKey;
    }

    /** POSTs a charge; a connection failure (the service died mid-request) comes back as status -1. */
    public Answer post(URI charges, String idempotencyKey, String body, Duration timeout) {
        HttpRequest request = HttpRequest.newBuilder(charges).timeout(timeout)
                .header("Authorization", "Bearer " + apiKey).header("Idempotency-Key", idempotencyKey)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
        try {
            HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
            return new Answer(r.statusCode(), r.body(), r.headers().firstValue("Idempotent-Replayed").isPresent(),
                    r.headers().firstValue("Retry-After").orElse(null));
        } catch (IOException e) {
            return new Answer(-1, e.toString(), false, null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Answer(-1, "interrupted", false, null);
        }
    }

    public HttpResponse<String> get(URI uri) {
        try {
            return http.send(HttpRequest.newBuilder(uri).header("Authorization", "Bearer " + apiKey).build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public record Answer(int status, String body, boolean replayed, String retryAfter) {
    }
}

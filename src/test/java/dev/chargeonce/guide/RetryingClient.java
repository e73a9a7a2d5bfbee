package dev.chargeonce.guide;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;

/** The retry guide's client (docs/contract.md), as code a client can copy: java.net.http only, no SDK. */
public final class RetryingClient {

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final URI charges;
    private final String apiKey;

    public RetryingClient(URI charges, String apiKey) {
        this.charges = charges;
        this.apiKey = apiKey;
    }

    /** A final answer: its status and body, and how many requests it took. */
    public record Result(int status, String body, int attempts) {
    }

    /** One payment: a new key, made once, and sent again unchanged on every retry. */
    public Result charge(String json, Duration giveUpAfter) throws InterruptedException {
        return send(UUID.randomUUID().toString(), json, giveUpAfter);
    }

    public Result send(String idempotencyKey, String json, Duration giveUpAfter) throws InterruptedException {
        long deadline = System.nanoTime() + giveUpAfter.toNanos();
        Duration backoff = Duration.ofMillis(500);
        for (int attempt = 1; ; attempt++) {
            HttpRequest request = HttpRequest.newBuilder(charges)
                    .timeout(Duration.ofSeconds(40))                     // longer than the service's own Stripe budget
                    .header("Authorization", "Bearer " + apiKey)
                    .header("Idempotency-Key", idempotencyKey)          // the same key on every retry
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(json))    // the same body on every retry
                    .build();
            Duration wait;
            try {
                HttpResponse<String> answer = http.send(request, HttpResponse.BodyHandlers.ofString());
                int status = answer.statusCode();
                if (status != 409 && status != 429 && status < 500) {
                    return new Result(status, answer.body(), attempt);  // final: 201/202, 402, 400, 404, 422...
                }
                // 409 (in flight), 429, 503 (unknown outcome, unavailable): not final, retry with the same key.
                wait = answer.headers().firstValue("Retry-After").map(s -> Duration.ofSeconds(Long.parseLong(s))).orElse(backoff);
            } catch (IOException timeoutOrDrop) {
                wait = backoff;                                          // no answer: the same key makes a retry safe
            }
            if (System.nanoTime() + wait.toNanos() > deadline) {
                throw new IllegalStateException("no final answer after " + attempt + " requests; retry later with key " + idempotencyKey);
            }
            Thread.sleep(wait.toMillis());
            backoff = backoff.multipliedBy(2).compareTo(Duration.ofSeconds(30)) > 0 ? Duration.ofSeconds(30) : backoff.multipliedBy(2);
        }
    }
}

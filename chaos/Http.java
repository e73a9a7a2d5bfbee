package chaos;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.Executors;

/**
 * The clients' HTTP: every request an {@link Answer}, whatever happened to it (a connection refused or a timeout is
 * status -1, as a client sees it), and the plain calls of the stand-in's control plane.
 */
final class Http {
    static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(1)).executor(Executors.newVirtualThreadPerTaskExecutor()).build();

    static Answer post(URI uri, String apiKey, String key, String body, Duration timeout) {
        long at = System.currentTimeMillis();
        return postAt(uri, apiKey, key, body, timeout).sent(at, uri);
    }

    static Answer postAt(URI uri, String apiKey, String key, String body, Duration timeout) {
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(timeout)
                .header("Authorization", "Bearer " + apiKey).header("Idempotency-Key", key)
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
        try {
            HttpResponse<String> r = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
            return new Answer(r.statusCode(), r.body(), r.headers().firstValue("Idempotent-Replayed").isPresent(),
                    r.headers().firstValue("Retry-After").orElse(null));
        } catch (IOException e) {
            return new Answer(-1, e.getClass().getSimpleName(), false, null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Answer(-1, "interrupted", false, null);
        }
    }

    static Answer get(URI uri, String apiKey, Duration timeout) {
        long at = System.currentTimeMillis();
        return getAt(uri, apiKey, timeout).sent(at, uri);
    }

    static Answer getAt(URI uri, String apiKey, Duration timeout) {
        try {
            HttpResponse<String> r = CLIENT.send(HttpRequest.newBuilder(uri).timeout(timeout)
                    .header("Authorization", "Bearer " + apiKey).GET().build(), HttpResponse.BodyHandlers.ofString());
            return new Answer(r.statusCode(), r.body(), false, null);
        } catch (IOException e) {
            return new Answer(-1, e.getClass().getSimpleName(), false, null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Answer(-1, "interrupted", false, null);
        }
    }

    static String call(String method, URI uri) throws IOException {
        try {
            HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30));
            b = method.equals("POST") ? b.POST(HttpRequest.BodyPublishers.noBody()) : b.GET();
            HttpResponse<String> r = CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IOException(method + " " + uri + " -> " + r.statusCode() + " " + r.body());
            }
            return r.body();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }
}

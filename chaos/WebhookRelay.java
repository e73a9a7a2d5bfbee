package chaos;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stripe's webhook endpoint for the instances, which have no load balancer: the stand-in delivers every event here,
 * and each delivery goes on to one instance picked at random, dead or alive. An instance that is down (killed,
 * restarting) or cut from its database fails the delivery (502 / its 5xx), and the stand-in retries it, as Stripe
 * does; what the instance answers goes back to the stand-in as it is.
 */
final class WebhookRelay {
    final List<Instance> instances;
    final int port = Chaos.freePort();
    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(1)).executor(Executors.newVirtualThreadPerTaskExecutor()).build();
    final AtomicLong deliveries = new AtomicLong();
    final AtomicLong acknowledged = new AtomicLong();
    final AtomicLong duplicatesAcknowledged = new AtomicLong();
    /** 5xx from an instance (database cut, shutting down): the stand-in retries. */
    final AtomicLong failed = new AtomicLong();
    /** No answer from the instance picked (down, restarting, killed mid-request): 502, the stand-in retries. */
    final AtomicLong unreachable = new AtomicLong();
    /** 4xx: the instance refused a genuine, signed event (a violation: Stripe would give up on the endpoint). */
    final AtomicLong refused = new AtomicLong();
    final List<String> refusals = Collections.synchronizedList(new ArrayList<>());
    HttpServer server;

    WebhookRelay(List<Instance> instances) {
        this.instances = instances;
    }

    String url() {
        return "http://127.0.0.1:" + port + "/v1/webhooks/stripe";
    }

    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 512);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", this::relay);
        server.start();
    }

    void relay(HttpExchange exchange) throws IOException {
        try (exchange) {
            byte[] body = exchange.getRequestBody().readAllBytes();
            deliveries.incrementAndGet();
            Instance target = instances.get(ThreadLocalRandom.current().nextInt(instances.size()));
            HttpRequest.Builder forward = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + target.port + "/v1/webhooks/stripe"))
                    .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.ofByteArray(body));
            String signature = exchange.getRequestHeaders().getFirst("Stripe-Signature");
            if (signature != null) {
                forward.header("Stripe-Signature", signature);
            }
            String type = exchange.getRequestHeaders().getFirst("Content-Type");
            forward.header("Content-Type", type == null ? "application/json" : type);
            int status;
            byte[] answer;
            try {
                HttpResponse<byte[]> r = client.send(forward.build(), HttpResponse.BodyHandlers.ofByteArray());
                status = r.statusCode();
                answer = r.body();
            } catch (IOException e) {
                unreachable.incrementAndGet();
                status = 502;
                answer = ("{\"relay\":\"" + target.name() + " unreachable: " + e.getClass().getSimpleName() + "\"}")
                        .getBytes(StandardCharsets.UTF_8);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                status = 502;
                answer = new byte[0];
            }
            String text = new String(answer, StandardCharsets.UTF_8);
            if (status / 100 == 2) {
                acknowledged.incrementAndGet();
                if (text.contains("\"duplicate\":true")) {
                    duplicatesAcknowledged.incrementAndGet();
                }
            } else if (status / 100 == 4) {
                refused.incrementAndGet();
                if (refusals.size() < 50) {
                    refusals.add(target.name() + " answered " + status + " " + text + " to "
                            + new String(body, 0, Math.min(body.length, 300), StandardCharsets.UTF_8));
                }
            } else if (answer.length == 0 || !text.startsWith("{\"relay\"")) {
                failed.incrementAndGet();
            }
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(status, answer.length == 0 ? -1 : answer.length);
            if (answer.length > 0) {
                exchange.getResponseBody().write(answer);
            }
        }
    }

    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }
}

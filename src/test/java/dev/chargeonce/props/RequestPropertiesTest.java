package dev.chargeonce.props;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * Properties over the whole request space, with generated requests ({@link Gen}): random JSON of every type,
 * nesting and size, text that is not valid Unicode, bytes that are not UTF-8, duplicate keys, numbers beyond long,
 * hostile or missing or repeated headers, content types, Accept values. For every one: a documented 4xx in the
 * error shape (the HTTP server's own refusals included), never a 5xx, no stack trace or class name, and Stripe not
 * asked unless the request was a valid charge. And the fingerprint is canonical: the same request in another key
 * order or spacing replays; any changed value is a 422. {@code -Dprops.seed=<seed>} replays a run.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class RequestPropertiesTest {

    static final int HOSTILE_CASES = 400;
    static final int FINGERPRINT_CASES = 60;
    static final Set<Integer> DOCUMENTED_FOR_POST = Set.of(201, 202, 400, 401, 402, 406, 409, 413, 414, 415, 422, 431);
    static final ObjectMapper JSON = new ObjectMapper();

    @TestHTTPResource("/")
    URL root;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    record Answer(int status, Map<String, String> headers, String body) {
    }

    Answer send(String method, String target, List<byte[]> headerLines, byte[] body) throws IOException {
        ByteArrayOutputStream request = new ByteArrayOutputStream();
        request.write((method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n").getBytes(StandardCharsets.US_ASCII));
        for (byte[] line : headerLines) {
            request.write(line);
            request.write("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        if (body != null) {
            request.write(("Content-Length: " + body.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        }
        request.write("\r\n".getBytes(StandardCharsets.US_ASCII));
        if (body != null) {
            request.write(body);
        }
        byte[] received;
        try (Socket socket = new Socket(root.getHost(), root.getPort())) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            try {
                out.write(request.toByteArray());
                out.flush();
            } catch (IOException e) {
                // the server may answer and close before the whole body is written
            }
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            InputStream in = socket.getInputStream();
            byte[] buffer = new byte[8192];
            try {
                for (int n; (n = in.read(buffer)) > 0; ) {
                    answer.write(buffer, 0, n);
                }
            } catch (IOException e) {
                // a reset after the answer
            }
            received = answer.toByteArray();
        }
        String text = new String(received, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            throw new IOException("no HTTP answer: " + text);
        }
        String[] lines = text.substring(0, end).split("\r\n");
        Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, colon).trim(), lines[i].substring(colon + 1).trim());
        }
        return new Answer(Integer.parseInt(lines[0].split(" ")[1]), headers,
                new String(received, end + 4, received.length - end - 4, StandardCharsets.UTF_8));
    }

    static byte[] header(String name, byte[] value) {
        byte[] head = (name + ": ").getBytes(StandardCharsets.US_ASCII);
        byte[] line = new byte[head.length + value.length];
        System.arraycopy(head, 0, line, 0, head.length);
        System.arraycopy(value, 0, line, head.length, value.length);
        return line;
    }

    static byte[] header(String name, String value) {
        return header(name, value.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** The error shape, and nothing of the implementation in it: the HTTP server's own refusals too. */
    static void assertErrorShape(Answer answer, String what) throws IOException {
        assertTrue(answer.headers().getOrDefault("Content-Type", "").startsWith("application/json"), what + ": " + answer);
        JsonNode error = JSON.readTree(answer.body()).path("error");
        assertTrue(error.path("type").isTextual() && error.path("code").isTextual() && error.path("message").isTextual(),
                what + ": the error shape: " + answer);
        for (String leak : List.of("Exception", "java.", "at dev.", "org.jboss", "io.vertx", "jakarta.")) {
            assertFalse(answer.body().contains(leak), what + ": no implementation detail in an answer: " + answer);
        }
    }

    @Test
    void everyGeneratedRequestGetsADocumentedAnswerInTheErrorShapeAndReachesStripeOnlyWhenValid() throws Exception {
        long seed = Gen.seed();
        Gen gen = new Gen(seed);
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        Map<Integer, Integer> byStatus = new TreeMap<>();
        for (int i = 0; i < HOSTILE_CASES; i++) {
            String what = "seed " + seed + " case " + i;
            List<byte[]> headers = new ArrayList<>();
            int auth = gen.between(0, 9);
            if (auth > 1) {
                headers.add(header("Authorization", "Bearer " + ACME_KEY));
            } else if (auth == 1) {
                headers.add(header("Authorization", gen.oneOf(List.of("Bearer ", "Basic " + ACME_KEY, "Bearer sk_unknown", "bearer " + ACME_KEY))));
            }
            byte[] key = gen.idempotencyKey();
            if (key != null) {
                headers.add(header("Idempotency-Key", key));
                if (gen.chance(0.05)) {
                    headers.add(header("Idempotency-Key", key)); // repeated
                }
            }
            String type = gen.contentType();
            if (!type.isEmpty()) {
                headers.add(header("Content-Type", type));
            }
            String accept = gen.accept();
            if (!accept.isEmpty()) {
                headers.add(header("Accept", accept));
            }
            Collections.shuffle(headers, gen.random);
            long stripeBefore = stripe.createRequests();
            Answer answer;
            String target;
            byte[] body = null;
            if (gen.chance(0.15)) {
                target = gen.oneOf(List.of("/v1/charges/chg_" + Long.toHexString(gen.random.nextLong()), "/v1/charges/%00",
                        "/v1/charges?limit=" + gen.number(), "/v1/charges?limit=", "/v1/charges?limit=1&limit=2",
                        "/v1/refunds/rfd_%F0%9F", "/v1/charges/" + "x".repeat(gen.between(1, 300)) + "/refunds"));
                answer = send("GET", target, headers, null);
                assertTrue(Set.of(200, 400, 401, 404, 406).contains(answer.status()), what + ": GET " + target + " -> " + answer);
            } else {
                target = "/v1/charges";
                body = gen.chargeBody();
                answer = send("POST", target, headers, body);
                assertTrue(DOCUMENTED_FOR_POST.contains(answer.status()), what + ": a documented status: " + answer);
            }
            byStatus.merge(answer.status(), 1, Integer::sum);
            assertTrue(answer.status() < 500, what + ": never a 5xx: " + answer);
            if (answer.status() >= 400) {
                assertErrorShape(answer, what);
            }
            boolean stripeAsked = answer.status() == 201 || answer.status() == 202 || answer.status() == 402
                    || (answer.status() == 400 && answer.body().contains("\"charge\":"));
            if (!stripeAsked) {
                assertEquals(stripeBefore, stripe.createRequests(), what + ": a refused request never makes anything at Stripe: " + answer);
            }
        }
        System.out.printf("request properties: %d generated requests (seed %d), answers by status %s%n", HOSTILE_CASES, seed, byStatus);
        assertTrue(byStatus.keySet().size() >= 5, "the generator reaches many answers, not one: " + byStatus);
    }

    @Test
    void theFingerprintIsCanonicalKeyOrderAndSpacingReplayAnyOtherValueIs422() throws Exception {
        long seed = Gen.seed();
        Gen gen = new Gen(seed);
        for (int i = 0; i < FINGERPRINT_CASES; i++) {
            String what = "seed " + seed + " case " + i;
            Map<String, Object> charge = new LinkedHashMap<>();
            charge.put("amount", gen.between(1, 99_999_999));
            charge.put("currency", gen.oneOf(List.of("usd", "eur", "gbp", "jpy")));
            charge.put("payment_method", "pm_card_visa");
            if (gen.chance(0.5)) {
                charge.put("description", "order " + gen.between(1, 1_000_000) + (gen.chance(0.3) ? " \uD83D\uDCB3" : ""));
            }
            Map<String, String> metadata = new LinkedHashMap<>();
            for (int m = 0, n = gen.between(0, 5); m < n; m++) {
                metadata.put("k" + m + "_" + gen.between(0, 99), "v" + gen.between(0, 9999));
            }
            if (!metadata.isEmpty()) {
                charge.put("metadata", metadata);
            }
            String key = "fp-" + seed + "-" + i;
            Answer first = post(key, render(gen, charge, false));
            assertEquals(201, first.status(), what + ": " + first);
            Answer again = post(key, render(gen, charge, true));
            assertEquals(201, again.status(), what + ": another order and spacing is the same request: " + again);
            assertEquals("true", again.headers().get("Idempotent-Replayed"), what);
            assertEquals(first.body(), again.body(), what + ": replayed byte for byte");

            Map<String, Object> changed = new LinkedHashMap<>(charge);
            switch (gen.between(0, 3)) {
                case 0 -> changed.put("amount", ((Integer) charge.get("amount")) % 99_999_999 + 1);
                case 1 -> changed.put("currency", charge.get("currency").equals("usd") ? "eur" : "usd");
                case 2 -> changed.put("description", charge.getOrDefault("description", "") + "!");
                default -> {
                    Map<String, String> other = new LinkedHashMap<>(metadata);
                    other.put("changed", "yes");
                    changed.put("metadata", other);
                }
            }
            Answer reused = post(key, render(gen, changed, true));
            assertEquals(422, reused.status(), what + ": any changed value is another request: " + reused);
            assertEquals("idempotency_key_reused", JSON.readTree(reused.body()).path("error").path("code").asText(), what);
        }
    }

    Answer post(String key, String body) throws IOException {
        return send("POST", "/v1/charges", List.of(header("Authorization", "Bearer " + ACME_KEY), header("Idempotency-Key", key),
                header("Content-Type", "application/json")), body.getBytes(StandardCharsets.UTF_8));
    }

    /** The map as JSON text: its keys (and its metadata's) in a random order when {@code shuffled}, with random spacing. */
    @SuppressWarnings("unchecked")
    static String render(Gen gen, Map<String, Object> value, boolean shuffled) {
        List<Map.Entry<String, Object>> entries = new ArrayList<>(value.entrySet());
        if (shuffled) {
            Collections.shuffle(entries, gen.random);
        }
        StringBuilder json = new StringBuilder("{");
        for (int i = 0; i < entries.size(); i++) {
            Map.Entry<String, Object> e = entries.get(i);
            String space = shuffled ? " ".repeat(gen.between(0, 3)) : "";
            json.append(i == 0 ? "" : "," + space).append('"').append(e.getKey()).append('"').append(space).append(':').append(space);
            Object v = e.getValue();
            if (v instanceof Map<?, ?> map) {
                json.append(render(gen, (Map<String, Object>) map, shuffled));
            } else if (v instanceof Number) {
                json.append(v);
            } else {
                json.append(quote((String) v));
            }
        }
        return json.append(shuffled && gen.chance(0.5) ? " \n}" : "}").toString();
    }

    static String quote(String text) {
        try {
            return JSON.writeValueAsString(text);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}

package dev.chargeonce.sandbox;

import dev.chargeonce.sandbox.SandboxHttp.Response;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stripe's idempotency, for every create (PaymentIntents and refunds alike), with the fault switches that reach a
 * create: the same key and the same parameters replay the first answer (even a 500, or a 402 decline) with
 * {@code Idempotent-Replayed: true}; the same key and other parameters answer {@code 400 idempotency_error}; a key
 * whose first request is still running answers {@code 409}; 429s, an edge's 5xx and a request that failed parameter
 * validation are not stored. A key is bound to its endpoint and its parameters.
 *
 * <p>Stripe (https://docs.stripe.com/api/idempotent_requests): "Results are only saved if an API endpoint started
 * executing. If incoming parameters failed validation, or the request conflicted with another that was executing
 * concurrently, no idempotent result is saved because no API endpoint began execution. You can retry these
 * requests." So a create refused by its {@link Validation} leaves its key free: the same key with fixed parameters
 * runs. A refusal that comes from the state of things once the endpoint ran (a refund of more than is left) is saved.
 */
final class SandboxIdempotency {

    /** What a key's first request answered ({@code finished} false: it is still running). */
    private record StoredAnswer(String paramsFingerprint, int status, String body, boolean finished) {
    }

    /** A create's parameter validation, before its endpoint executes: its 400, or null when the parameters are valid. */
    @FunctionalInterface
    interface Validation {
        Response refusal(Map<String, String> params);
    }

    /** How a create request is carried out once the key lets it run ({@code planned}: the plan's step, or ""). */
    @FunctionalInterface
    interface Execution {
        Response execute(String idempotencyKey, Map<String, String> params, String planned);
    }

    /** A 5xx from Stripe's edge: HTML, no {@code Request-Id} nor {@code Idempotency-Key}, never a stored answer of the key. */
    private static final Response EDGE_ERROR = new Response(502, "<html><body><h1>502 Bad Gateway</h1></body></html>",
            Map.of("Content-Type", "text/html", "Request-Id", "", "Idempotency-Key", ""));

    private final SandboxFaults faults;
    private final Map<String, StoredAnswer> answers = new ConcurrentHashMap<>();
    private final AtomicLong createRequests = new AtomicLong();
    private final AtomicInteger executing = new AtomicInteger();

    SandboxIdempotency(SandboxFaults faults) {
        this.faults = faults;
    }

    /**
     * A create request with Stripe's idempotency and the fault switches: plan steps and counters apply to every
     * create (PaymentIntents and refunds alike), and a key is bound to its endpoint and parameters. Null: the
     * connection is dropped without an answer.
     */
    Response idempotent(String endpoint, String idempotencyKey, Map<String, String> params, Validation validation,
                        Execution execution) {
        createRequests.incrementAndGet();
        SandboxFaults.Step step = faults.nextStep();
        String kind = step == null ? "" : step.kind();
        if (kind.equals("edge")) {
            // Stripe's edge failed: the API never saw the request, so nothing ran and nothing is stored for the key.
            return EDGE_ERROR;
        }
        if (kind.equals("rate_limit") || (step == null && faults.consumeRateLimit())) {
            // Stripe does not store 429s for a key: the request was not executed.
            return new Response(429, SandboxJson.error("invalid_request_error", "rate_limit",
                    "Too many requests hit the API too quickly.", null), Map.of());
        }
        String fingerprint = endpoint + " " + new TreeMap<>(params);
        StoredAnswer running = new StoredAnswer(fingerprint, 0, null, false);
        if (idempotencyKey != null) {
            StoredAnswer previous = answers.putIfAbsent(idempotencyKey, running);
            if (previous != null) {
                if (!previous.paramsFingerprint().equals(fingerprint)) {
                    return Response.json(400, SandboxJson.error("idempotency_error", null,
                            "Keys for idempotent requests can only be used with the same parameters they were first used with. "
                                    + "Try using a key other than '" + idempotencyKey + "' if you meant to execute a different request.",
                            null));
                }
                if (!previous.finished()) {
                    return Response.json(409, SandboxJson.error("invalid_request_error", "idempotency_key_in_use",
                            "There is currently another in-progress request using this Idempotent Key.", null));
                }
                return maybeDrop(new Response(previous.status(), previous.body(), Map.of("Idempotent-Replayed", "true")),
                        kind.equals("drop"));
            }
        }
        // A slow request keeps running whether or not its client still waits for it, as at Stripe.
        executing.incrementAndGet();
        Response answer;
        try {
            if (kind.equals("hold")) {
                faults.awaitRelease(step.millis());
            } else {
                SandboxFaults.sleep(kind.equals("slow") ? step.millis() : faults.latencyMillis());
            }
            Response refusal = validation.refusal(params);
            if (refusal != null) {
                // No endpoint began executing: nothing is saved for the key, which a retry may use again.
                if (idempotencyKey != null) {
                    answers.remove(idempotencyKey, running);
                }
                return maybeDrop(refusal, kind.equals("drop"));
            }
            answer = execution.execute(idempotencyKey, params, kind);
        } finally {
            executing.decrementAndGet();
        }
        if (idempotencyKey != null) {
            answers.put(idempotencyKey, new StoredAnswer(fingerprint, answer.status(), answer.body(), true));
        }
        return maybeDrop(answer, kind.equals("drop"));
    }

    private Response maybeDrop(Response answer, boolean planned) {
        return planned || (!planned && faults.consumeDrop()) ? null : answer;
    }

    /** Create requests received (refused, faulted and replayed ones included; not those the rate limits refused before). */
    long createRequests() {
        return createRequests.get();
    }

    /** Create requests that are still executing (a slow step or latency): Stripe has not answered them yet. */
    int executing() {
        return executing.get();
    }

    /** Forgets every key and the count of create requests (not the requests still executing). */
    void clear() {
        answers.clear();
        createRequests.set(0);
    }
}

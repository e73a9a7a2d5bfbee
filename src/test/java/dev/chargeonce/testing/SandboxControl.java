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

    /** The sandbox's ledger of PaymentIntents filtered by a query ({@code key=<identity>}, {@code charge_id=...}). */
    public JsonNode ledger(String query) {
        return get("/_sandbox/ledger?" + query).get("data");
    }

    /** PaymentIntents of one (client, Idempotency-Key), whichever row or attempt made them (see StripeSandbox#intentsForKey). */
    public List<JsonNode> intentsFor(String clientId, String idempotencyKey) {
        List<JsonNode> out = new ArrayList<>();
        get("/_sandbox/ledger?key=" + dev.chargeonce.testing.TestKeys.identity(clientId, idempotencyKey)).get("data").forEach(out::add);
        return out;
    }

    /** Refunds of one (client, refund Idempotency-Key) at Stripe, whichever row or attempt made them. */
    public List<JsonNode> refundsFor(String clientId, String idempotencyKey) {
        List<JsonNode> out = new ArrayList<>();
        get("/_sandbox/refunds?key=" + dev.chargeonce.testing.TestKeys.refundIdentity(clientId, idempotencyKey))
                .get("data").forEach(out::add);
        return out;
    }

    /** Every refund at Stripe, as it is now, oldest first. */
    public List<JsonNode> refunds() {
        List<JsonNode> out = new ArrayList<>();
        get("/_sandbox/refunds").get("data").forEach(out::add);
        return out;
    }

    /** How many refund creates reached Stripe (refused and faulted ones included; not those its rate limits refused). */
    public long refundCreateRequests() {
        return get("/_sandbox/refunds/requests").get("create_requests").asLong();
    }

    /** A pending refund reaches its outcome ({@code succeeded}, {@code failed}), with its event. */
    public JsonNode settleRefund(String stripeRefundId, String status) {
        return post("/_sandbox/refunds/" + stripeRefundId + "/settle?status=" + status);
    }

    /** Scripts the next create requests one by one, e.g. {@code plan("slow:3000", "edge")} (StripeSandbox#plan). */
    public void plan(String... steps) {
        faults("plan=" + String.join(",", steps));
    }

    /** Adds PaymentIntents the service did not make; {@code query} as the sandbox's seed control takes it. */
    public JsonNode seed(String query) {
        return post("/_sandbox/seed?" + query);
    }

    /** Removes every seeded PaymentIntent (other tests' lookups should not page through them). */
    public void forgetSeeded() {
        post("/_sandbox/forget_seeded");
    }

    /** Moves a PaymentIntent's creation time back, as if the charge had been made that long ago. */
    public void backdate(String paymentIntentId, java.time.Duration by) {
        post("/_sandbox/payment_intents/" + paymentIntentId + "/backdate?seconds=" + by.toSeconds());
    }

    /** Webhook delivery switches and counters ({@code url=}, {@code lose=true}, {@code duplicates=10}, ...). */
    public JsonNode webhooks(String query) {
        return post("/_sandbox/webhooks?" + query);
    }

    /** The customer completes ({@code succeeded}) or fails ({@code failed}) 3-D Secure, as in Stripe.js. */
    public JsonNode authenticate(String paymentIntentId, String result) {
        return post("/_sandbox/payment_intents/" + paymentIntentId + "/authenticate?result=" + result);
    }

    /** The PaymentIntent as Stripe has it now. */
    public JsonNode paymentIntent(String paymentIntentId) {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/payment_intents/" + paymentIntentId))
                    .header("Authorization", "Bearer sk_test_sandbox").GET().build(), HttpResponse.BodyHandlers.ofString());
            return JSON.readTree(r.body());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * A refund made at Stripe without this service (from the Dashboard, say): the whole of what is left of the
     * PaymentIntent, with no idempotency key and none of the service's metadata.
     */
    public JsonNode refundOutsideTheService(String paymentIntentId) {
        return refundOutsideTheService(paymentIntentId, "");
    }

    /** The same, with extra form parameters ({@code &amount=100&metadata[chargeonce_key]=...}). */
    public JsonNode refundOutsideTheService(String paymentIntentId, String moreForm) {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/refunds"))
                    .header("Authorization", "Bearer sk_test_sandbox")
                    .header("Content-Type", "application/x-www-form-urlencoded")
                    .POST(HttpRequest.BodyPublishers.ofString("payment_intent=" + paymentIntentId + moreForm)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new AssertionError("the sandbox refused the outside refund: " + r.statusCode() + " " + r.body());
            }
            return JSON.readTree(r.body());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * A payment made in Stripe's Dashboard: succeeded, with none of the service's metadata; its events
     * ({@code payment_intent.succeeded}) go to the configured webhook endpoint like any other.
     */
    public JsonNode dashboardPayment(long amount, String currency, String customer) {
        JsonNode pi = post("/_sandbox/dashboard/payment_intents?amount=" + amount + "&currency=" + currency
                + (customer == null ? "" : "&customer=" + customer));
        if (!pi.path("id").asText().startsWith("pi_")) {
            throw new AssertionError("the sandbox refused the Dashboard payment: " + pi);
        }
        return pi;
    }

    /**
     * A refund made in Stripe's Dashboard (null amount: all that is left), with none of the service's metadata; its
     * events ({@code refund.created}, {@code charge.refunded}) go to the configured webhook endpoint like any other.
     */
    public JsonNode dashboardRefund(String paymentIntentId, Long amount) {
        JsonNode refund = post("/_sandbox/dashboard/refunds?payment_intent=" + paymentIntentId + (amount == null ? "" : "&amount=" + amount));
        if (!refund.path("id").asText().startsWith("re_")) {
            throw new AssertionError("the sandbox refused the Dashboard refund: " + refund);
        }
        return refund;
    }

    /**
     * Stripe's events of one type about one object ({@code pi_…}, {@code re_…}, {@code ch_…}), newest first, each as
     * Stripe sends it: what a test delivers to the webhook endpoint itself, in the order and as often as it likes.
     */
    public List<String> eventsAbout(String type, String objectId) {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/events?limit=100&type=" + type))
                    .header("Authorization", "Bearer sk_test_sandbox").GET().build(), HttpResponse.BodyHandlers.ofString());
            List<String> out = new ArrayList<>();
            for (JsonNode event : JSON.readTree(r.body()).get("data")) {
                if (objectId.equals(event.path("data").path("object").path("id").asText())) {
                    out.add(event.toString());
                }
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A Customer at Stripe with this id, naming {@code clientId} in its metadata (null: naming no client). */
    public JsonNode customer(String id, String clientId) {
        return post("/_sandbox/customers?id=" + java.net.URLEncoder.encode(id, java.nio.charset.StandardCharsets.UTF_8)
                + (clientId == null ? "" : "&client=" + clientId));
    }

    /** Stripe loses a PaymentIntent (for reconciliation's "missing at Stripe"). */
    public void forget(String paymentIntentId) {
        post("/_sandbox/payment_intents/" + paymentIntentId + "/forget");
    }

    /** A pending PaymentIntent reaches its outcome. */
    public JsonNode settle(String paymentIntentId, String status) {
        return post("/_sandbox/payment_intents/" + paymentIntentId + "/settle?status=" + status);
    }

    /** Waits until no create request is executing at the sandbox (a slow one has made its PaymentIntent or failed). */
    public void awaitIdle(java.time.Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (get("/_sandbox/stats").get("executing").asInt() > 0) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the sandbox is still executing create requests after " + timeout);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
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

    /**
     * Stripe's rate limits, the whole configuration at once (absent or 0: no limit), e.g.
     * {@code limit("default=25&global=25&concurrency=4&payment_intents.create=25")}; the records are kept until a reset.
     * Fault switches ({@link #clearFaults}) leave it on.
     */
    public JsonNode limit(String query) {
        JsonNode answer = post("/_sandbox/limits?" + query);
        if (!answer.path("on").asBoolean()) {
            throw new AssertionError("the sandbox refused the limits " + query + ": " + answer);
        }
        return answer;
    }

    /** No rate limits any more (the records are kept until a reset). */
    public void unlimit() {
        post("/_sandbox/limits?off=1");
    }

    /** The limits' configuration and records: {@code endpoints.<name>.admitted / refused.<reason> / max_in_any_second}. */
    public JsonNode limits() {
        return get("/_sandbox/limits");
    }

    /** Forgets what the limits admitted and refused so far, the limits kept: the next phase of a test is measured alone. */
    public JsonNode clearLimitRecords() {
        return post("/_sandbox/limits/clear");
    }

    /** The most PaymentIntent creates Stripe admitted in any one second while the limits were on. */
    public int maxCreatesInAnySecond() {
        return limits().path("endpoints").path("payment_intents.create").path("max_in_any_second").asInt();
    }

    /** PaymentIntent creates the limits refused (429), whatever the reason. */
    public long createsRefused() {
        long refused = 0;
        for (JsonNode count : limits().path("endpoints").path("payment_intents.create").path("refused")) {
            refused += count.asLong();
        }
        return refused;
    }

    public void clearFaults() {
        faults("latency_ms=0&fail_before=0&fail_after=0&drop_after=0&rate_limit=0&list_empty_has_more=0&list_latency_ms=0&list_rate_limit=0&events_list_latency_ms=0&plan=");
    }

    /**
     * Events Stripe made while the endpoint was down (listed by the Events API, never delivered), {@code created}
     * spread from {@code from} to {@code to} (epoch seconds); their ids, oldest first.
     */
    public List<String> lostEvents(int count, String type, long from, long to) {
        List<String> ids = new ArrayList<>();
        post("/_sandbox/events?count=" + count + "&type=" + type + "&created_from=" + from + "&created_to=" + to)
                .get("ids").forEach(id -> ids.add(id.asText()));
        return ids;
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

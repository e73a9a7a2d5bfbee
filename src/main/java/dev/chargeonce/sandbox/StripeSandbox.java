package dev.chargeonce.sandbox;

import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * A stand-in for the slice of Stripe's API that chargeonce uses, with Stripe's idempotency semantics.
 *
 * <p>It speaks plain HTTP/1.1 on a raw socket (JDK only, no framework) so that it can run inside the dev
 * service, inside a test JVM, or as its own process ({@code java -cp target/classes
 * dev.chargeonce.sandbox.StripeSandbox 12111}) and outlive a service that is killed with {@code kill -9}.
 * A raw socket also lets it do what a real network does and a framework would hide: drop a connection
 * after the charge was made, without an answer.
 *
 * <p>Emulated: {@code POST /v1/payment_intents} (create + confirm), {@code GET /v1/payment_intents/{id}},
 * {@code GET /v1/payment_intents} (newest first, {@code created[gte]}, {@code created[lte]}, {@code limit},
 * {@code starting_after}). A test may backdate a create with the sandbox-only header {@code Sandbox-Created}
 * (epoch seconds), to stand for a payment made long ago.
 * Idempotency as Stripe does it: same key and same parameters replay the first answer (even a 500 or a 402 decline)
 * with {@code Idempotent-Replayed: true}; same key and other parameters answer {@code 400 idempotency_error};
 * a key whose first request is still running answers {@code 409}; 429 answers and a 400 of parameter validation are
 * not stored (see {@link SandboxIdempotency}). Every API answer has a {@code Request-Id}, a POST's echoes its
 * {@code Idempotency-Key}, and an event names the API request that caused it ({@code request.id},
 * {@code request.idempotency_key}; null when nothing in the API did).
 *
 * <p>What it answers has the shape of Stripe's published API (version {@value SandboxWebhooks#DEFAULT_API_VERSION},
 * as stripe-java 33.3.0 reads it): fields Stripe always sends are there (a customer's {@code created} and
 * {@code livemode}, a PaymentIntent's {@code canceled_at} and {@code cancellation_reason}, null until canceled),
 * fields it sends only in some states are absent otherwise (a refund's {@code failure_reason}: only when it failed),
 * fields it sends only when expanded are absent (a charge's {@code refunds}, in the {@code charge.refunded} events of
 * every refund: {@link SandboxRefunds}), a decline names its charge ({@code latest_charge}, the 402's
 * {@code error.charge}) and payment method, and an amount above 99999999 is {@code amount_too_large}. A charge is
 * only ever an event's object: {@code /v1/charges} is not served (the service never reads it).
 *
 * <p>Control plane under {@code /_sandbox}: {@code GET ledger} ({@code ?charge_id=} or {@code ?key=}, the
 * {@code chargeonce_key} metadata), {@code GET stats}, {@code POST reset},
 * {@code POST faults?latency_ms=&fail_before=&fail_after=&drop_after=&rate_limit=&list_empty_has_more=&list_latency_ms=&events_list_latency_ms=&plan=&release=},
 * {@code POST seed}, {@code POST payment_intents/{id}/backdate?seconds=}
 * (PaymentIntents made behind the service's back: {@code count}, {@code created_from}, {@code created_to},
 * {@code status}, {@code metadata[...]}) and {@code POST payment_intents/{id}/settle?status=} (a pending payment
 * reaches its outcome). {@code POST dashboard/payment_intents?amount=&currency=&customer=} and {@code POST
 * dashboard/refunds?payment_intent=&amount=} act as Stripe's Dashboard: a payment or a refund without the service's
 * metadata, with the events Stripe makes for them. The fault counters apply to the next N create requests.
 * {@code POST limits?default=&global=&concurrency=&<endpoint>=} switches on Stripe's rate limits ({@code off=1}: off
 * again), {@code GET limits} answers what each endpoint admitted and refused ({@code max_in_any_second}) and
 * {@code POST limits/clear} forgets it (the limits kept): see
 * {@link SandboxLimits}; a process takes them at start-up ({@code -Dsandbox.limits=default=25,global=25}).
 *
 * <p>{@code plan} scripts the next create requests one by one, before any counter: a comma-separated list of
 * steps, e.g. {@code plan=slow:3000,edge,ok}. {@code slow:N} executes after N ms whether or not the client
 * is still waiting (a request keeps running at Stripe after the client gave up); {@code hold:N} executes when the
 * control plane says {@code release=1} (or after N ms): a test decides when Stripe answers; {@code edge} is a 5xx from Stripe's
 * edge: not JSON, no {@code Request-Id}, nothing executed and nothing stored for the key.
 *
 * <p>The payment method {@code pm_sandbox_processing} leaves its PaymentIntent {@code processing} (as a bank debit
 * does) until it is settled through the control plane; {@code pm_card_authenticationRequired} and
 * {@code pm_card_threeDSecure2Required} leave it {@code requires_action} until {@code POST
 * /_sandbox/payment_intents/{id}/authenticate?result=succeeded|failed} (the customer, in Stripe.js) or a cancel.
 * Every change becomes an event ({@code GET /v1/events}: {@code starting_after} and {@code ending_before})
 * delivered to a webhook endpoint: see {@link SandboxWebhooks}, {@code POST /_sandbox/webhooks} and
 * {@code POST /_sandbox/events} (events made while the endpoint was down, never delivered). Also:
 * {@code POST /v1/payment_intents/{id}/cancel}.
 *
 * <p>This class starts and stops the sandbox and is what a test in the same JVM switches and observes. The parts:
 * {@link SandboxHttp} (the socket), {@link SandboxRoutes} (which part answers a path), {@link SandboxPaymentIntents},
 * {@link SandboxRefunds}, {@link SandboxCustomers}, {@link SandboxWebhooks} (events), {@link SandboxIdempotency}
 * (the keys' stored answers), {@link SandboxFaults} (the switches and the plan) and {@link SandboxLimits} (Stripe's
 * rate limits).
 */
public final class StripeSandbox implements AutoCloseable {

    /**
     * One PaymentIntent the sandbox created: the ledger is the source of truth for "charged exactly once".
     * {@code canceledAt} (epoch seconds) and {@code cancellationReason} are null until it is canceled.
     */
    public record PaymentIntent(String id, long amount, String currency, String status, String paymentMethod,
                                String customer, String description, Map<String, String> metadata, long created,
                                long createdNanos, String idempotencyKey, String declineCode, Long canceledAt,
                                String cancellationReason) {

        /** A PaymentIntent that was never canceled. */
        public PaymentIntent(String id, long amount, String currency, String status, String paymentMethod, String customer,
                             String description, Map<String, String> metadata, long created, long createdNanos,
                             String idempotencyKey, String declineCode) {
            this(id, amount, currency, status, paymentMethod, customer, description, metadata, created, createdNanos,
                    idempotencyKey, declineCode, null, null);
        }

        public boolean charged() {
            return "succeeded".equals(status);
        }

        /**
         * A charge was attempted for it (succeeded, declined, or pending at the bank): what its {@code latest_charge}
         * names. A PaymentIntent waiting for 3-D Secure has none yet.
         */
        public boolean chargeAttempted() {
            return charged() || "processing".equals(status) || declineCode != null;
        }

        /** Canceled now, for {@code reason} (null: none given). */
        PaymentIntent canceled(long at, String reason) {
            return new PaymentIntent(id, amount, currency, "canceled", paymentMethod, customer, description, metadata, created,
                    createdNanos, idempotencyKey, declineCode, at, reason);
        }
    }

    private final SandboxFaults faults = new SandboxFaults();
    private final SandboxIdempotency answers = new SandboxIdempotency(faults);
    private final SandboxWebhooks webhooks = new SandboxWebhooks();
    private final SandboxPaymentIntents intents = new SandboxPaymentIntents(answers, faults, webhooks);
    private final SandboxRefunds refunds = new SandboxRefunds(intents, answers, faults, webhooks);
    private final SandboxCustomers customers = new SandboxCustomers();
    private final SandboxLimits limits = new SandboxLimits(System::nanoTime);
    private final SandboxRoutes routes = new SandboxRoutes(intents, refunds, customers, webhooks, faults, answers, limits, this::reset);
    private final SandboxHttp http;

    private StripeSandbox(int port) throws IOException {
        this.http = SandboxHttp.start(port, routes);
    }

    /** Starts a sandbox on 127.0.0.1; port 0 picks a free one. */
    public static StripeSandbox start(int port) throws IOException {
        return new StripeSandbox(port);
    }

    /**
     * {@code [port [latency_ms [limits]]]}: 12111, no latency and no rate limits unless told. {@code limits} (or the
     * system property {@code sandbox.limits}) as {@code default=25,global=25,concurrency=0,payment_intents.create=25}:
     * see {@link #limitAtStart}.
     */
    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 12111;
        StripeSandbox sandbox = start(port);
        if (args.length > 1) {
            sandbox.setLatencyMillis(Long.parseLong(args[1]));
        }
        String limits = args.length > 2 ? args[2] : System.getProperty("sandbox.limits", "");
        if (!limits.isBlank()) {
            sandbox.limitAtStart(limits);
        }
        System.out.println("stripe-sandbox listening on " + sandbox.baseUrl() + " latency_ms=" + sandbox.faults.latencyMillis()
                + " limits=" + sandbox.limits.json());
        Thread.currentThread().join();
    }

    public String baseUrl() {
        return "http://127.0.0.1:" + http.port();
    }

    public int port() {
        return http.port();
    }

    @Override
    public void close() throws IOException {
        webhooks.close();
        http.close();
    }

    // ---- fault switches and observations, for tests in the same JVM -------------------------------------

    /** Its events and their delivery to a webhook endpoint. */
    public SandboxWebhooks webhooks() {
        return webhooks;
    }

    /** Its refunds. */
    public SandboxRefunds refunds() {
        return refunds;
    }

    public void setLatencyMillis(long millis) {
        faults.setLatencyMillis(millis);
    }

    public void failNextBeforeCharging(int count) {
        faults.failNextBeforeCharging(count);
    }

    public void failNextAfterCharging(int count) {
        faults.failNextAfterCharging(count);
    }

    public void dropNextResponses(int count) {
        faults.dropNextResponses(count);
    }

    public void rateLimitNext(int count) {
        faults.rateLimitNext(count);
    }

    /**
     * Stripe's rate limits from now on, and after every reset: {@code default=25,global=25,concurrency=2,
     * payment_intents.create=25} (0 or absent: no limit), or {@code off=1}. See {@link SandboxLimits}.
     */
    public void limitAtStart(String spec) {
        limits.configureAtStart(spec);
    }

    /** Stripe's rate limits until the next reset ({@code default=25&global=25&...} or {@code off=1}). */
    public void limit(String query) {
        limits.configure(SandboxHttp.parseForm(query));
    }

    /** What {@code GET /_sandbox/limits} answers: the configuration, and what each endpoint admitted and refused. */
    public String limitsJson() {
        return limits.json();
    }

    /** Scripts the next create requests, one step each (see the class comment). */
    public void plan(String... steps) {
        faults.plan(steps);
    }

    /** Lets every create held on a {@code hold} step execute now. */
    public void releaseHeld() {
        faults.releaseHeld();
    }

    /** Steps of the plan not used yet. */
    public int planLeft() {
        return faults.planLeft();
    }

    /**
     * Adds {@code count} PaymentIntents that the service did not make (other payments of the same account), created
     * evenly between the two epoch seconds, with the given status and metadata.
     */
    public List<PaymentIntent> seed(int count, long createdFrom, long createdTo, String status, Map<String, String> metadata) {
        return intents.seed(count, createdFrom, createdTo, status, metadata);
    }

    /** Removes one PaymentIntent from everything the API shows. */
    public boolean forget(String id) {
        return intents.forget(id);
    }

    /** Removes what {@link #seed} added, so that other tests' lookups do not page through it. */
    public int forgetSeeded() {
        return intents.forgetSeeded();
    }

    /** A pending PaymentIntent reaches its outcome ({@code succeeded}, or {@code requires_payment_method} = failed). */
    public PaymentIntent settle(String paymentIntentId, String status) {
        return intents.settle(paymentIntentId, status);
    }

    /**
     * The customer completes (or fails) the 3-D Secure authentication of a PaymentIntent that requires action, as
     * Stripe.js would after the merchant's page showed the challenge.
     */
    public PaymentIntent authenticate(String paymentIntentId, boolean success) {
        return intents.authenticate(paymentIntentId, success);
    }

    /**
     * PaymentIntents of one (client, Idempotency-Key): its {@code chargeonce_key} metadata (the service's stable
     * identity of a charge) is {@code identity}, or it was created with a Stripe key derived from it
     * ({@code chargeonce-<identity>-a<attempt>}).
     */
    public List<PaymentIntent> intentsForKey(String identity) {
        return intents.forKey(identity);
    }

    /** Moves a PaymentIntent's {@code created} back in time, as if it had been made that much earlier. */
    public PaymentIntent backdate(String paymentIntentId, long seconds) {
        return intents.backdate(paymentIntentId, seconds);
    }

    /** Create requests that are still executing (a slow step or latency): Stripe has not answered them yet. */
    public int executing() {
        return answers.executing();
    }

    public List<PaymentIntent> ledger() {
        return intents.ledger();
    }

    /** PaymentIntents whose metadata names the given chargeonce charge id. */
    public List<PaymentIntent> intentsForCharge(String chargeId) {
        return intents.forCharge(chargeId);
    }

    public long createRequests() {
        return answers.createRequests();
    }

    public long apiRequests() {
        return routes.apiRequests();
    }

    public void reset() {
        answers.clear();
        intents.clear();
        routes.clear();
        faults.clear();
        webhooks.clear();
        refunds.clear();
        limits.reset();
    }
}

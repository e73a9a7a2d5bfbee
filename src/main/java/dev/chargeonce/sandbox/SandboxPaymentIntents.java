package dev.chargeonce.sandbox;

import static dev.chargeonce.sandbox.SandboxJson.error;
import static dev.chargeonce.sandbox.SandboxJson.quote;

import dev.chargeonce.sandbox.SandboxHttp.Response;
import dev.chargeonce.sandbox.StripeSandbox.PaymentIntent;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sandbox's PaymentIntents, as Stripe makes and lists them: {@code POST /v1/payment_intents} (create + confirm,
 * through {@link SandboxIdempotency}), {@code GET /v1/payment_intents} (newest first), {@code GET
 * /v1/payment_intents/{id}}, {@code POST /v1/payment_intents/{id}/cancel}; and what only the control plane does to
 * them (settle, 3-D Secure completed, backdate, seed, forget, a payment made in Stripe's Dashboard). The ledger is the source of truth for "charged
 * exactly once". Every change becomes an event ({@link SandboxWebhooks}).
 */
final class SandboxPaymentIntents {

    /** Stripe's largest amount for most currencies, in their smallest unit (99,999,999 cents: $999,999.99). */
    static final long MAX_AMOUNT = 99_999_999L;

    private final SandboxIdempotency answers;
    private final SandboxFaults faults;
    private final SandboxWebhooks webhooks;
    private final Map<String, PaymentIntent> intents = new ConcurrentHashMap<>();
    /** Append-only; read by copying under its lock (a copy-on-write list would copy on every create). */
    private final List<PaymentIntent> ledger = Collections.synchronizedList(new ArrayList<>());
    /** The ledger sorted as Stripe lists it (newest {@code created} first), rebuilt only after a change. */
    private volatile List<PaymentIntent> listOrder = List.of();
    private volatile boolean listOrderStale;
    /**
     * Held while a PaymentIntent changes after its create (settle, 3-D Secure completion, cancel): Stripe applies one
     * change of a PaymentIntent at a time, so a check of its status and the change it allows are one step, and its
     * events are made in the order of its changes.
     */
    private final Object transitions = new Object();

    SandboxPaymentIntents(SandboxIdempotency answers, SandboxFaults faults, SandboxWebhooks webhooks) {
        this.answers = answers;
        this.faults = faults;
        this.webhooks = webhooks;
    }

    // ---- the API -------------------------------------------------------------------------------------------------

    /** {@code POST /v1/payment_intents}: created and confirmed at once. */
    Response create(String idempotencyKey, Map<String, String> params) {
        return answers.idempotent("/v1/payment_intents", idempotencyKey, params, SandboxPaymentIntents::invalid, this::execute);
    }

    /** {@code GET /v1/payment_intents/{id}}. */
    Response retrieve(String id) {
        PaymentIntent pi = intents.get(id);
        return pi == null
                ? Response.json(404, error("invalid_request_error", "resource_missing", "No such payment_intent", "intent"))
                : Response.json(200, toJson(pi));
    }

    /** The test payment methods the sandbox knows (Stripe's test tokens, and a bank debit that stays processing). */
    private static final List<String> PAYMENT_METHODS = List.of("pm_card_visa", "pm_card_mastercard", "pm_card_amex",
            "pm_card_chargeDeclined", "pm_card_visa_chargeDeclinedInsufficientFunds", "pm_card_authenticationRequired",
            "pm_card_threeDSecure2Required", "pm_sandbox_processing");

    /**
     * A create's parameter validation, before anything executes (null: valid). Its 400 is not saved for the
     * request's Idempotency-Key (see {@link SandboxIdempotency}). A payment method the sandbox does not know counts as
     * a parameter naming no object, as Stripe's {@code resource_missing}.
     */
    static Response invalid(Map<String, String> params) {
        String amountText = params.get("amount");
        if (amountText == null) {
            return Response.json(400, error("invalid_request_error", "parameter_missing", "Missing required param: amount.", "amount"));
        }
        long amount;
        try {
            amount = Long.parseLong(amountText);
        } catch (NumberFormatException e) {
            return Response.json(400, error("invalid_request_error", "parameter_invalid_integer", "Invalid integer: " + amountText, "amount"));
        }
        if (amount < 1) {
            return Response.json(400, error("invalid_request_error", "amount_too_small", "Amount must be at least 1.", "amount"));
        }
        if (amount > MAX_AMOUNT) {
            return Response.json(400, error("invalid_request_error", "amount_too_large",
                    "Amount must be no more than " + MAX_AMOUNT + " in the currency's smallest unit.", "amount"));
        }
        String currency = params.getOrDefault("currency", "");
        if (!currency.matches("[a-z]{3}")) {
            return Response.json(400, error("invalid_request_error", "parameter_missing", "Missing or invalid currency.", "currency"));
        }
        String paymentMethod = params.get("payment_method");
        if (!PAYMENT_METHODS.contains(paymentMethod)) {
            return Response.json(400, error("invalid_request_error", "resource_missing",
                    "No such PaymentMethod: '" + paymentMethod + "'", "payment_method"));
        }
        if (metadata(params).size() > 50) {
            // Stripe's limit, which the service's own three keys count against.
            return Response.json(400, error("invalid_request_error", "parameter_invalid",
                    "You can specify up to 50 keys in metadata.", "metadata"));
        }
        return null;
    }

    private static Map<String, String> metadata(Map<String, String> params) {
        Map<String, String> metadata = new LinkedHashMap<>();
        params.forEach((k, v) -> {
            if (k.startsWith("metadata[") && k.endsWith("]")) {
                metadata.put(k.substring(9, k.length() - 1), v);
            }
        });
        return metadata;
    }

    /** A create whose parameters were validated ({@link #invalid}). */
    private Response execute(String idempotencyKey, Map<String, String> params, String planned) {
        if (planned.equals("fail_before") || (planned.isEmpty() && faults.consumeFailBefore())) {
            return Response.json(500, error("api_error", null, "An unknown error occurred (sandbox: before charging).", null));
        }
        long amount = Long.parseLong(params.get("amount"));
        String currency = params.get("currency");
        String paymentMethod = params.get("payment_method");
        Map<String, String> metadata = metadata(params);
        String status;
        String declineCode = null;
        switch (paymentMethod) {
            case "pm_card_chargeDeclined" -> { status = "requires_payment_method"; declineCode = "generic_decline"; }
            case "pm_card_visa_chargeDeclinedInsufficientFunds" -> { status = "requires_payment_method"; declineCode = "insufficient_funds"; }
            case "pm_card_authenticationRequired", "pm_card_threeDSecure2Required" -> status = "requires_action";
            case "pm_sandbox_processing" -> status = "processing";
            default -> status = "succeeded";
        }
        long created = params.containsKey("__sandbox_created") ? Long.parseLong(params.get("__sandbox_created"))
                : System.currentTimeMillis() / 1000;
        PaymentIntent pi = new PaymentIntent("pi_" + SandboxJson.randomId(24), amount, currency, status, paymentMethod,
                params.get("customer"), params.get("description"), Map.copyOf(metadata), created,
                System.nanoTime(), idempotencyKey, declineCode);
        intents.put(pi.id(), pi);
        ledger.add(pi);
        listOrderStale = true;
        webhooks.emit("payment_intent.created", toJson(pi));
        webhooks.emit(switch (status) {
            case "succeeded" -> "payment_intent.succeeded";
            case "requires_action" -> "payment_intent.requires_action";
            case "processing" -> "payment_intent.processing";
            default -> "payment_intent.payment_failed";
        }, toJson(pi));
        if (planned.equals("fail_after") || (planned.isEmpty() && faults.consumeFailAfter())) {
            return Response.json(500, error("api_error", null, "An unknown error occurred (sandbox: after charging).", null));
        }
        if (declineCode != null) {
            // As Stripe's: the declined charge, the payment method it was attempted with, and the PaymentIntent.
            String err = "{\"error\":{\"type\":\"card_error\",\"code\":\"card_declined\",\"decline_code\":\"" + declineCode
                    + "\",\"message\":\"Your card was declined.\",\"param\":\"payment_method\",\"charge\":" + quote(chargeId(pi))
                    + ",\"payment_method\":" + paymentMethodJson(pi) + ",\"payment_intent\":" + toJson(pi) + "}}";
            return Response.json(402, err);
        }
        return Response.json(200, toJson(pi));
    }

    /**
     * {@code GET /v1/payment_intents}: newest first, {@code created[gte]}, {@code created[lte]}, {@code limit},
     * {@code starting_after}.
     */
    Response list(Map<String, String> query) {
        SandboxFaults.sleep(faults.listLatencyMillis());
        Response limited = faults.listRateLimited();
        if (limited != null) {
            return limited;
        }
        if (faults.consumeListEmptyHasMore()) {
            // A broken page: nothing in it, yet "more to come". A client must not read it as the end of the list.
            return Response.json(200, "{\"object\":\"list\",\"url\":\"/v1/payment_intents\",\"has_more\":true,\"data\":[]}");
        }
        int limit = Math.min(100, Integer.parseInt(query.getOrDefault("limit", "10")));
        long createdGte = Long.parseLong(query.getOrDefault("created[gte]", "0"));
        long createdLte = Long.parseLong(query.getOrDefault("created[lte]", Long.toString(Long.MAX_VALUE)));
        String startingAfter = query.get("starting_after");
        List<PaymentIntent> newestFirst = listOrder();
        List<PaymentIntent> page = new ArrayList<>();
        boolean skipping = startingAfter != null;
        boolean hasMore = false;
        for (PaymentIntent pi : newestFirst) {
            if (skipping) {
                skipping = !pi.id().equals(startingAfter);
                continue;
            }
            if (pi.created() < createdGte || pi.created() > createdLte) {
                continue;
            }
            if (page.size() == limit) {
                hasMore = true;
                break;
            }
            page.add(pi);
        }
        StringBuilder json = new StringBuilder("{\"object\":\"list\",\"url\":\"/v1/payment_intents\",\"has_more\":")
                .append(hasMore).append(",\"data\":[");
        for (int i = 0; i < page.size(); i++) {
            json.append(i == 0 ? "" : ",").append(toJson(page.get(i)));
        }
        return Response.json(200, json.append("]}").toString());
    }

    /**
     * The ledger as Stripe lists it: newest {@code created} first (ties: the later made first). Rebuilt under the
     * lock, and the flag cleared only once the new order is published: a list must never miss a PaymentIntent that
     * was made before it started (the lookup's absence proofs rely on exactly that, as on Stripe's own list).
     */
    private synchronized List<PaymentIntent> listOrder() {
        if (listOrderStale) {
            listOrderStale = false;
            List<PaymentIntent> sorted = new ArrayList<>(ledger());
            sorted.sort(Comparator.comparingLong(PaymentIntent::created)
                    .thenComparingLong(PaymentIntent::createdNanos).reversed());
            listOrder = List.copyOf(sorted);
        }
        return listOrder;
    }

    /** What Stripe takes as a {@code cancellation_reason}. */
    private static final List<String> CANCELLATION_REASONS = List.of("duplicate", "fraudulent", "requested_by_customer", "abandoned");

    /**
     * {@code POST /v1/payment_intents/{id}/cancel} ({@code cancellation_reason} optional): only a PaymentIntent that is
     * not final can be canceled; it records when ({@code canceled_at}) and why.
     */
    Response cancel(String paymentIntentId, Map<String, String> form) {
        String reason = form.get("cancellation_reason");
        if (reason != null && !CANCELLATION_REASONS.contains(reason)) {
            return Response.json(400, error("invalid_request_error", null, "Invalid cancellation_reason: must be one of "
                    + String.join(", ", CANCELLATION_REASONS), "cancellation_reason"));
        }
        synchronized (transitions) {
            return cancelLocked(paymentIntentId, reason);
        }
    }

    private Response cancelLocked(String paymentIntentId, String reason) {
        PaymentIntent pi = intents.get(paymentIntentId);
        if (pi == null) {
            return Response.json(404, error("invalid_request_error", "resource_missing", "No such payment_intent", "intent"));
        }
        if (List.of("succeeded", "canceled").contains(pi.status())) {
            return Response.json(400, error("invalid_request_error", "payment_intent_unexpected_state",
                    "You cannot cancel this PaymentIntent because it has a status of " + pi.status() + ".", null));
        }
        PaymentIntent canceled = pi.canceled(System.currentTimeMillis() / 1000, reason);
        replace(canceled);
        webhooks.emit("payment_intent.canceled", toJson(canceled));
        return Response.json(200, toJson(canceled));
    }

    // ---- what happens to them besides the API ------------------------------------------------------------------

    /** See {@link StripeSandbox#settle}. */
    PaymentIntent settle(String paymentIntentId, String status) {
        synchronized (transitions) {
            return settleLocked(paymentIntentId, status);
        }
    }

    private PaymentIntent settleLocked(String paymentIntentId, String status) {
        PaymentIntent pi = intents.get(paymentIntentId);
        if (pi == null) {
            throw new IllegalArgumentException("no PaymentIntent " + paymentIntentId);
        }
        PaymentIntent settled = new PaymentIntent(pi.id(), pi.amount(), pi.currency(), status, pi.paymentMethod(), pi.customer(),
                pi.description(), pi.metadata(), pi.created(), pi.createdNanos(), pi.idempotencyKey(),
                "succeeded".equals(status) ? null : "generic_decline");
        replace(settled);
        webhooks.emit("succeeded".equals(status) ? "payment_intent.succeeded" : "payment_intent.payment_failed", toJson(settled));
        return settled;
    }

    /** See {@link StripeSandbox#authenticate}. */
    PaymentIntent authenticate(String paymentIntentId, boolean success) {
        // Checked and changed under one lock: a cancel (the service giving up on an abandoned 3-D Secure) and the
        // customer's completion of the same PaymentIntent are serialized, as at Stripe; one of them is refused.
        synchronized (transitions) {
            PaymentIntent pi = intents.get(paymentIntentId);
            if (pi == null || !"requires_action".equals(pi.status())) {
                throw new IllegalArgumentException(paymentIntentId + " does not require action"
                        + (pi == null ? "" : " (it is " + pi.status() + ")"));
            }
            return settleLocked(paymentIntentId, success ? "succeeded" : "requires_payment_method");
        }
    }

    private void replace(PaymentIntent changed) {
        intents.put(changed.id(), changed);
        synchronized (ledger) {
            ledger.replaceAll(p -> p.id().equals(changed.id()) ? changed : p);
        }
        listOrderStale = true;
    }

    /** See {@link StripeSandbox#backdate}. */
    PaymentIntent backdate(String paymentIntentId, long seconds) {
        PaymentIntent pi = intents.get(paymentIntentId);
        if (pi == null) {
            throw new IllegalArgumentException("no PaymentIntent " + paymentIntentId);
        }
        PaymentIntent older = new PaymentIntent(pi.id(), pi.amount(), pi.currency(), pi.status(), pi.paymentMethod(),
                pi.customer(), pi.description(), pi.metadata(), pi.created() - seconds, pi.createdNanos(),
                pi.idempotencyKey(), pi.declineCode(), pi.canceledAt(), pi.cancellationReason());
        intents.put(pi.id(), older);
        synchronized (ledger) {
            ledger.replaceAll(p -> p.id().equals(pi.id()) ? older : p);
        }
        listOrderStale = true;
        return older;
    }

    /**
     * {@code POST /_sandbox/dashboard/payment_intents?amount=&currency=&customer=&description=}: a payment made in
     * Stripe's Dashboard: succeeded at once, with no metadata and no idempotency key, its events as Stripe makes them
     * ({@code payment_intent.created}, {@code payment_intent.succeeded}).
     */
    Response dashboard(Map<String, String> query) {
        long amount;
        try {
            amount = Long.parseLong(query.getOrDefault("amount", "1000"));
        } catch (NumberFormatException e) {
            return Response.json(400, error("invalid_request_error", "parameter_invalid_integer", "Invalid integer: " + query.get("amount"), "amount"));
        }
        String currency = query.getOrDefault("currency", "usd");
        if (amount < 1 || amount > MAX_AMOUNT || !currency.matches("[a-z]{3}")) {
            return Response.json(400, error("invalid_request_error", "parameter_invalid", "Invalid amount or currency.", "amount"));
        }
        PaymentIntent pi = new PaymentIntent("pi_" + SandboxJson.randomId(24), amount, currency, "succeeded", "pm_card_visa",
                query.get("customer"), query.get("description"), Map.of(), System.currentTimeMillis() / 1000, System.nanoTime(),
                null, null);
        intents.put(pi.id(), pi);
        ledger.add(pi);
        listOrderStale = true;
        webhooks.emit("payment_intent.created", toJson(pi));
        webhooks.emit("payment_intent.succeeded", toJson(pi));
        return Response.json(200, toJson(pi));
    }

    /** See {@link StripeSandbox#seed}. */
    List<PaymentIntent> seed(int count, long createdFrom, long createdTo, String status, Map<String, String> metadata) {
        List<PaymentIntent> made = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            long created = count == 1 ? createdTo : createdFrom + (createdTo - createdFrom) * i / (count - 1);
            Map<String, String> md = new LinkedHashMap<>(metadata);
            md.putIfAbsent("seeded", Integer.toString(i));
            PaymentIntent pi = new PaymentIntent("pi_" + SandboxJson.randomId(24), 1000, "usd", status, "pm_card_visa", null, null,
                    Map.copyOf(md), created, System.nanoTime(), null, null);
            intents.put(pi.id(), pi);
            ledger.add(pi);
            made.add(pi);
        }
        listOrderStale = true;
        return made;
    }

    /** See {@link StripeSandbox#forget}. */
    synchronized boolean forget(String id) {
        PaymentIntent gone = intents.remove(id);
        synchronized (ledger) {
            ledger.removeIf(pi -> pi.id().equals(id));
        }
        listOrderStale = true;
        return gone != null;
    }

    /** See {@link StripeSandbox#forgetSeeded}. */
    int forgetSeeded() {
        int before = ledger.size();
        synchronized (ledger) {
            ledger.removeIf(pi -> pi.idempotencyKey() == null && pi.metadata().containsKey("seeded"));
        }
        intents.values().removeIf(pi -> pi.idempotencyKey() == null && pi.metadata().containsKey("seeded"));
        listOrderStale = true;
        return before - ledger.size();
    }

    /** Every PaymentIntent made and every one listed forgotten. */
    void clear() {
        intents.clear();
        ledger.clear();
        listOrderStale = true;
    }

    // ---- reads -------------------------------------------------------------------------------------------------

    /** A PaymentIntent by id, as it is now (null when there is none). */
    PaymentIntent get(String id) {
        return intents.get(id);
    }

    /** See {@link StripeSandbox#ledger}. */
    List<PaymentIntent> ledger() {
        synchronized (ledger) {
            return List.copyOf(ledger);
        }
    }

    /** How many PaymentIntents there are (without a copy of the ledger). */
    int count() {
        return ledger.size();
    }

    /** See {@link StripeSandbox#intentsForKey}. */
    List<PaymentIntent> forKey(String identity) {
        String keyPrefix = "chargeonce-" + identity + "-a";
        return ledger().stream().filter(pi -> identity.equals(pi.metadata().get("chargeonce_key"))
                || (pi.idempotencyKey() != null && pi.idempotencyKey().startsWith(keyPrefix))).toList();
    }

    /** See {@link StripeSandbox#intentsForCharge}. */
    List<PaymentIntent> forCharge(String chargeId) {
        return ledger().stream().filter(pi -> chargeId.equals(pi.metadata().get("chargeonce_charge_id"))).toList();
    }

    /** The id of a PaymentIntent's charge (one per PaymentIntent here: it is never confirmed twice). */
    static String chargeId(PaymentIntent pi) {
        return "ch_" + pi.id().substring("pi_".length());
    }

    /** The card of a sandbox test payment method ({@code pm_card_...}): brand and last four digits, as Stripe's test cards. */
    private static String[] card(String paymentMethod) {
        return switch (paymentMethod) {
            case "pm_card_chargeDeclined" -> new String[] {"visa", "0002"};
            case "pm_card_visa_chargeDeclinedInsufficientFunds" -> new String[] {"visa", "9995"};
            case "pm_card_mastercard" -> new String[] {"mastercard", "4444"};
            case "pm_card_amex" -> new String[] {"amex", "8431"};
            default -> new String[] {"visa", "4242"};
        };
    }

    /** The PaymentMethod a PaymentIntent was confirmed with, as Stripe's error object carries it. */
    static String paymentMethodJson(PaymentIntent pi) {
        String[] card = card(pi.paymentMethod());
        return "{\"id\":" + quote(pi.paymentMethod()) + ",\"object\":\"payment_method\",\"type\":\"card\""
                + ",\"billing_details\":{\"address\":null,\"email\":null,\"name\":null,\"phone\":null}"
                + ",\"card\":{\"brand\":" + quote(card[0]) + ",\"last4\":" + quote(card[1])
                + ",\"exp_month\":12,\"exp_year\":2034,\"funding\":\"credit\",\"country\":\"US\"}"
                + ",\"created\":" + pi.created() + ",\"customer\":" + quote(pi.customer()) + ",\"livemode\":false,\"metadata\":{}}";
    }

    /** A PaymentIntent as Stripe's API writes it. */
    static String toJson(PaymentIntent pi) {
        StringBuilder json = new StringBuilder(512)
                .append("{\"id\":").append(quote(pi.id()))
                .append(",\"object\":\"payment_intent\"")
                .append(",\"amount\":").append(pi.amount())
                .append(",\"amount_received\":").append(pi.charged() ? pi.amount() : 0)
                .append(",\"currency\":").append(quote(pi.currency()))
                .append(",\"status\":").append(quote(pi.status()))
                .append(",\"payment_method\":").append(quote(pi.paymentMethod()))
                .append(",\"customer\":").append(quote(pi.customer()))
                .append(",\"description\":").append(quote(pi.description()))
                .append(",\"created\":").append(pi.created())
                .append(",\"livemode\":false")
                .append(",\"latest_charge\":").append(pi.chargeAttempted() ? quote(chargeId(pi)) : "null")
                .append(",\"canceled_at\":").append(pi.canceledAt() == null ? "null" : pi.canceledAt().toString())
                .append(",\"cancellation_reason\":").append(quote(pi.cancellationReason()))
                .append(",\"metadata\":{");
        int i = 0;
        for (Map.Entry<String, String> e : new TreeMap<>(pi.metadata()).entrySet()) {
            json.append(i++ == 0 ? "" : ",").append(quote(e.getKey())).append(':').append(quote(e.getValue()));
        }
        json.append('}');
        if (pi.declineCode() != null) {
            json.append(",\"last_payment_error\":{\"type\":\"card_error\",\"code\":\"card_declined\",\"decline_code\":")
                    .append(quote(pi.declineCode())).append(",\"message\":\"Your card was declined.\"}");
        }
        json.append(",\"client_secret\":").append(quote(pi.id() + "_secret_sandbox"));
        if ("requires_action".equals(pi.status())) {
            json.append(",\"next_action\":{\"type\":\"use_stripe_sdk\",\"use_stripe_sdk\":{\"type\":\"three_d_secure_redirect\","
                    + "\"stripe_js\":\"https://hooks.stripe.com/3d_secure_2/hosted?payment_intent=").append(pi.id()).append("\"}}");
        }
        return json.append('}').toString();
    }
}

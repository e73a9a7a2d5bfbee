package dev.chargeonce.bench.passthrough;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.stripe.StripeClient;
import com.stripe.exception.CardException;
import com.stripe.exception.StripeException;
import com.stripe.model.PaymentIntent;
import com.stripe.model.Refund;
import com.stripe.net.RequestOptions;
import com.stripe.param.PaymentIntentCreateParams;
import com.stripe.param.RefundCreateParams;
import io.quarkus.virtual.threads.VirtualThreads;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.sql.SQLException;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The benchmark's reference point: everything a charge costs in chargeonce's HTTP stack except idempotency.
 * Same framework and threading (Quarkus REST, the body read on the event loop, the work on a virtual thread), same
 * API-key check (SHA-256 of the bearer token), same Stripe SDK call with the same parameters and connection pool, a
 * response of the same shape; no database, no Idempotency-Key, no Stripe idempotency key. chargeonce's cost over this is the cost of
 * exactly-once. The same for a refund, with one difference: without a database it cannot find a charge's
 * PaymentIntent, so the path names the PaymentIntent itself.
 *
 * <p>Run with {@code passthrough.floor.enabled=true} it is the floor: the same charge plus the least exactly-once
 * needs ({@link MinimalPair}: a claim committed before the Stripe call, a finish committed after, and the
 * Idempotency-Key passed to Stripe). What chargeonce costs over the floor is what its guarantees add beyond that
 * minimum (leases, fencing, the fingerprint, the stored request, recovery); what the floor costs over the
 * pass-through is what no implementation on this stack can avoid.
 */
@Path("/v1/charges")
public class PassThroughResource {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final char[] ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".toCharArray();

    private final StripeClient stripe;
    private final byte[] apiKeyHash;
    private final ExecutorService virtualThreads;
    private final MinimalPair floor; // null: the pass-through, no database

    PassThroughResource(@VirtualThreads ExecutorService virtualThreads, MinimalPair minimalPair,
                        @ConfigProperty(name = "passthrough.floor.enabled") boolean floorEnabled,
                        @ConfigProperty(name = "passthrough.stripe.api-base") String apiBase,
                        @ConfigProperty(name = "passthrough.stripe.api-key", defaultValue = "sk_test_sandbox") String apiKey,
                        @ConfigProperty(name = "passthrough.client-key-sha256") String clientKeySha256) {
        // As chargeonce's StripeClients: a keep-alive pool of 256 connections, explicit timeouts, no SDK retries.
        if (System.getProperty("http.maxConnections") == null) {
            System.setProperty("http.maxConnections", "256");
        }
        // As chargeonce's StripeClients: no request telemetry (the SDK's per-request metrics header).
        com.stripe.Stripe.enableTelemetry = false;
        this.stripe = StripeClient.builder().setApiKey(apiKey).setApiBase(apiBase)
                .setConnectTimeout(2_000).setReadTimeout(8_000).setMaxNetworkRetries(0).build();
        this.apiKeyHash = clientKeySha256.toLowerCase().getBytes(StandardCharsets.US_ASCII);
        this.virtualThreads = virtualThreads;
        this.floor = floorEnabled ? minimalPair : null;
    }

    /**
     * As chargeonce's endpoints do: the body is read on the event loop, the work runs on a virtual thread of
     * the executor {@code @RunOnVirtualThread} uses (chargeonce's {@code web.VirtualThreadAnswers}).
     */
    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Produces(MediaType.APPLICATION_JSON)
    public CompletionStage<Response> create(@HeaderParam("Authorization") String authorization,
                                            @HeaderParam("Idempotency-Key") String idempotencyKey, byte[] body) {
        return CompletableFuture.supplyAsync(() -> !authorized(authorization) ? unauthorized()
                : floor == null ? charge(body, null) : chargeOnce(idempotencyKey, body), virtualThreads);
    }

    /** The floor: the key claimed before the charge, its answer stored after it, a retry answered from the table. */
    private Response chargeOnce(String idempotencyKey, byte[] body) {
        if (idempotencyKey == null || idempotencyKey.isEmpty()) {
            return Response.status(400).entity("{\"error\":{\"type\":\"invalid_request_error\"}}").build();
        }
        try {
            if (!floor.claim(idempotencyKey)) {
                Optional<String> answer = floor.answer(idempotencyKey);
                return answer.isPresent() ? Response.ok(answer.get()).build()
                        : Response.status(409).entity("{\"error\":{\"type\":\"idempotency_error\"}}").build();
            }
            Response answer = charge(body, idempotencyKey);
            floor.finish(idempotencyKey, answer.getStatus() == 201 ? "completed" : "failed", (String) answer.getEntity());
            return answer;
        } catch (SQLException e) {
            return Response.status(503).entity("{\"error\":{\"type\":\"api_error\"}}").build();
        }
    }

    private Response charge(byte[] body, String stripeIdempotencyKey) {
        JsonObject request;
        try {
            request = JsonParser.parseString(new String(body, StandardCharsets.UTF_8)).getAsJsonObject();
        } catch (RuntimeException e) {
            return Response.status(400).entity("{\"error\":{\"type\":\"invalid_request_error\"}}").build();
        }
        long amount = request.get("amount").getAsLong();
        String currency = request.get("currency").getAsString();
        String paymentMethod = request.get("payment_method").getAsString();
        String chargeId = newChargeId();
        PaymentIntentCreateParams.Builder params = PaymentIntentCreateParams.builder()
                .setAmount(amount).setCurrency(currency).setPaymentMethod(paymentMethod).setConfirm(true)
                .setAutomaticPaymentMethods(PaymentIntentCreateParams.AutomaticPaymentMethods.builder().setEnabled(true)
                        .setAllowRedirects(PaymentIntentCreateParams.AutomaticPaymentMethods.AllowRedirects.NEVER).build())
                .putMetadata("chargeonce_charge_id", chargeId);
        JsonElement metadata = request.get("metadata");
        if (metadata != null && metadata.isJsonObject()) {
            for (Map.Entry<String, JsonElement> e : metadata.getAsJsonObject().entrySet()) {
                params.putMetadata(e.getKey(), e.getValue().getAsString());
            }
        }
        try {
            PaymentIntent pi = stripeIdempotencyKey == null ? stripe.v1().paymentIntents().create(params.build())
                    : stripe.v1().paymentIntents().create(params.build(),
                            RequestOptions.builder().setIdempotencyKey(stripeIdempotencyKey).build());
            JsonObject charge = new JsonObject();
            charge.addProperty("id", chargeId);
            charge.addProperty("object", "charge");
            charge.addProperty("status", pi.getStatus());
            charge.addProperty("amount", amount);
            charge.addProperty("currency", currency);
            charge.addProperty("payment_method", paymentMethod);
            charge.add("customer", request.get("customer"));
            charge.add("description", request.get("description"));
            charge.add("metadata", metadata == null ? new JsonObject() : metadata);
            charge.addProperty("payment_intent", pi.getId());
            charge.addProperty("created", pi.getCreated());
            return Response.status(201).entity(charge.toString()).build();
        } catch (CardException e) {
            return Response.status(402).entity("{\"error\":{\"type\":\"card_error\",\"code\":\"" + e.getCode() + "\"}}").build();
        } catch (StripeException e) {
            return Response.status(503).entity("{\"error\":{\"type\":\"api_error\"}}").build();
        }
    }

    /** A refund: {@code {"amount"?, "reason"?, "metadata"?}} on the PaymentIntent {@code id}, one Stripe call. */
    @POST
    @Path("{id}/refunds")
    @Consumes(MediaType.APPLICATION_JSON)
    @Produces(MediaType.APPLICATION_JSON)
    public CompletionStage<Response> refund(@HeaderParam("Authorization") String authorization,
                                            @PathParam("id") String paymentIntentId, byte[] body) {
        return CompletableFuture.supplyAsync(() -> refundNow(authorization, paymentIntentId, body), virtualThreads);
    }

    private Response refundNow(String authorization, String paymentIntentId, byte[] body) {
        if (!authorized(authorization)) {
            return unauthorized();
        }
        JsonObject request;
        try {
            request = body == null || body.length == 0 ? new JsonObject()
                    : JsonParser.parseString(new String(body, StandardCharsets.UTF_8)).getAsJsonObject();
        } catch (RuntimeException e) {
            return Response.status(400).entity("{\"error\":{\"type\":\"invalid_request_error\"}}").build();
        }
        String refundId = newId("rfd_");
        RefundCreateParams.Builder params = RefundCreateParams.builder().setPaymentIntent(paymentIntentId)
                .putMetadata("chargeonce_refund_id", refundId);
        JsonElement amount = request.get("amount");
        if (amount != null && !amount.isJsonNull()) {
            params.setAmount(amount.getAsLong());
        }
        JsonElement reason = request.get("reason");
        if (reason != null && !reason.isJsonNull()) {
            params.setReason(switch (reason.getAsString()) {
                case "duplicate" -> RefundCreateParams.Reason.DUPLICATE;
                case "fraudulent" -> RefundCreateParams.Reason.FRAUDULENT;
                default -> RefundCreateParams.Reason.REQUESTED_BY_CUSTOMER;
            });
        }
        JsonElement metadata = request.get("metadata");
        if (metadata != null && metadata.isJsonObject()) {
            for (Map.Entry<String, JsonElement> e : metadata.getAsJsonObject().entrySet()) {
                params.putMetadata(e.getKey(), e.getValue().getAsString());
            }
        }
        try {
            Refund made = stripe.v1().refunds().create(params.build());
            JsonObject refund = new JsonObject();
            refund.addProperty("id", refundId);
            refund.addProperty("object", "refund");
            refund.addProperty("status", made.getStatus());
            refund.addProperty("amount", made.getAmount());
            refund.addProperty("currency", made.getCurrency());
            refund.addProperty("charge", (String) null);
            refund.addProperty("payment_intent", paymentIntentId);
            refund.add("reason", reason);
            refund.add("metadata", metadata == null ? new JsonObject() : metadata);
            refund.addProperty("stripe_refund", made.getId());
            refund.addProperty("created", made.getCreated());
            return Response.status(201).entity(refund.toString()).build();
        } catch (com.stripe.exception.InvalidRequestException e) {
            return Response.status(400).entity("{\"error\":{\"type\":\"invalid_request_error\",\"code\":\"" + e.getCode() + "\"}}").build();
        } catch (StripeException e) {
            return Response.status(503).entity("{\"error\":{\"type\":\"api_error\"}}").build();
        }
    }

    /** As chargeonce's API-key check: the SHA-256 of the bearer token against the configured one. */
    private boolean authorized(String authorization) {
        String token = authorization != null && authorization.startsWith("Bearer ") ? authorization.substring(7) : "";
        return MessageDigest.isEqual(sha256Hex(token).getBytes(StandardCharsets.US_ASCII), apiKeyHash);
    }

    private static Response unauthorized() {
        return Response.status(401).entity("{\"error\":{\"type\":\"authentication_error\"}}").build();
    }

    private static String newChargeId() {
        return newId("chg_");
    }

    private static String newId(String prefix) {
        StringBuilder id = new StringBuilder(prefix);
        for (int i = 0; i < 24; i++) {
            id.append(ALPHABET[RANDOM.nextInt(ALPHABET.length)]);
        }
        return id.toString();
    }

    /** As chargeonce's {@code Fingerprint.sha256Hex}: a clone of one instance, not a provider lookup per call. */
    private static final MessageDigest SHA_256;

    static {
        try {
            SHA_256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static String sha256Hex(String text) {
        try {
            return HexFormat.of().formatHex(((MessageDigest) SHA_256.clone()).digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException(e);
        }
    }
}

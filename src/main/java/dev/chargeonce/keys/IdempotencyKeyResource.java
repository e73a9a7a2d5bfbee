package dev.chargeonce.keys;

import dev.chargeonce.auth.ApiKeyFilter;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.idempotency.Reads;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.web.ApiException;
import io.smallrye.common.annotation.RunOnVirtualThread;
import jakarta.ws.rs.Encoded;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code GET /v1/idempotency-keys/{key}}: what one of the calling client's keys holds now (for a charge, or with
 * {@code ?operation=refund} a refund): in flight, answered, or waiting for an operator, with when it was first seen
 * and when it expires. The key travels percent-encoded in the path (as any path segment: {@code /} is {@code %2F}).
 * A key the client never used is a {@code 404}, exactly like another client's.
 */
@Path("/v1/idempotency-keys")
@Produces(MediaType.APPLICATION_JSON)
public class IdempotencyKeyResource {

    private final Reads reads;
    private final IdempotencyConfig config;
    private final StripeConfig stripeConfig;

    IdempotencyKeyResource(Reads reads, IdempotencyConfig config, StripeConfig stripeConfig) {
        this.reads = reads;
        this.config = config;
        this.stripeConfig = stripeConfig;
    }

    @GET
    @Path("/{key}")
    @RunOnVirtualThread
    public Map<String, Object> status(@Context ContainerRequestContext request, @Encoded @PathParam("key") String encodedKey) {
        IdempotencyKey key = IdempotencyKey.parse(decode(encodedKey));
        List<String> operations = request.getUriInfo().getQueryParameters().get("operation");
        if (operations != null && operations.size() > 1) {
            throw ApiException.invalidRequest("parameter_invalid", "operation is given more than once.", "operation");
        }
        Operation op = switch (operations == null ? "charge" : operations.get(0)) {
            case "charge" -> Operation.CHARGE;
            case "refund" -> Operation.REFUND;
            default -> throw ApiException.invalidRequest("parameter_invalid", "operation must be charge or refund.", "operation");
        };
        Reads.KeyStatus found = reads.keyStatus(op, ApiKeyFilter.clientId(request), key, stripeConfig.keyHorizon())
                .orElseThrow(() -> new ApiException(404, "invalid_request_error", "resource_missing",
                        "No such idempotency key for this client.", "key", null));
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("object", "idempotency_key");
        view.put("key", key.value());
        view.put("operation", op.column());
        view.put("status", switch (found.status()) {
            case PROCESSING -> found.parked() ? "under_reconciliation" : "processing";
            case COMPLETED, ACCEPTED -> "completed";
            case FAILED -> "failed";
        });
        view.put(op.column(), found.rowId());
        view.put("created", found.firstSeen().getEpochSecond());
        view.put("expires", found.finishedAt() == null ? null : found.finishedAt().plus(config.keptFor()).getEpochSecond());
        boolean leased = found.status() == dev.chargeonce.idempotency.IntentStatus.PROCESSING && !found.parked() && found.leaseLeftMillis() > 0;
        view.put("lease_expires", leased ? java.time.Instant.now().plusMillis(found.leaseLeftMillis()).getEpochSecond() : null);
        view.put("stripe_attempt", found.stripeAttempt());
        return view;
    }

    private static String decode(String encoded) {
        try {
            return URLDecoder.decode(encoded.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw ApiException.invalidRequest("idempotency_key_invalid", "The key in the path is not percent-encoded correctly.", "key");
        }
    }
}

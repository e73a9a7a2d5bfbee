package dev.chargeonce.auth;

import dev.chargeonce.idempotency.KeyIdentities;
import dev.chargeonce.web.ApiException;
import org.jboss.logging.MDC;
import jakarta.ws.rs.container.ContainerRequestContext;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;

/**
 * {@code Authorization: Bearer <api key>} on every {@code /v1} request, checked before anything else (before
 * media type, size and body), so an unauthenticated caller learns nothing and writes nothing.
 */
public class ApiKeyFilter {

    /** The request property holding the authenticated client id. */
    public static final String CLIENT_ID = "chargeonce.client-id";

    /** The path of Stripe's webhooks (dev.chargeonce.webhook): signed by Stripe, not authenticated by API key. */
    public static final String WEBHOOKS = "/v1/webhooks/";

    /** The authenticated client of a request this filter let through. */
    public static String clientId(jakarta.ws.rs.container.ContainerRequestContext request) {
        return (String) request.getProperty(CLIENT_ID);
    }

    private final ClientRegistry clients;
    private final FailedAuthentications failures;
    private final KeyIdentities identities;

    ApiKeyFilter(ClientRegistry clients, FailedAuthentications failures, KeyIdentities identities) {
        this.identities = identities;
        this.clients = clients;
        this.failures = failures;
    }

    /**
     * The client's address: the peer's, or the one a trusted proxy forwarded when {@code
     * quarkus.http.proxy.proxy-address-forwarding} is on (Quarkus rewrites the request's remote address, and believes
     * the header only from {@code quarkus.http.proxy.trusted-proxies}).
     */
    static String clientAddress(io.vertx.core.http.HttpServerRequest connection) {
        return connection.remoteAddress() == null ? "unknown" : connection.remoteAddress().hostAddress();
    }

    @ServerRequestFilter(preMatching = true, priority = jakarta.ws.rs.Priorities.AUTHENTICATION)
    public void authenticate(ContainerRequestContext request, io.vertx.core.http.HttpServerRequest connection) {
        String path = request.getUriInfo().getPath();
        // Stripe's webhooks carry no API key: they are signed, and checked by the webhook endpoint itself.
        if (!path.startsWith("/v1/") || path.startsWith(WEBHOOKS)) {
            return;
        }
        String header = request.getHeaderString("Authorization");
        String token = header != null && header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : null;
        // Checked first, whatever the address did before: a valid key is never refused (FailedAuthentications).
        java.util.Optional<String> authenticated = clients.authenticate(token);
        if (authenticated.isEmpty()) {
            // The address, and the key presented if any (no key at all is no identity: counted by address only).
            String address = FailedAuthentications.address(clientAddress(connection));
            java.util.List<String> subjects = token == null || token.isEmpty() ? java.util.List.of(address)
                    : java.util.List.of(address, "api-key " + ClientRegistry.presentedKeyId(token));
            // Whether it was over the limit before this failure: the limit-th failure is still a 401.
            java.util.Optional<java.time.Duration> wait = failures.overLimit(subjects);
            failures.failed(subjects);
            wait.ifPresent(w -> {
                throw FailedAuthentications.tooMany(w);
            });
            throw new ApiException(401, "authentication_error", "invalid_api_key",
                    "Provide a valid API key as 'Authorization: Bearer <key>'.", null, null);
        }
        String clientId = authenticated.get();
        request.setProperty(CLIENT_ID, clientId);
        // Log context: who is calling, never with what key. The idempotency key appears only as a keyed tag (an
        // unkeyed hash of a guessable key would give it away to whoever reads the logs).
        MDC.put("client_id", clientId);
        String idempotencyKey = request.getHeaderString("Idempotency-Key");
        if (idempotencyKey != null) {
            MDC.put("idempotency_key_hash", identities.logTag(clientId, idempotencyKey));
        }
    }
}

package dev.chargeonce.auth;

import dev.chargeonce.web.ApiException;
import jakarta.ws.rs.container.ContainerRequestContext;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;

/**
 * {@code Authorization: Bearer <api key>} on every {@code /v1} request, checked before anything else (before
 * media type, size and body), so an unauthenticated caller learns nothing and writes nothing.
 */
public class ApiKeyFilter {

    /** The request property holding the authenticated client id. */
    public static final String CLIENT_ID = "chargeonce.client-id";

    private final ClientRegistry clients;

    ApiKeyFilter(ClientRegistry clients) {
        this.clients = clients;
    }

    @ServerRequestFilter(preMatching = true, priority = jakarta.ws.rs.Priorities.AUTHENTICATION)
    public void authenticate(ContainerRequestContext request) {
        if (!request.getUriInfo().getPath().startsWith("/v1/")) {
            return;
        }
        String header = request.getHeaderString("Authorization");
        String token = header != null && header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : null;
        String clientId = clients.authenticate(token).orElseThrow(() -> new ApiException(401, "authentication_error",
                "invalid_api_key", "Provide a valid API key as 'Authorization: Bearer <key>'.", null, null));
        request.setProperty(CLIENT_ID, clientId);
    }
}

package dev.chargeonce.web;

import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;

/**
 * Refuses a declared body over 64 KiB before it is read. (A chunked body without a length is counted by the
 * resource after reading, up to {@code quarkus.http.limits.max-body-size}.)
 */
public class BodyLimitFilter {

    public static final int MAX_BODY_BYTES = 64 * 1024;

    @ServerRequestFilter(preMatching = true, priority = Priorities.AUTHENTICATION + 100)
    public void limit(ContainerRequestContext request) {
        if (request.getUriInfo().getPath().startsWith("/v1/webhooks/")) {
            return; // Stripe's events can be larger; the 1 MiB limit of quarkus.http.limits still holds
        }
        String length = request.getHeaderString("Content-Length");
        if (length == null) {
            return;
        }
        long declared;
        try {
            declared = Long.parseLong(length.trim());
        } catch (NumberFormatException e) {
            throw ApiException.invalidRequest("invalid_content_length", "Content-Length is not a number.", null);
        }
        if (declared > MAX_BODY_BYTES) {
            throw tooLarge();
        }
    }

    public static ApiException tooLarge() {
        return new ApiException(413, "invalid_request_error", "body_too_large",
                "The body is larger than " + MAX_BODY_BYTES + " bytes.", null, null);
    }
}

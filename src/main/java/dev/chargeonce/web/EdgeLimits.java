package dev.chargeonce.web;

import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * A declared body over {@code quarkus.http.limits.max-body-size} gets the API's error shape: Quarkus would answer it
 * with a bare {@code 413} before the application runs. This route handler runs first on the Vert.x router and
 * answers from the {@code Content-Length} alone, before a byte of the body is read. What Vert.x refuses while it
 * decodes the request (a control character in a header, a request line or headers over the limits, a chunked body
 * that outgrows the limit) never reaches a router: those stay bare {@code 400}, {@code 414}, {@code 431},
 * {@code 413} without a body, as {@code openapi.yaml} documents.
 */
@Singleton
public class EdgeLimits {

    private final long maxBodyBytes;

    EdgeLimits(@ConfigProperty(name = "quarkus.http.limits.max-body-size") io.quarkus.runtime.configuration.MemorySize maxBody) {
        this.maxBodyBytes = maxBody.asLongValue();
    }

    void install(@Observes Router router) {
        router.route().order(Integer.MIN_VALUE).handler(context -> {
            String length = context.request().getHeader(HttpHeaders.CONTENT_LENGTH);
            long declared;
            try {
                declared = length == null ? -1 : Long.parseLong(length.trim());
            } catch (NumberFormatException e) {
                declared = -1; // BodyLimitFilter answers an unreadable length in the API's shape
            }
            if (declared > maxBodyBytes) {
                context.response().setStatusCode(413)
                        .putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
                        .putHeader(HttpHeaders.CONNECTION, "close")
                        .end("{\"error\":{\"type\":\"invalid_request_error\",\"code\":\"body_too_large\",\"message\":\"The body is larger than "
                                + maxBodyBytes + " bytes.\",\"param\":null}}");
                return;
            }
            context.next();
        });
    }
}

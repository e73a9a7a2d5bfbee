package dev.chargeonce.web;

import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * A declared body over {@code quarkus.http.limits.max-body-size} gets the API's error shape: Quarkus would answer it
 * with a bare {@code 413} before the application runs. This route handler runs first on the Vert.x router and
 * answers from the {@code Content-Length} alone, before a byte of the body is read. (What the HTTP server refuses
 * while it decodes a request never reaches a router: {@link MalformedRequests} shapes those. A chunked body that
 * outgrows the limit is refused by RESTEasy's input stream as it reads, with a bare {@code 413}.)
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
                EdgeAnswers.refuse(context.response(), 413, "body_too_large", "The body is larger than " + maxBodyBytes + " bytes.");
                return;
            }
            context.next();
        });
    }
}

package dev.chargeonce.web;

import io.vertx.core.http.HttpHeaders;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.handler.BodyHandler;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * A declared body over {@code quarkus.http.limits.max-body-size} gets the API's error shape: Quarkus would answer it
 * with a bare {@code 413} before the application runs. This route handler runs first on the Vert.x router and
 * answers from the {@code Content-Length} alone, before a byte of the body is read. A chunked body has no length
 * to go by: Vert.x's body handler reads it here, up to the limit, and fails the request {@code 413} as soon as it
 * outgrows it, which {@link RouterRefusals} answers in the API's shape (RESTEasy's own input stream would answer a
 * bare {@code 413}); a body within the limit goes on to RESTEasy, which reads it from the buffer. Bodies of declared
 * length are not buffered here: they stream to RESTEasy as before. (What the HTTP server refuses while it decodes a
 * request never reaches a router: {@link MalformedRequests} shapes those.)
 */
@Singleton
public class EdgeLimits {

    private final long maxBodyBytes;
    private final BodyHandler chunkedBodies;

    EdgeLimits(@ConfigProperty(name = "quarkus.http.limits.max-body-size") io.quarkus.runtime.configuration.MemorySize maxBody) {
        this.maxBodyBytes = maxBody.asLongValue();
        this.chunkedBodies = BodyHandler.create(false).setBodyLimit(maxBodyBytes);
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
            if (length == null && context.request().headers().contains(HttpHeaders.TRANSFER_ENCODING)) {
                // Quarkus hands requests over paused (RESTEasy resumes them as it reads): so does its own body handler.
                context.request().resume();
                chunkedBodies.handle(context); // reads the body, then goes on (context.next()), or fails it 413
                return;
            }
            context.next();
        });
    }
}

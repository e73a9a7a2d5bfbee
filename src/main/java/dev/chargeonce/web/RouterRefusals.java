package dev.chargeonce.web;

import io.netty.handler.codec.http.HttpResponseStatus;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;

/**
 * A request the Vert.x router refuses itself, before RESTEasy (a target that is not a path: {@code OPTIONS *},
 * {@code GET v1/charges}), gets the API's error shape: the router fails it with a bare status and no cause, which
 * Quarkus' last failure handler would send with an empty body. This failure handler comes first and answers only
 * those: a failure with a cause (an exception of RESTEasy's, a security challenge) goes on to the handlers that know
 * it, and so does a {@code 5xx}.
 */
@Singleton
public class RouterRefusals {

    void install(@Observes Router router) {
        router.route().order(Integer.MIN_VALUE).failureHandler(this::answer);
    }

    void answer(RoutingContext context) {
        int status = context.statusCode();
        if (context.failure() != null || status < 400 || status > 499 || context.response().headWritten()) {
            context.next();
            return;
        }
        EdgeAnswers.refuse(context.response(), status, code(status), message(status)).onComplete(sent -> {
            // The answer says "Connection: close"; with a body still unread (a chunked body over the limit) the
            // server would go on reading it, and the client wait for the close: close it now, as Quarkus does.
            if (!context.request().isEnded()) {
                context.request().connection().close();
            }
        });
    }

    static String code(int status) {
        return switch (status) {
            case 400 -> "request_malformed";
            case 404 -> "resource_missing";
            case 405 -> "method_not_allowed";
            case 413 -> "body_too_large";
            case 414 -> "uri_too_long";
            case 415 -> "unsupported_media_type";
            case 431 -> "headers_too_large";
            default -> "invalid_request";
        };
    }

    static String message(int status) {
        return switch (status) {
            case 400 -> "The request is malformed.";
            case 404 -> "No such resource.";
            default -> HttpResponseStatus.valueOf(status).reasonPhrase() + ".";
        };
    }
}

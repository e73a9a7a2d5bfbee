package dev.chargeonce.web;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectWriter;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.http.HttpServerResponse;

/**
 * The one error shape ({@link ErrorBody}) for the answers given beneath RESTEasy, on Vert.x' own response: the HTTP
 * server's refusals while it decodes a request ({@link MalformedRequests}), and the router's (a declared or chunked
 * body over the server's limit, a path the router cannot read: {@link EdgeLimits}). Each of them ends the
 * exchange: the rest of the request is not read, so the connection is not reused.
 */
final class EdgeAnswers {

    private static final ObjectWriter JSON = new ObjectMapper().writerFor(ErrorBody.class);

    private EdgeAnswers() {
    }

    /** Answers {@code status} with an {@code invalid_request_error} of {@code code}, and closes the connection after it. */
    static Future<Void> refuse(HttpServerResponse response, int status, String code, String message) {
        byte[] body;
        try {
            body = JSON.writeValueAsBytes(ErrorBody.of("invalid_request_error", code, message, null));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("an error body of plain strings is always JSON", e);
        }
        return response.setStatusCode(status)
                .putHeader(HttpHeaders.CONTENT_TYPE, "application/json")
                .putHeader(HttpHeaders.CONNECTION, "close")
                .end(Buffer.buffer(body));
    }
}

package dev.chargeonce.operation;

import dev.chargeonce.idempotency.StoredAnswer;
import java.time.Duration;

/**
 * What a key's request answers (a charge, a refund): a status and the exact bytes of the body.
 *
 * @param replayed   the body is a stored answer of an earlier request ({@code Idempotent-Replayed: true})
 * @param retryAfter set on answers that ask the client to retry the same key later
 */
public record KeyAnswer(int status, String body, boolean replayed, Duration retryAfter) {

    public static KeyAnswer first(StoredAnswer answer) {
        return new KeyAnswer(answer.status(), answer.body(), false, null);
    }

    public static KeyAnswer replay(StoredAnswer answer) {
        return new KeyAnswer(answer.status(), answer.body(), true, null);
    }

    /**
     * The HTTP answer: the exact bytes, {@code Idempotent-Replayed: true} on a replay, {@code Retry-After} in whole
     * seconds (rounded up, at least 1) when the client should come back.
     */
    public jakarta.ws.rs.core.Response toResponse() {
        jakarta.ws.rs.core.Response.ResponseBuilder response = jakarta.ws.rs.core.Response.status(status).entity(body)
                .type(jakarta.ws.rs.core.MediaType.APPLICATION_JSON_TYPE);
        if (replayed) {
            response.header("Idempotent-Replayed", "true");
        }
        if (retryAfter != null) {
            response.header("Retry-After", Math.max(1, (retryAfter.toMillis() + 999) / 1000));
        }
        return response.build();
    }

    public static KeyAnswer retryLater(int status, String body, Duration retryAfter) {
        return new KeyAnswer(status, body, false, retryAfter);
    }
}

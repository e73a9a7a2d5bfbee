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

    public static KeyAnswer retryLater(int status, String body, Duration retryAfter) {
        return new KeyAnswer(status, body, false, retryAfter);
    }
}

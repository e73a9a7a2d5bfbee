package dev.chargeonce.charge;

import dev.chargeonce.idempotency.StoredAnswer;
import java.time.Duration;

/**
 * What {@code POST /v1/charges} answers: a status and the exact bytes of the body.
 *
 * @param replayed   the body is a stored answer of an earlier request ({@code Idempotent-Replayed: true})
 * @param retryAfter set on answers that ask the client to retry the same key later
 */
public record ChargeAnswer(int status, String body, boolean replayed, Duration retryAfter) {

    static ChargeAnswer first(StoredAnswer answer) {
        return new ChargeAnswer(answer.status(), answer.body(), false, null);
    }

    static ChargeAnswer replay(StoredAnswer answer) {
        return new ChargeAnswer(answer.status(), answer.body(), true, null);
    }

    static ChargeAnswer retryLater(int status, String body, Duration retryAfter) {
        return new ChargeAnswer(status, body, false, retryAfter);
    }
}

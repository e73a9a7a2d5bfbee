package dev.chargeonce.idempotency;

import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;

/**
 * The bound on a stored answer ({@code chargeonce.idempotency.max-answer-bytes}). Every answer is kept and replayed
 * byte for byte, so it is bounded where it can still be refused: at the claim. An answer echoes the request's own
 * fields (metadata, description) in the request's canonical JSON, plus what this service and Stripe add (ids,
 * amounts, status, a client secret, Stripe's {@code next_action} or decline message), which
 * {@link #ADDED_BY_THE_ANSWER} reserves. A request whose answer could exceed the bound is refused before any claim;
 * an answer is never cut short afterwards.
 */
@ApplicationScoped
public class AnswerLimit {

    /** What an answer adds to the fields it echoes, at most (Stripe's parts are small: URLs, codes, a sentence). */
    public static final int ADDED_BY_THE_ANSWER = 16 * 1024;

    private final IdempotencyConfig config;

    AnswerLimit(IdempotencyConfig config) {
        this.config = config;
        if (config.maxAnswerBytes() < 2 * ADDED_BY_THE_ANSWER) {
            throw new IllegalStateException("chargeonce.idempotency.max-answer-bytes must be at least " + 2 * ADDED_BY_THE_ANSWER);
        }
    }

    /** Whether the answer to a request with this canonical JSON always fits the bound. */
    public boolean admits(String canonicalRequestJson) {
        return canonicalRequestJson.getBytes(StandardCharsets.UTF_8).length + ADDED_BY_THE_ANSWER <= config.maxAnswerBytes();
    }

    /** The refusal of a request {@link #admits} does not admit, for a key that holds nothing yet. */
    public ApiException tooLarge() {
        return ApiException.invalidRequest("answer_too_large", "The answer to this request could exceed the "
                + config.maxAnswerBytes() + " bytes a stored answer may have: send less metadata or a shorter description.", null);
    }
}

package dev.chargeonce.idempotency;

import java.time.Duration;

/** Everything a claim of (client, Idempotency-Key) can find. One {@code switch} over it is the whole endpoint. */
public sealed interface Claim {

    /** The key was new: this request inserted the row and holds its lease. */
    record Fresh(ClaimedIntent intent) implements Claim {
    }

    /** The previous holder's lease ran out (crash, timeout, unknown outcome): this request holds it now. */
    record TakenOver(ClaimedIntent intent) implements Claim {
    }

    /**
     * The key is finished: answer what was answered the first time.
     *
     * @param firstSeen  when the key was first claimed (the original request)
     * @param finishedAt when its answer was stored (the key is kept for a while after it)
     */
    record Replay(StoredAnswer answer, java.time.Instant firstSeen, java.time.Instant finishedAt) implements Claim {
    }

    /**
     * Another request holds a live lease on the key.
     *
     * @param rowId the key's row, for a request that waits for it to move ({@code Prefer: wait}); null when the
     *              row changed under the claim and was not looked at again
     */
    record InFlight(Duration retryAfter, String rowId) implements Claim {
    }

    /** The key was first used with another request. */
    record Mismatch() implements Claim {
    }

    /**
     * Only from {@link Claims#peek}: the key is processing and nobody holds its lease (a claim would take
     * it over). Earlier tries of it may have reached Stripe.
     */
    record Unheld() implements Claim {
    }

    /**
     * The service cannot prove what Stripe did with this key: an operator reconciles it, nobody re-charges.
     *
     * @param rowId the key's row, which the answer names (what the client quotes, and the console finds)
     */
    record UnderReconciliation(String rowId) implements Claim {
    }
}

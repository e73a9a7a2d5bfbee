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

    /** The key is finished: answer what was answered the first time. */
    record Replay(StoredAnswer answer) implements Claim {
    }

    /** Another request holds a live lease on the key. */
    record InFlight(Duration retryAfter) implements Claim {
    }

    /** The key was first used with another request. */
    record Mismatch() implements Claim {
    }

    /** Stripe may have forgotten this key and no payment was found: an operator reconciles it, nobody re-charges. */
    record UnderReconciliation() implements Claim {
    }
}

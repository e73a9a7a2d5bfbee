package dev.chargeonce.stripe;

/**
 * What the tries of one create call did, across fault-tolerance retries (the same instance is passed to every
 * retry). The last exception alone cannot classify a call: a try that timed out may have charged even if the last
 * try was rate limited.
 */
final class SendLog {

    private int tries;
    private long currentTryStartNanos;
    private boolean currentTryMaybeExecuted;
    /** Start of the latest earlier try that may have run at Stripe; valid when {@link #earlierMaybeExecuted}. */
    private long latestMaybeExecutedStartNanos;
    private boolean earlierMaybeExecuted;

    /** A try is about to be sent. Until an answer proves otherwise it may run at Stripe. */
    synchronized void trying() {
        settleCurrentTry();
        tries++;
        currentTryStartNanos = System.nanoTime();
        currentTryMaybeExecuted = false;
    }

    /** The current try may run at Stripe (it was sent; a timeout or a dropped answer keeps it so). */
    synchronized void mayHaveExecuted() {
        currentTryMaybeExecuted = true;
    }

    /** The current try provably ran nothing at Stripe (refused connection, 409, 429, a replayed answer). */
    synchronized void didNotExecute() {
        currentTryMaybeExecuted = false;
    }

    private void settleCurrentTry() {
        if (tries > 0 && currentTryMaybeExecuted) {
            earlierMaybeExecuted = true;
            latestMaybeExecutedStartNanos = currentTryStartNanos;
        }
    }

    synchronized int tries() {
        return tries;
    }

    /** Some try of this call may have run at Stripe. */
    synchronized boolean maybeExecuted() {
        return earlierMaybeExecuted || (tries > 0 && currentTryMaybeExecuted);
    }

    /** Nanos since the start of the latest try that may have run at Stripe; -1 when none may have. */
    synchronized long sinceLastPossibleExecutionNanos() {
        if (tries > 0 && currentTryMaybeExecuted) {
            return System.nanoTime() - currentTryStartNanos;
        }
        return earlierMaybeExecuted ? System.nanoTime() - latestMaybeExecutedStartNanos : -1;
    }
}

package dev.chargeonce.stripe;

import java.time.Duration;

/**
 * One create call, all its tries classified together.
 *
 * @param outcome             what the call proved
 * @param sinceLastSend       how long ago the latest try that may have run at Stripe started; null when no try can
 *                            have run there. Stripe may still be working on that try for a while (see
 *                            {@link StripeConfig#requestMaxDuration()}).
 * @param tries               tries sent (fault-tolerance retries included)
 */
public record StripeCall(StripeOutcome outcome, Duration sinceLastSend, int tries) {
}

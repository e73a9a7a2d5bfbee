/**
 * Stripe's rate limits, kept by the service instead of discovered as {@code 429}s.
 *
 * <p>Stripe limits each account per second (about 100 requests in live mode, and each endpoint 25 unless stated
 * otherwise) and answers {@code 429} beyond. Every instance of the service on one account takes its requests from
 * one budget, so that a burst that would outrun the account is spread over time instead of refused:
 *
 * <ul>
 *   <li><b>One schedule per (account, endpoint, class)</b> in {@code stripe_rate_budget} ({@link
 *       dev.chargeonce.ratebudget.Schedule}): the moment up to which permits are booked. Permits are spaced by the
 *       interval of the schedule's rate, whichever instance books them, so the requests of all instances together
 *       never exceed the rate in any second by more than the tolerance's worth.</li>
 *   <li><b>Batches</b> ({@link dev.chargeonce.ratebudget.LocalSlots}): an instance books as many permits as it has
 *       requests waiting, or its last period's demand, in one statement, and uses each at its slot. A slot not used
 *       by its time plus the tolerance is dropped: a killed instance loses its batch, never the schedule.</li>
 *   <li><b>Waiting, then an honest refusal</b>: a request waits for its slot within its deadline; one whose slot
 *       would come later is refused with when it would come ({@code Retry-After}), and books nothing.</li>
 *   <li><b>Classes</b> ({@link dev.chargeonce.ratebudget.TrafficClass}): each owns a share of the rate, its floor,
 *       and before waiting borrows a permit another class leaves idle now. Background work never waits in the
 *       foreground's line, so it takes only what the foreground leaves, and never less than its floor.</li>
 *   <li><b>Learning</b>: Stripe's {@code 429} (another system on the account, lowered limits) halves the endpoint's
 *       rate for every instance, at most once a second; the rate climbs back by itself.</li>
 * </ul>
 *
 * <p>Where the permit is taken, and why there: after the claim, in {@code OperationDriver}. The row is then in
 * flight and held, so its retries see it in flight and no other driver sends its key; a replay never waits for a
 * permit. The wait holds no database connection, and a lease is renewed after a wait so that it covers the whole
 * Stripe call from its start.
 */
package dev.chargeonce.ratebudget;

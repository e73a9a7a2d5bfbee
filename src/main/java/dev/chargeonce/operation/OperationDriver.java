package dev.chargeonce.operation;

import dev.chargeonce.idempotency.Claim;
import dev.chargeonce.idempotency.ClaimedIntent;
import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.web.ApiException;
import dev.chargeonce.web.ClaimQueue;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.idempotency.Claims;
import dev.chargeonce.idempotency.Finishes;
import dev.chargeonce.idempotency.LeaseRelease;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.ratebudget.Endpoint;
import dev.chargeonce.ratebudget.StripeRateBudget;
import dev.chargeonce.stripe.StripeCall;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeOutcome;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * Drives a claimed row of any operation (a charge, a refund: its {@link StripeSide}) to a final state: one Stripe
 * call (or a lookup when a call could not be trusted), then one fenced {@code UPDATE}. Used by the request that
 * claimed the key, by a retry that took it over and by the recovery worker, so that all follow the same rules,
 * and a fix here protects every operation.
 *
 * <p>The rules that keep it exactly-once:
 * <ul>
 *   <li>Everything Stripe sees is derived from (client, key, request): a row lost by the database and claimed
 *       again sends the very same request, and Stripe answers it as the first time.</li>
 *   <li>An unknown outcome is followed by the same Stripe key, never a new one. Stripe's {@code idempotency_error}
 *       and 409 mean "a request with this key exists there", never "absent".</li>
 *   <li>The attempt (and with it the key) moves on only when Stripe proved that the key created nothing: a list of
 *       the key's PaymentIntents came back empty <em>and</em> no request with the key can still be running there
 *       (Stripe replayed a stored 5xx for it, or the key's last send is older than the longest a Stripe request
 *       runs). The list covers the key's whole send window, page after page.</li>
 *   <li>A PaymentIntent that is not final is followed by id, never re-created; past the key horizon nothing is
 *       ever sent again; what cannot be proven is parked for an operator.</li>
 *   <li>A holder sends only inside its lease, and every write carries its lease generation: a holder that lost
 *       its lease answers what the row holds.</li>
 * </ul>
 */
@ApplicationScoped
public class OperationDriver {

    private static final Logger LOG = Logger.getLogger(OperationDriver.class);
    private static final Duration RETRY_SOON = Duration.ofSeconds(1);
    private static final Duration MAX_RETRY_AFTER = Duration.ofMinutes(1);
    /** Row marker: Stripe knows a history of the key that the row cannot place; every driver searches for it first. */
    static final String HISTORY_UNKNOWN = "history_unknown";

    private final Claims claims;
    private final Finishes finishes;
    private final dev.chargeonce.stripe.StripeGateway stripe;
    private final StripeConfig stripeConfig;
    private final IdempotencyConfig idempotencyConfig;
    private final OperationMetrics metrics;
    private final StripeRateBudget budget;
    private final long renewAfterNanos;
    private final Map<Operation, StripeSide<?>> sides = new EnumMap<>(Operation.class);

    OperationDriver(Claims claims, Finishes finishes, Instance<StripeSide<?>> sides, StripeConfig stripeConfig,
                    IdempotencyConfig idempotencyConfig, OperationMetrics metrics, dev.chargeonce.stripe.StripeGateway stripe,
                    StripeRateBudget budget) {
        this.stripe = stripe;
        this.budget = budget;
        // What the lease has beyond one Stripe call (GuaranteeChecks refuses to start without some): a call that
        // starts later than half of it after the lease was granted renews the lease first.
        Duration slack = idempotencyConfig.lease().minus(dev.chargeonce.stripe.StripeCallBudget.of(stripeConfig,
                org.eclipse.microprofile.config.ConfigProvider.getConfig()));
        this.renewAfterNanos = Math.max(0, slack.toNanos() / 2);
        this.claims = claims;
        this.finishes = finishes;
        this.stripeConfig = stripeConfig;
        this.idempotencyConfig = idempotencyConfig;
        this.metrics = metrics;
        sides.forEach(side -> this.sides.put(side.operation(), side));
    }

    /**
     * When a duplicate should come back: about when the first request is done (the recent p95 of a Stripe call,
     * plus a little for the two statements around it), never later than the first one's lease runs out (then it
     * can be taken over) and at least a second (Retry-After counts in whole seconds).
     */
    private Duration inFlightRetryAfter(Duration leaseLeft) {
        Duration expected = stripe.recentCallDuration(0.95).map(p95 -> p95.plusMillis(200)).orElse(Duration.ofSeconds(1));
        Duration answer = expected.compareTo(leaseLeft) < 0 ? expected : leaseLeft;
        return answer.compareTo(Duration.ofSeconds(1)) < 0 ? Duration.ofSeconds(1) : answer;
    }

    /** Drives a row taken over by the recovery worker: its request is read back from the row. */
    public KeyAnswer drive(ClaimedIntent intent) {
        try {
            return driveParsed(intent, side(intent.operation()));
        } catch (ApiException e) {
            // The row took on the request that first used its key (takeOnEarlierRequest): this request's answer is
            // 422, nobody waits for it; the row holds the earlier request's outcome.
            return KeyAnswer.first(new dev.chargeonce.idempotency.StoredAnswer(e.status(), e.code()));
        }
    }

    private <R> KeyAnswer driveParsed(ClaimedIntent intent, StripeSide<R> side) {
        return drive(intent, side, side.parse(intent.requestJson()));
    }

    @SuppressWarnings("unchecked")
    public <R> StripeSide<R> side(Operation op) {
        StripeSide<R> side = (StripeSide<R>) sides.get(op);
        if (side == null) {
            throw new IllegalStateException("no StripeSide for " + op);
        }
        return side;
    }

    /**
     * Every answer a claim of (client, Idempotency-Key) can lead to, for any operation: drive the row it holds now,
     * or answer what the key holds. The one {@code switch} over {@link Claim} of every endpoint.
     *
     * @param request the request as the row stores it; null: read back from the row (a refund's amount is resolved
     *                in its claim)
     */
    public <R> KeyAnswer answer(Claim claim, StripeSide<R> side, R request) {
        // The claim has committed: what follows (a Stripe call, maybe slow) no longer holds a place before the claim.
        ClaimQueue.claimMade();
        Operation op = side.operation();
        return switch (claim) {
            case Claim.Fresh fresh -> drive(fresh.intent(), side, request != null ? request : side.parse(fresh.intent().requestJson()));
            case Claim.TakenOver takenOver -> {
                metrics.takeover(op);
                yield drive(takenOver.intent(), side, request != null ? request : side.parse(takenOver.intent().requestJson()));
            }
            case Claim.Replay replay -> {
                metrics.replay(op);
                yield KeyAnswer.replay(replay.answer(), replay.firstSeen(), replay.finishedAt().plus(idempotencyConfig.keptFor()));
            }
            case Claim.InFlight inFlight -> {
                metrics.conflict(op);
                yield RetryLaterAnswers.inFlight(inFlightRetryAfter(inFlight.retryAfter()),
                        inFlight.rowId() == null ? null : new KeyAnswer.InFlightRow(inFlight.rowId(), inFlight.retryAfter()));
            }
            case Claim.Mismatch mismatch -> {
                metrics.mismatch(op);
                throw keyReused(op);
            }
            case Claim.UnderReconciliation parked -> RetryLaterAnswers.underReconciliation(op, parked.rowId());
            case Claim.Unheld unheld -> {
                // Circuit open and the key's earlier tries may have reached Stripe: say nothing about what was done.
                metrics.circuitOpenRejection(op);
                yield RetryLaterAnswers.stripeUnavailable(op, false, Duration.ofSeconds(2));
            }
        };
    }

    /** Drives a row claimed for {@code request} (its fingerprint matched the row's, so it is the row's request). */
    public <R> KeyAnswer drive(ClaimedIntent intent, StripeSide<R> side, R request) {
        if (intent.stripeObjectId() != null) {
            return followPending(intent, side, request);
        }
        if (HISTORY_UNKNOWN.equals(intent.lastStripeError())) {
            return searchUnknownHistory(intent, side, request, null);
        }
        if (intent.keyBeyondHorizon()) {
            return resolvePastHorizon(intent, side, request);
        }
        if (intent.keyAnsweredServerError() && intent.keySettled(stripeConfig.requestMaxDuration())) {
            // Proven by time: no request with the key can still run at Stripe, so the list of its window is final.
            // (Only after a 5xx this row received first-hand: then the key's one execution was the row's own.)
            return lookUpThenMoveOn(intent, side, request, intent.keyPaymentCreatedBy(stripeConfig.requestMaxDuration()), null);
        }
        // A first send, a re-send after an unknown outcome, or (after a 5xx) the probe that makes Stripe replay the
        // key's stored answer: all the same request with the same key.
        return send(intent, side, request);
    }

    private <R> KeyAnswer send(ClaimedIntent intent, StripeSide<R> side, R request) {
        long waitUntil = System.nanoTime() + budget.maxWait().toNanos();
        StripeCall call;
        boolean resend = false;
        while (true) {
            // A permit from the account's rate budget first. The row is claimed and held meanwhile: its retries see
            // it in flight, and no other driver sends its key; the wait holds no database connection.
            StripeRateBudget.Grant grant = budget.await(endpointOf(intent.operation()), Math.min(waitUntil, lastPermitWait(intent)));
            if (!grant.granted()) {
                metrics.rateBudgetRefusal(intent.operation());
                return release(intent, new LeaseRelease(null, null, null, null),
                        RetryLaterAnswers.stripeRateLimited(intent.operation(), intent.keyNeverSent(), grant.retryAfter()));
            }
            long sendBefore = sendBefore(intent);
            if (resend || System.nanoTime() - intent.leaseAcquiredNanos() > renewAfterNanos) {
                // The lease was sized for a call that starts at once: renewed, it covers the whole call from now.
                long renewing = System.nanoTime();
                if (!renewLease(intent)) {
                    return answerOfRow(intent);
                }
                sendBefore = renewing + sendWindow();
            }
            call = side.send(intent, request, sendBefore);
            if (!(call.outcome() instanceof StripeOutcome.NotSent notSent && notSent.rateLimited())
                    || System.nanoTime() - waitUntil >= 0) {
                break;
            }
            // Stripe's 429 is never executed: the same key is sent again once the (now lowered) budget allows.
            metrics.stripeOutcome(intent.operation(), call.outcome());
            resend = true;
        }
        metrics.stripeOutcome(intent.operation(), call.outcome());
        return switch (call.outcome()) {
            case StripeOutcome.NotSent n when n.rateLimited() -> {
                LOG.infof("%s: Stripe answered 429 until the request's wait was over; lease released", intent.id());
                yield release(intent, new LeaseRelease(null, call.sinceLastSend(), null, null), RetryLaterAnswers.stripeRateLimited(
                        intent.operation(), intent.keyNeverSent() && call.sinceLastSend() == null, RETRY_SOON));
            }
            case StripeOutcome.NotSent n -> {
                LOG.infof("%s: Stripe not called (%s); lease released", intent.id(), n.reason());
                yield release(intent, new LeaseRelease(null, call.sinceLastSend(), null, null),
                        RetryLaterAnswers.stripeUnavailable(intent.operation(), intent.keyNeverSent() && call.sinceLastSend() == null, RETRY_SOON));
            }
            case StripeOutcome.Unknown u -> {
                LOG.warnf("%s: outcome unknown (%s); lease released for the next driver", intent.id(), u.reason());
                yield u.serverError()
                        // The worker comes back once no request of the key can still be running; clients may probe sooner.
                        ? release(intent, new LeaseRelease(ClaimedIntent.SERVER_ERROR, call.sinceLastSend(),
                                stripeConfig.requestMaxDuration(), null), RetryLaterAnswers.stripeOutcomeUnknown(intent.operation(), RETRY_SOON))
                        : release(intent, new LeaseRelease(null, call.sinceLastSend(), null, null),
                                RetryLaterAnswers.stripeOutcomeUnknown(intent.operation(), RETRY_SOON));
            }
            case StripeOutcome.KeyFinishedWithError k -> {
                if (!intent.keyAnsweredServerError()) {
                    // Stripe's one execution of the key ended in 5xx, and this row never received that 5xx itself:
                    // the execution may be a try of its own that it never heard back from, or a request of a row
                    // the database lost (failover, restore), sent before this row existed.
                    yield searchUnknownHistory(intent, side, request, call);
                }
                // Proven by replay: the execution that ended in the 5xx this row received is over, and it started
                // at one of the row's own sends. Its list now tells the truth.
                Instant createdBy = earliest(databaseNow(intent), intent.keyPaymentCreatedBy(stripeConfig.requestMaxDuration()));
                yield lookUpThenMoveOn(intent, side, request, createdBy, call);
            }
            case StripeOutcome.KeyConflict c -> takeOnEarlierRequest(intent, side, request, c);
            default -> settle(intent, side, request, call.outcome(), call.sinceLastSend());
        };
    }

    /**
     * Stripe refused the row's request: its key was first used with other parameters. Everything Stripe sees is
     * derived from (client, key, request), so the key had a row the database lost (a failover to an asynchronous
     * standby, a restore) and this row was claimed by another request. The key's Stripe object says which request
     * came first: the row takes it on (its fingerprint and request) with its outcome, as if it had never been lost,
     * so the first request's retry is answered what it was, and this request is told {@code 422}. When nothing says
     * (none found, or made by a version that did not write the request's fingerprint), the row is parked.
     */
    private <R> KeyAnswer takeOnEarlierRequest(ClaimedIntent intent, StripeSide<R> side, R request, StripeOutcome.KeyConflict conflict) {
        Instant now = databaseNow(intent);
        Optional<EarlierRequest> found;
        try {
            found = side.earlierRequest(intent, request, now.minus(stripeConfig.lostHistoryLookback()), now,
                    stripeConfig.lostHistoryMaxPages(), keepingLease(intent));
        } catch (StripeGateway.LookupAbandonedException e) {
            return answerOfRow(intent);
        } catch (StripeGateway.LookupTooLargeException e) {
            return park(intent, "Stripe refused the key, first used with other parameters, and the search for the"
                    + " request that used it is too large: " + e.getMessage());
        } catch (StripeGateway.LookupFailedException e) {
            LOG.warnf("%s: Stripe refused the key, first used with other parameters; the search failed (%s)",
                    intent.id(), e.getMessage());
            return release(intent, new LeaseRelease(null, null, null, null),
                    RetryLaterAnswers.stripeOutcomeUnknown(intent.operation(), RETRY_SOON));
        }
        if (found.isEmpty() || found.get().sameAsThis()) {
            return park(intent, "Stripe refused the key, first used with other parameters: this row's history was lost"
                    + " (failover, restore), the retry's body differs, and no Stripe object of the key tells the first"
                    + " request. " + conflict.reason());
        }
        EarlierRequest earlier = found.get();
        if (!claims.takeOnEarlierRequest(intent, earlier.fingerprint(), earlier.requestJson(), earlier.amount(), earlier.currency())) {
            return answerOfRow(intent);
        }
        LOG.warnf("%s: the key was first used by another request, whose row the database lost: the row holds that"
                + " request again, and this one is refused", intent.id());
        ClaimedIntent restored = intent.withRequest(earlier.requestJson(), earlier.amount(), earlier.currency());
        settle(restored, side, side.parse(earlier.requestJson()), earlier.outcome(), null);
        metrics.mismatch(intent.operation());
        throw keyReused(intent.operation());
    }

    private static ApiException keyReused(Operation op) {
        return new ApiException(422, "idempotency_error", "idempotency_key_reused",
                "This Idempotency-Key was already used with a different request. Use a new key for a new "
                        + (op == Operation.REFUND ? "refund." : "payment."), IdempotencyKey.HEADER, null);
    }

    /** What Stripe (or a lookup, or a retrieve) said about a PaymentIntent: the key's answer, or pending. */
    private <R> KeyAnswer settle(ClaimedIntent intent, StripeSide<R> side, R request, StripeOutcome outcome, Duration sinceLastSend) {
        if (outcome instanceof StripeOutcome.KeyConflict conflict) {
            // A lookup found the key's payment made by another request (its row lost): take that request on.
            return takeOnEarlierRequest(intent, side, request, conflict);
        }
        Optional<Finishes.Final> answer = side.finalAnswer(new RowRef(intent.id(), intent.createdAt()), request,
                outcome, firstLook());
        if (answer.isPresent()) {
            return finish(intent, answer.get());
        }
        if (outcome instanceof StripeOutcome.Pending p) {
            Duration recheck = pendingRecheck(intent.pendingChecks());
            LOG.infof("%s: PaymentIntent %s is %s; followed by id, next look in %s", intent.id(),
                    p.paymentIntentId(), p.status(), recheck);
            return release(intent, new LeaseRelease(null, sinceLastSend, recheck, p.paymentIntentId()),
                    RetryLaterAnswers.stripePending(intent.operation(), p.paymentIntentId(), min(recheck, MAX_RETRY_AFTER)));
        }
        throw new IllegalStateException("not a PaymentIntent's state: " + outcome);
    }

    /** When the sync worker first looks at an accepted charge (a webhook usually comes first). */
    private Duration firstLook() {
        return stripeConfig.pendingRecheck().get(0);
    }

    /**
     * Lists the current key's PaymentIntents from its first send to {@code createdBy}, once no request with the
     * key can still run at Stripe. Found: that is the outcome. Not found: the key created nothing, and only now
     * may the next key be used, in the same drive, under a renewed lease.
     */
    private <R> KeyAnswer lookUpThenMoveOn(ClaimedIntent intent, StripeSide<R> side, R request, Instant createdBy, StripeCall probe) {
        Duration sinceLastSend = probe == null ? null : probe.sinceLastSend();
        Optional<StripeOutcome> found;
        try {
            found = side.find(intent, request, intent.stripeKeyFirstSent(), createdBy,
                    stripeConfig.lookupMaxPages(), keepingLease(intent));
        } catch (StripeGateway.LookupAbandonedException e) {
            return answerOfRow(intent);
        } catch (StripeGateway.LookupTooLargeException e) {
            return park(intent, "the lookup of the key's PaymentIntents could not be completed: " + e.getMessage());
        } catch (StripeGateway.LookupFailedException e) {
            LOG.warnf("%s: lookup failed (%s); left for the next driver", intent.id(), e.getMessage());
            return release(intent, new LeaseRelease(null, sinceLastSend, null, null), RetryLaterAnswers.stripeOutcomeUnknown(intent.operation(), RETRY_SOON));
        }
        if (found.isPresent()) {
            metrics.lookupResolved(intent.operation());
            return settle(intent, side, request, found.get(), sinceLastSend);
        }
        return moveOn(intent, side, request);
    }

    /** The current key created nothing and runs nowhere: the next key, in the same drive, under a renewed lease. */
    private <R> KeyAnswer moveOn(ClaimedIntent intent, StripeSide<R> side, R request) {
        Optional<ClaimedIntent> next = claims.nextStripeAttempt(intent, stripeConfig.keyHorizon());
        if (next.isEmpty()) {
            return answerOfRow(intent);
        }
        LOG.infof("%s: Stripe attempt %d proven to have created nothing; sending attempt %d", intent.id(),
                intent.stripeAttempt(), next.get().stripeAttempt());
        return send(next.get(), side, request);
    }

    /**
     * Stripe has a stored 5xx for the key that this row cannot place in its own history: the key may have been sent
     * before this row existed (the database lost the row: a failover to an asynchronous standby, a restore), by an
     * earlier row that may also have gone on to later attempts. The key's PaymentIntents are searched by its
     * identity (every attempt's) over the lost-history lookback, twice Stripe's 24 h key window. Found: that is the
     * outcome. None: no request of this key's history created a payment (the replay proves its execution is over),
     * so the next attempt is safe: its key is the one any earlier row would have used next, and Stripe answers it
     * with that row's result if there was one. A search too large to finish parks the row.
     */
    private <R> KeyAnswer searchUnknownHistory(ClaimedIntent intent, StripeSide<R> side, R request, StripeCall probe) {
        Duration sinceLastSend = probe == null ? null : probe.sinceLastSend();
        Instant now = databaseNow(intent);
        Optional<StripeOutcome> found;
        try {
            found = side.find(intent, request, now.minus(stripeConfig.lostHistoryLookback()), now,
                    stripeConfig.lostHistoryMaxPages(), keepingLease(intent));
        } catch (StripeGateway.LookupAbandonedException e) {
            return answerOfRow(intent);
        } catch (StripeGateway.LookupTooLargeException e) {
            return park(intent, "Stripe replayed a 5xx this row never received for its key, and the search for the key's"
                    + " PaymentIntents over chargeonce.stripe.lost-history-lookback is too large: " + e.getMessage());
        } catch (StripeGateway.LookupFailedException e) {
            LOG.warnf("%s: Stripe replayed a 5xx this row never received; the search failed (%s)",
                    intent.id(), e.getMessage());
            // Remember it: the next driver must search again, not treat the key's history as its own. Not before a
            // minute: the search is a long one.
            return release(intent, new LeaseRelease(HISTORY_UNKNOWN, sinceLastSend, Duration.ofMinutes(1), null),
                    RetryLaterAnswers.stripeOutcomeUnknown(intent.operation(), RETRY_SOON));
        }
        if (found.isPresent()) {
            metrics.lookupResolved(intent.operation());
            LOG.warnf("%s: found the key's PaymentIntent in a history the row did not know", intent.id());
            return settle(intent, side, request, found.get(), sinceLastSend);
        }
        return moveOn(intent, side, request);
    }

    /**
     * Stripe may have forgotten a key older than the horizon: a create now could charge a second time. Never send
     * one; look the payment up once no request of the key can still run, and park the row if it is not there.
     */
    private <R> KeyAnswer resolvePastHorizon(ClaimedIntent intent, StripeSide<R> side, R request) {
        Duration maxDuration = stripeConfig.requestMaxDuration();
        if (!intent.keySettled(maxDuration)) {
            return release(intent, new LeaseRelease(null, null, maxDuration, null), RetryLaterAnswers.stripeOutcomeUnknown(intent.operation(), RETRY_SOON));
        }
        Optional<StripeOutcome> found;
        try {
            found = side.find(intent, request, intent.stripeKeyFirstSent(),
                    intent.keyPaymentCreatedBy(maxDuration), stripeConfig.lookupMaxPages(), keepingLease(intent));
        } catch (StripeGateway.LookupAbandonedException e) {
            return answerOfRow(intent);
        } catch (StripeGateway.LookupTooLargeException e) {
            return park(intent, "the Stripe key is older than chargeonce.stripe.key-horizon and its lookup could not be"
                    + " completed: " + e.getMessage());
        } catch (StripeGateway.LookupFailedException e) {
            LOG.warnf("%s: lookup failed (%s); left for the next driver", intent.id(), e.getMessage());
            return release(intent, LeaseRelease.unchanged(), RetryLaterAnswers.stripeOutcomeUnknown(intent.operation(), RETRY_SOON));
        }
        if (found.isPresent()) {
            metrics.lookupResolved(intent.operation());
            return settle(intent, side, request, found.get(), null);
        }
        return park(intent, "the Stripe key is older than chargeonce.stripe.key-horizon and no PaymentIntent of it was found");
    }

    /** A PaymentIntent Stripe named but had not finished: retrieved by id, never re-created. */
    private <R> KeyAnswer followPending(ClaimedIntent intent, StripeSide<R> side, R request) {
        StripeOutcome now;
        try {
            now = side.look(intent.stripeObjectId(), false).outcome();
        } catch (StripeGateway.LookupFailedException e) {
            LOG.warnf("%s: could not retrieve %s (%s)", intent.id(), intent.stripeObjectId(), e.getMessage());
            Duration recheck = pendingRecheck(intent.pendingChecks());
            return release(intent, new LeaseRelease(null, null, recheck, null),
                    RetryLaterAnswers.stripePending(intent.operation(), intent.stripeObjectId(), min(recheck, MAX_RETRY_AFTER)));
        }
        return settle(intent, side, request, now, null);
    }

    private KeyAnswer park(ClaimedIntent intent, String reason) {
        LOG.errorf("%s: parked for reconciliation: %s", intent.id(), reason);
        if (!claims.markForReconciliation(intent, reason)) {
            return answerOfRow(intent);
        }
        metrics.parkedForReconciliation(intent.operation());
        return RetryLaterAnswers.underReconciliation(intent.operation(), intent.id());
    }

    private KeyAnswer finish(ClaimedIntent intent, Finishes.Final answer) {
        DatabaseUnavailableException last = null;
        // Stripe has answered: the answer must be recorded. A short blip of the database is bridged here; a longer
        // one leaves the row processing, and the next driver re-sends the same Stripe key and gets the same answer.
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                if (finishes.finish(intent, answer)) {
                    return KeyAnswer.first(answer.answer());
                }
                return answerOfRow(intent);
            } catch (DatabaseUnavailableException e) {
                last = e;
                sleep(250L << attempt);
            }
        }
        LOG.warnf("%s: Stripe answered but the row could not be finished (%s)", intent.id(), last.getMessage());
        return RetryLaterAnswers.databaseUnavailable(intent.operation(), Duration.ofSeconds(2));
    }

    /** The lease was lost: answer exactly what the row holds, never our own view. */
    private KeyAnswer answerOfRow(ClaimedIntent intent) {
        metrics.fencedOut(intent.operation());
        Finishes.RowState state = finishes.stateOf(intent.operation(), intent.clientId(), intent.id());
        if (state.parked()) {
            return RetryLaterAnswers.underReconciliation(intent.operation(), intent.id());
        }
        return state.answer().map(answer -> KeyAnswer.replay(answer, null, null)).orElseGet(() -> RetryLaterAnswers.inFlight(RETRY_SOON,
                new KeyAnswer.InFlightRow(intent.id(), RETRY_SOON)));
    }

    /**
     * For a lookup: renews the holder's lease every third of it, so that a lookup longer than a lease is not taken
     * over and started again by the next driver (and again). False once the lease is lost.
     */
    private java.util.function.BooleanSupplier keepingLease(ClaimedIntent intent) {
        long every = idempotencyConfig.lease().toNanos() / 3;
        long[] renewedAt = {intent.leaseAcquiredNanos()};
        return () -> {
            if (System.nanoTime() - renewedAt[0] < every) {
                return true;
            }
            long before = System.nanoTime();
            try {
                if (!claims.renewLease(intent)) {
                    return false;
                }
            } catch (DatabaseUnavailableException e) {
                return false;
            }
            renewedAt[0] = before;
            return true;
        };
    }

    private KeyAnswer release(ClaimedIntent intent, LeaseRelease release, KeyAnswer answer) {
        try {
            if (!claims.release(intent, release)) {
                return answerOfRow(intent);
            }
        } catch (DatabaseUnavailableException e) {
            // The lease will expire by itself, and the next holder assumes this one sent until then: nothing is lost.
            LOG.warnf("%s: could not release the lease (%s)", intent.id(), e.getMessage());
        }
        return answer;
    }

    private Duration pendingRecheck(int checksSoFar) {
        List<Duration> schedule = stripeConfig.pendingRecheck();
        return schedule.get(Math.min(checksSoFar, schedule.size() - 1));
    }

    /** No try starts in the last stretch of the lease: the next holder may take over when it ends. */
    private long sendBefore(ClaimedIntent intent) {
        return intent.leaseAcquiredNanos() + sendWindow();
    }

    /** From a lease's start, how long tries may start: all of it but its last stretch. */
    private long sendWindow() {
        Duration lease = idempotencyConfig.lease();
        long margin = Math.min(Duration.ofSeconds(2).toNanos(), lease.toNanos() / 10);
        return lease.toNanos() - margin;
    }

    /** The latest a permit may be waited for: the lease must still be held to be renewed after the wait. */
    private long lastPermitWait(ClaimedIntent intent) {
        return intent.leaseAcquiredNanos() + sendWindow() / 2;
    }

    private boolean renewLease(ClaimedIntent intent) {
        try {
            return claims.renewLease(intent);
        } catch (DatabaseUnavailableException e) {
            return false;
        }
    }

    private static Endpoint endpointOf(Operation op) {
        return op == Operation.REFUND ? Endpoint.REFUNDS_CREATE : Endpoint.PAYMENT_INTENTS_CREATE;
    }

    /** Now by the database's clock (the clock of every timestamp in the row), from when the lease was granted. */
    private static Instant databaseNow(ClaimedIntent intent) {
        return intent.databaseNow().plusNanos(System.nanoTime() - intent.leaseAcquiredNanos());
    }

    private static Instant earliest(Instant a, Instant b) {
        return a.isBefore(b) ? a : b;
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package dev.chargeonce.charge;

import dev.chargeonce.idempotency.ClaimedIntent;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.IdempotencyConfig;
import dev.chargeonce.idempotency.IdempotencyStore;
import dev.chargeonce.idempotency.LeaseRelease;
import dev.chargeonce.stripe.PaymentOrder;
import dev.chargeonce.stripe.StripeCall;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.stripe.StripeOutcome;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * Drives a claimed row to a final state: one Stripe call (or a lookup when a call could not be trusted), then
 * one fenced {@code UPDATE}. Used by the request that claimed the key, by a retry that took it over and by the
 * recovery worker, so that all three follow the same rules.
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
public class ChargeDriver {

    private static final Logger LOG = Logger.getLogger(ChargeDriver.class);
    private static final Duration RETRY_SOON = Duration.ofSeconds(1);
    private static final Duration MAX_RETRY_AFTER = Duration.ofMinutes(1);
    /** Row marker: Stripe knows a history of the key that the row cannot place; every driver searches for it first. */
    static final String HISTORY_UNKNOWN = "history_unknown";

    private final IdempotencyStore store;
    private final StripeGateway stripe;
    private final StripeConfig stripeConfig;
    private final IdempotencyConfig idempotencyConfig;
    private final ChargeMetrics metrics;

    ChargeDriver(IdempotencyStore store, StripeGateway stripe, StripeConfig stripeConfig, IdempotencyConfig idempotencyConfig,
                 ChargeMetrics metrics) {
        this.store = store;
        this.stripe = stripe;
        this.stripeConfig = stripeConfig;
        this.idempotencyConfig = idempotencyConfig;
        this.metrics = metrics;
    }

    /** Drives a row taken over by the recovery worker: its request is read back from the row. */
    public ChargeAnswer drive(ClaimedIntent intent) {
        return drive(intent, ChargeRequest.fromCanonicalJson(intent.requestJson()));
    }

    /** Drives a row claimed for {@code request} (its fingerprint matched the row's, so it is the row's request). */
    ChargeAnswer drive(ClaimedIntent intent, ChargeRequest request) {
        if (intent.paymentIntentId() != null) {
            return followPending(intent, request);
        }
        if (HISTORY_UNKNOWN.equals(intent.lastStripeError())) {
            return searchUnknownHistory(intent, request, null);
        }
        if (intent.keyBeyondHorizon()) {
            return resolvePastHorizon(intent, request);
        }
        if (intent.keyAnsweredServerError() && intent.keySettled(stripeConfig.requestMaxDuration())) {
            // Proven by time: no request with the key can still run at Stripe, so the list of its window is final.
            // (Only after a 5xx this row received first-hand: then the key's one execution was the row's own.)
            return lookUpThenMoveOn(intent, request, intent.keyPaymentCreatedBy(stripeConfig.requestMaxDuration()), null);
        }
        // A first send, a re-send after an unknown outcome, or (after a 5xx) the probe that makes Stripe replay the
        // key's stored answer: all the same request with the same key.
        return send(intent, request);
    }

    private ChargeAnswer send(ClaimedIntent intent, ChargeRequest request) {
        StripeCall call = stripe.createAndConfirm(order(intent, request));
        metrics.stripeOutcome(call.outcome());
        return switch (call.outcome()) {
            case StripeOutcome.NotSent n -> {
                LOG.infof("charge %s: Stripe not called (%s); lease released", intent.id(), n.reason());
                yield release(intent, new LeaseRelease(null, call.sinceLastSend(), null, null),
                        ChargeResponses.stripeUnavailable(intent.keyNeverSent() && call.sinceLastSend() == null, RETRY_SOON));
            }
            case StripeOutcome.Unknown u -> {
                LOG.warnf("charge %s: outcome unknown (%s); lease released for the next driver", intent.id(), u.reason());
                yield u.serverError()
                        // The worker comes back once no request of the key can still be running; clients may probe sooner.
                        ? release(intent, new LeaseRelease(ClaimedIntent.SERVER_ERROR, call.sinceLastSend(),
                                stripeConfig.requestMaxDuration(), null), ChargeResponses.stripeOutcomeUnknown(RETRY_SOON))
                        : release(intent, new LeaseRelease(null, call.sinceLastSend(), null, null),
                                ChargeResponses.stripeOutcomeUnknown(RETRY_SOON));
            }
            case StripeOutcome.KeyFinishedWithError k -> {
                if (!intent.keyAnsweredServerError()) {
                    // Stripe's one execution of the key ended in 5xx, and this row never received that 5xx itself:
                    // the execution may be a try of its own that it never heard back from, or a request of a row
                    // the database lost (failover, restore), sent before this row existed.
                    yield searchUnknownHistory(intent, request, call);
                }
                // Proven by replay: the execution that ended in the 5xx this row received is over, and it started
                // at one of the row's own sends. Its list now tells the truth.
                Instant createdBy = earliest(databaseNow(intent), intent.keyPaymentCreatedBy(stripeConfig.requestMaxDuration()));
                yield lookUpThenMoveOn(intent, request, createdBy, call);
            }
            case StripeOutcome.KeyConflict c -> park(intent, "Stripe refused the key, first used with other parameters: "
                    + "this row's history was lost (failover, restore) and the retry's body differs. " + c.reason());
            default -> settle(intent, request, call.outcome(), call.sinceLastSend());
        };
    }

    /** What Stripe (or a lookup, or a retrieve) said about a PaymentIntent: the key's answer, or pending. */
    private ChargeAnswer settle(ClaimedIntent intent, ChargeRequest request, StripeOutcome outcome, Duration sinceLastSend) {
        ChargeRef charge = new ChargeRef(intent.id(), intent.createdAt());
        Optional<IdempotencyStore.Final> answer = ChargeOutcomes.finalAnswer(charge, request, outcome, firstLook());
        if (answer.isPresent()) {
            return finish(intent, answer.get());
        }
        if (outcome instanceof StripeOutcome.Pending p) {
            Duration recheck = pendingRecheck(intent.pendingChecks());
            LOG.infof("charge %s: PaymentIntent %s is %s; followed by id, next look in %s", intent.id(),
                    p.paymentIntentId(), p.status(), recheck);
            return release(intent, new LeaseRelease(null, sinceLastSend, recheck, p.paymentIntentId()),
                    ChargeResponses.paymentProcessing(p.paymentIntentId(), min(recheck, MAX_RETRY_AFTER)));
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
    private ChargeAnswer lookUpThenMoveOn(ClaimedIntent intent, ChargeRequest request, Instant createdBy, StripeCall probe) {
        Duration sinceLastSend = probe == null ? null : probe.sinceLastSend();
        Optional<StripeOutcome> found;
        try {
            found = stripe.findPaymentIntent(identity(intent), intent.id(), intent.stripeKeyFirstSent(), createdBy,
                    stripeConfig.lookupMaxPages(), keepingLease(intent));
        } catch (StripeGateway.LookupAbandonedException e) {
            return answerOfRow(intent);
        } catch (StripeGateway.LookupTooLargeException e) {
            return park(intent, "the lookup of the key's PaymentIntents could not be completed: " + e.getMessage());
        } catch (StripeGateway.LookupFailedException e) {
            LOG.warnf("charge %s: lookup failed (%s); left for the next driver", intent.id(), e.getMessage());
            return release(intent, new LeaseRelease(null, sinceLastSend, null, null), ChargeResponses.stripeOutcomeUnknown(RETRY_SOON));
        }
        if (found.isPresent()) {
            metrics.lookupResolved();
            return settle(intent, request, found.get(), sinceLastSend);
        }
        return moveOn(intent, request);
    }

    /** The current key created nothing and runs nowhere: the next key, in the same drive, under a renewed lease. */
    private ChargeAnswer moveOn(ClaimedIntent intent, ChargeRequest request) {
        Optional<ClaimedIntent> next = store.nextStripeAttempt(intent, stripeConfig.keyHorizon());
        if (next.isEmpty()) {
            return answerOfRow(intent);
        }
        LOG.infof("charge %s: Stripe attempt %d proven to have created nothing; sending attempt %d", intent.id(),
                intent.stripeAttempt(), next.get().stripeAttempt());
        return send(next.get(), request);
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
    private ChargeAnswer searchUnknownHistory(ClaimedIntent intent, ChargeRequest request, StripeCall probe) {
        Duration sinceLastSend = probe == null ? null : probe.sinceLastSend();
        Instant now = databaseNow(intent);
        Optional<StripeOutcome> found;
        try {
            found = stripe.findPaymentIntent(identity(intent), intent.id(), now.minus(stripeConfig.lostHistoryLookback()), now,
                    stripeConfig.lostHistoryMaxPages(), keepingLease(intent));
        } catch (StripeGateway.LookupAbandonedException e) {
            return answerOfRow(intent);
        } catch (StripeGateway.LookupTooLargeException e) {
            return park(intent, "Stripe replayed a 5xx this row never received for its key, and the search for the key's"
                    + " PaymentIntents over chargeonce.stripe.lost-history-lookback is too large: " + e.getMessage());
        } catch (StripeGateway.LookupFailedException e) {
            LOG.warnf("charge %s: Stripe replayed a 5xx this row never received; the search failed (%s)",
                    intent.id(), e.getMessage());
            // Remember it: the next driver must search again, not treat the key's history as its own. Not before a
            // minute: the search is a long one.
            return release(intent, new LeaseRelease(HISTORY_UNKNOWN, sinceLastSend, Duration.ofMinutes(1), null),
                    ChargeResponses.stripeOutcomeUnknown(RETRY_SOON));
        }
        if (found.isPresent()) {
            metrics.lookupResolved();
            LOG.warnf("charge %s: found the key's PaymentIntent in a history the row did not know", intent.id());
            return settle(intent, request, found.get(), sinceLastSend);
        }
        return moveOn(intent, request);
    }

    /**
     * Stripe may have forgotten a key older than the horizon: a create now could charge a second time. Never send
     * one; look the payment up once no request of the key can still run, and park the row if it is not there.
     */
    private ChargeAnswer resolvePastHorizon(ClaimedIntent intent, ChargeRequest request) {
        Duration maxDuration = stripeConfig.requestMaxDuration();
        if (!intent.keySettled(maxDuration)) {
            return release(intent, new LeaseRelease(null, null, maxDuration, null), ChargeResponses.stripeOutcomeUnknown(RETRY_SOON));
        }
        Optional<StripeOutcome> found;
        try {
            found = stripe.findPaymentIntent(identity(intent), intent.id(), intent.stripeKeyFirstSent(),
                    intent.keyPaymentCreatedBy(maxDuration), stripeConfig.lookupMaxPages(), keepingLease(intent));
        } catch (StripeGateway.LookupAbandonedException e) {
            return answerOfRow(intent);
        } catch (StripeGateway.LookupTooLargeException e) {
            return park(intent, "the Stripe key is older than chargeonce.stripe.key-horizon and its lookup could not be"
                    + " completed: " + e.getMessage());
        } catch (StripeGateway.LookupFailedException e) {
            LOG.warnf("charge %s: lookup failed (%s); left for the next driver", intent.id(), e.getMessage());
            return release(intent, LeaseRelease.unchanged(), ChargeResponses.stripeOutcomeUnknown(RETRY_SOON));
        }
        if (found.isPresent()) {
            metrics.lookupResolved();
            return settle(intent, request, found.get(), null);
        }
        return park(intent, "the Stripe key is older than chargeonce.stripe.key-horizon and no PaymentIntent of it was found");
    }

    /** A PaymentIntent Stripe named but had not finished: retrieved by id, never re-created. */
    private ChargeAnswer followPending(ClaimedIntent intent, ChargeRequest request) {
        StripeOutcome now;
        try {
            now = stripe.retrieve(intent.paymentIntentId());
        } catch (StripeGateway.LookupFailedException e) {
            LOG.warnf("charge %s: could not retrieve %s (%s)", intent.id(), intent.paymentIntentId(), e.getMessage());
            Duration recheck = pendingRecheck(intent.pendingChecks());
            return release(intent, new LeaseRelease(null, null, recheck, null),
                    ChargeResponses.paymentProcessing(intent.paymentIntentId(), min(recheck, MAX_RETRY_AFTER)));
        }
        return settle(intent, request, now, null);
    }

    private ChargeAnswer park(ClaimedIntent intent, String reason) {
        LOG.errorf("charge %s: parked for reconciliation: %s", intent.id(), reason);
        if (!store.markForReconciliation(intent, reason)) {
            return answerOfRow(intent);
        }
        metrics.parkedForReconciliation();
        return ChargeResponses.underReconciliation();
    }

    private ChargeAnswer finish(ClaimedIntent intent, IdempotencyStore.Final answer) {
        DatabaseUnavailableException last = null;
        // Stripe has answered: the answer must be recorded. A short blip of the database is bridged here; a longer
        // one leaves the row processing, and the next driver re-sends the same Stripe key and gets the same answer.
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                if (store.finish(intent, answer)) {
                    return ChargeAnswer.first(answer.answer());
                }
                return answerOfRow(intent);
            } catch (DatabaseUnavailableException e) {
                last = e;
                sleep(250L << attempt);
            }
        }
        LOG.warnf("charge %s: Stripe answered but the row could not be finished (%s)", intent.id(), last.getMessage());
        return ChargeResponses.databaseUnavailable(Duration.ofSeconds(2));
    }

    /** The lease was lost: answer exactly what the row holds, never our own view. */
    private ChargeAnswer answerOfRow(ClaimedIntent intent) {
        metrics.fencedOut();
        IdempotencyStore.RowState state = store.stateOf(intent.id());
        if (state.parked()) {
            return ChargeResponses.underReconciliation();
        }
        return state.answer().map(ChargeAnswer::replay).orElseGet(() -> ChargeResponses.inFlight(RETRY_SOON));
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
                if (!store.renewLease(intent)) {
                    return false;
                }
            } catch (DatabaseUnavailableException e) {
                return false;
            }
            renewedAt[0] = before;
            return true;
        };
    }

    private ChargeAnswer release(ClaimedIntent intent, LeaseRelease release, ChargeAnswer answer) {
        try {
            if (!store.release(intent, release)) {
                return answerOfRow(intent);
            }
        } catch (DatabaseUnavailableException e) {
            // The lease will expire by itself, and the next holder assumes this one sent until then: nothing is lost.
            LOG.warnf("charge %s: could not release the lease (%s)", intent.id(), e.getMessage());
        }
        return answer;
    }

    private Duration pendingRecheck(int checksSoFar) {
        List<Duration> schedule = stripeConfig.pendingRecheck();
        return schedule.get(Math.min(checksSoFar, schedule.size() - 1));
    }

    private PaymentOrder order(ClaimedIntent intent, ChargeRequest request) {
        Duration lease = idempotencyConfig.lease();
        // No try starts in the last stretch of the lease: the next holder may take over when it ends.
        long margin = Math.min(Duration.ofSeconds(2).toNanos(), lease.toNanos() / 10);
        return new PaymentOrder(identity(intent), intent.clientId(), intent.stripeAttempt(),
                StripeKeys.derive(intent.clientId(), intent.key(), intent.stripeAttempt()), request.amount(),
                request.currency(), request.paymentMethod(), request.customer(), request.description(), request.metadata(),
                intent.leaseEndsNanos(lease) - margin);
    }

    private static String identity(ClaimedIntent intent) {
        return StripeKeys.identity(intent.clientId(), intent.key().value());
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

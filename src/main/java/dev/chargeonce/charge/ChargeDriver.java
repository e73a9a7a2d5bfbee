package dev.chargeonce.charge;

import dev.chargeonce.idempotency.ClaimedIntent;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.IdempotencyStore;
import dev.chargeonce.idempotency.IntentStatus;
import dev.chargeonce.idempotency.StoredAnswer;
import dev.chargeonce.stripe.PaymentOrder;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.stripe.StripeOutcome;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * Drives a claimed row to a final state: one Stripe call (or a lookup when a call could not be trusted), then
 * one fenced {@code UPDATE}. Used by the request that claimed the key, by a retry that took it over and by the
 * recovery worker, so that all three follow the same rules.
 *
 * <p>The rules that keep it exactly-once: the Stripe key comes from the row, never from the call; after a
 * Stripe 5xx or past the key horizon, the payment is looked up instead of re-sent; the Stripe attempt (and with
 * it the key) only moves on once the lookup proved that nothing was created; the final write carries the lease
 * generation, and a holder that lost its lease answers what the row holds.
 */
@ApplicationScoped
public class ChargeDriver {

    private static final Logger LOG = Logger.getLogger(ChargeDriver.class);
    private static final Duration RETRY_SOON = Duration.ofSeconds(1);

    private final IdempotencyStore store;
    private final StripeGateway stripe;
    private final ChargeMetrics metrics;

    ChargeDriver(IdempotencyStore store, StripeGateway stripe, ChargeMetrics metrics) {
        this.store = store;
        this.stripe = stripe;
        this.metrics = metrics;
    }

    /** Drives a row taken over by the recovery worker: its request is read back from the row. */
    public ChargeAnswer drive(ClaimedIntent intent) {
        return drive(intent, ChargeRequest.fromCanonicalJson(intent.requestJson()));
    }

    /** Drives a row claimed for {@code request} (its fingerprint matched the row's, so it is the row's request). */
    ChargeAnswer drive(ClaimedIntent intent, ChargeRequest request) {
        StripeOutcome outcome;
        if (intent.mustLookUpBeforeSending()) {
            Optional<StripeOutcome> found;
            try {
                // Only the current attempt can have created a PaymentIntent (earlier ones were proven empty before the
                // attempt moved on): from its first send until now, since its key may have been re-sent any time since.
                found = stripe.findPaymentIntent(intent.id(), intent.stripeKeyFirstSent(), Instant.now());
            } catch (StripeGateway.LookupFailedException e) {
                LOG.warnf("charge %s: lookup failed (%s); left for the next driver", intent.id(), e.getMessage());
                return release(intent, null, ChargeResponses.stripeOutcomeUnknown(RETRY_SOON));
            }
            if (found.isPresent()) {
                metrics.lookupResolved();
                outcome = found.get();
            } else if (intent.keyBeyondHorizon()) {
                // Stripe may have forgotten the key: a create now could charge a second time. Never send one.
                LOG.errorf("charge %s: Stripe key past the horizon and no PaymentIntent found; parked for reconciliation",
                        intent.id());
                store.markForReconciliation(intent);
                metrics.parkedForReconciliation();
                return ChargeResponses.underReconciliation();
            } else {
                // Proven: the failed attempt created nothing. Only now may a new Stripe key be used.
                Optional<ClaimedIntent> next = store.nextStripeAttempt(intent, stripe.config().keyHorizon());
                if (next.isEmpty()) {
                    return answerOfRow(intent);
                }
                intent = next.get();
                outcome = stripe.createAndConfirm(order(intent, request));
            }
        } else {
            outcome = stripe.createAndConfirm(order(intent, request));
        }
        metrics.stripeOutcome(outcome);
        return settle(intent, request, outcome);
    }

    private ChargeAnswer settle(ClaimedIntent intent, ChargeRequest request, StripeOutcome outcome) {
        return switch (outcome) {
            case StripeOutcome.Succeeded s ->
                    finish(intent, IntentStatus.COMPLETED, ChargeResponses.succeeded(intent, request, s.paymentIntentId()),
                            s.paymentIntentId());
            case StripeOutcome.Declined d ->
                    finish(intent, IntentStatus.FAILED, ChargeResponses.declined(intent, d), d.paymentIntentId());
            case StripeOutcome.RequiresAction a ->
                    finish(intent, IntentStatus.FAILED, ChargeResponses.requiresAction(intent, a), a.paymentIntentId());
            case StripeOutcome.Rejected r ->
                    finish(intent, IntentStatus.FAILED, ChargeResponses.rejected(intent, r), null);
            case StripeOutcome.NotSent n -> {
                LOG.infof("charge %s: Stripe not called (%s); lease released", intent.id(), n.reason());
                yield release(intent, null, ChargeResponses.stripeUnavailable(RETRY_SOON));
            }
            case StripeOutcome.Unknown u -> {
                LOG.warnf("charge %s: outcome unknown (%s); lease released for the next driver", intent.id(), u.reason());
                yield release(intent, u.serverError() ? ClaimedIntent.SERVER_ERROR : null,
                        ChargeResponses.stripeOutcomeUnknown(RETRY_SOON));
            }
        };
    }

    private ChargeAnswer finish(ClaimedIntent intent, IntentStatus status, StoredAnswer answer, String paymentIntentId) {
        DatabaseUnavailableException last = null;
        // Stripe has answered: the answer must be recorded. A short blip of the database is bridged here; a longer
        // one leaves the row processing, and the next driver re-sends the same Stripe key and gets the same answer.
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                if (store.finish(intent, status, answer, paymentIntentId)) {
                    return ChargeAnswer.first(answer);
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
        return store.answerOf(intent.id())
                .map(ChargeAnswer::replay)
                .orElseGet(() -> ChargeResponses.inFlight(RETRY_SOON));
    }

    private ChargeAnswer release(ClaimedIntent intent, String lastStripeError, ChargeAnswer answer) {
        try {
            store.release(intent, lastStripeError);
        } catch (DatabaseUnavailableException e) {
            // The lease will expire by itself; nothing is lost.
            LOG.warnf("charge %s: could not release the lease (%s)", intent.id(), e.getMessage());
        }
        return answer;
    }

    private static PaymentOrder order(ClaimedIntent intent, ChargeRequest request) {
        return new PaymentOrder(intent.id(), intent.clientId(), intent.stripeAttempt(),
                StripeKeys.derive(intent.clientId(), intent.key(), intent.stripeAttempt()), request.amount(),
                request.currency(), request.paymentMethod(), request.customer(), request.description(), request.metadata());
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

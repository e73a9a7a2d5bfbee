package dev.chargeonce.operation;

import dev.chargeonce.idempotency.ClaimedIntent;
import dev.chargeonce.idempotency.Finishes.Final;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.stripe.StripeCall;
import dev.chargeonce.stripe.StripeOutcome;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * What one operation (a charge, a refund) does at Stripe and what its answers are: everything the shared
 * {@link OperationDriver} and {@link Settlement} need to know about it, and nothing of the protocol itself.
 *
 * @param <R> the operation's request, as its row stores it
 */
public interface StripeSide<R> {

    Operation operation();

    /** The row's request, read back from its canonical JSON (recovery drives rows without their client). */
    R parse(String requestJson);

    /**
     * Sends the create of the row's current Stripe attempt, with the key and metadata derived from (client, key,
     * request) alone; no try starts after {@code sendBefore} ({@link System#nanoTime()}).
     */
    StripeCall send(ClaimedIntent intent, R request, long sendBefore);

    /**
     * The Stripe object any attempt of this key made (matched by its identity), created in {@code [from, until]},
     * listed to the end (consistent lists, never search).
     */
    Optional<StripeOutcome> find(ClaimedIntent intent, R request, Instant from, Instant until, int maxPages,
                                 BooleanSupplier stillHolding);

    /**
     * The object any attempt of this key made, with the request that made it as its metadata tells it: what a row
     * rebuilds itself from when Stripe refuses its request because another one came first with the key (the
     * database lost that request's row). Empty when nothing is found, or nothing tells the request (an object made
     * by a version that did not write it); an operation that cannot tell always answers empty (its rows are parked).
     */
    default Optional<EarlierRequest> earlierRequest(ClaimedIntent intent, R request, Instant from, Instant until,
                                                    int maxPages, BooleanSupplier stillHolding) {
        return Optional.empty();
    }

    /**
     * The object as Stripe has it now, by id; with {@code giveUp}, canceled at Stripe first when it still waits for
     * the customer and the operation gives up on such waits (a 3-D Secure never completed), so that it can never be
     * completed later unnoticed.
     */
    ObjectState look(String objectId, boolean giveUp);

    /**
     * A Stripe object as read: its identity ({@code chargeonce_key} metadata, null when none), the client it was
     * made for ({@code chargeonce_client_id}, null when none), what its state means, its status as Stripe wrote it,
     * the PaymentIntent it is (a charge's) or was made on (a refund's), its amount, and the fingerprint of the request
     * that made it ({@code chargeonce_request}, null when it carries none).
     */
    record ObjectState(String objectId, String identity, String clientId, StripeOutcome outcome, String stripeStatus,
                       String paymentIntentId, long amount, String requestFingerprint) {

        /** Made outside this service (Stripe's Dashboard, another integration): it carries none of its metadata. */
        public boolean madeOutside() {
            return identity == null && clientId == null;
        }
    }

    /**
     * Whether an object of this key, made by the request whose fingerprint it carries, may be this request's: false
     * when it tells another request (the key was first used with another body, and the database lost that row).
     * Such an object is never this row's answer: the row takes the earlier request on instead. True when the object
     * tells no request, or the operation keeps none.
     */
    default boolean madeBy(R request, String requestFingerprint) {
        return true;
    }

    /**
     * The objects of this operation a Stripe event carries (a webhook, the catch-up), each as read; empty when the
     * event is not about this operation. {@code stripeObject}: the event's {@code data.object}, already read.
     */
    java.util.List<ObjectState> objectsOf(String eventType, com.stripe.model.StripeObject stripeObject);

    /**
     * The event's object with what Stripe leaves out of it read from Stripe, for {@link #objectsOf}: called before the
     * transaction that applies the event (no connection is held while Stripe is read), never inside it. The object
     * itself, untouched, when nothing is missing (the default).
     *
     * @throws dev.chargeonce.stripe.StripeGateway.LookupFailedException when Stripe could not be read: nothing is
     *         recorded, the event is delivered (or caught up) again
     */
    default com.stripe.model.StripeObject completed(String eventType, com.stripe.model.StripeObject stripeObject) {
        return stripeObject;
    }

    /** The Stripe event types whose objects {@link #objectsOf} reads: what to subscribe to, and to catch up on. */
    java.util.List<String> eventTypes();

    /** The key's final answer for what Stripe said; empty when it is no answer yet. */
    Optional<Final> finalAnswer(RowRef row, R request, StripeOutcome outcome, Duration firstLook);

    /** The Stripe state an answered row moves to for what Stripe says now; empty when it says nothing new. */
    Optional<String> state(StripeOutcome outcome);

    /**
     * Called in the transaction that moved an answered row's Stripe state on ({@link #state}): what else that
     * change writes (a charge a Kafka command is waiting for publishes its new state). Nothing by default.
     */
    default void stateMoved(java.sql.Connection tx, String rowId, String clientId) throws java.sql.SQLException {
    }
}

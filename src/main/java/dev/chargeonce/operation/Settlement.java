package dev.chargeonce.operation;

import dev.chargeonce.idempotency.Finishes;
import dev.chargeonce.idempotency.Finishes.Final;
import dev.chargeonce.idempotency.Finishes.ObjectOwner;
import dev.chargeonce.idempotency.IntentStatus;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeOutcome;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;

/**
 * What Stripe says about an operation's object after the request is over (a webhook event, the sync worker),
 * applied to its row inside the caller's transaction, by the same rules as the request's driver:
 * <ul>
 *   <li>a row still {@code processing} (an unknown outcome, a crash) is finished with exactly the answer a driver
 *       would have written (its {@link StripeSide}), fencing out whoever holds it: one path, one answer;</li>
 *   <li>an answered row's Stripe state only moves forward (rank) and never out of a final state: events arrive
 *       out of order and more than once;</li>
 *   <li>an object no row has is reported as unknown, never dropped; one made outside the service (Stripe's Dashboard)
 *       is first given to {@link MadeOutside}: a refund of one of its charges counts against that charge.</li>
 * </ul>
 */
@ApplicationScoped
public class Settlement {

    /** In order of what an event's record shows first when it carried several objects. */
    public enum Effect { APPLIED, UNKNOWN, IGNORED }

    /** What applying it did; {@code rowId} when a row has the object. */
    public record Result(Effect effect, String rowId, String detail) {
    }

    private final Finishes finishes;
    private final OperationDriver driver;
    private final StripeConfig stripeConfig;
    private final MadeOutside madeOutside;

    Settlement(Finishes finishes, OperationDriver driver, StripeConfig stripeConfig, MadeOutside madeOutside) {
        this.finishes = finishes;
        this.driver = driver;
        this.stripeConfig = stripeConfig;
        this.madeOutside = madeOutside;
    }

    /**
     * The event's object with what every operation needs of it and Stripe left out ({@link StripeSide#completed}: a
     * charge's refunds), read from Stripe. Called before the transaction of {@link #applyEvent}, never inside it.
     */
    public com.stripe.model.StripeObject completed(String eventType, com.stripe.model.StripeObject stripeObject) {
        com.stripe.model.StripeObject object = stripeObject;
        for (Operation op : Operation.values()) {
            object = driver.side(op).completed(eventType, object);
        }
        return object;
    }

    /**
     * Applies what a Stripe event says about every object of every operation it carries (a PaymentIntent, a refund,
     * a charge's refunds), in the caller's transaction; {@code IGNORED} when it carries none this service follows.
     */
    public Result applyEvent(Connection tx, String eventType, com.stripe.model.StripeObject stripeObject) throws SQLException {
        Result result = null;
        java.util.List<String> details = new java.util.ArrayList<>();
        for (Operation op : Operation.values()) {
            StripeSide<?> side = driver.side(op);
            for (StripeSide.ObjectState object : side.objectsOf(eventType, stripeObject)) {
                Result one = apply(tx, side, object, object.clientId());
                details.add(one.detail());
                // The event's outcome is its most telling object's: applied over unknown over ignored.
                if (result == null || one.effect().ordinal() < result.effect().ordinal()) {
                    result = one;
                }
            }
        }
        if (result == null) {
            return new Result(Effect.IGNORED, null, "not an event this service acts on");
        }
        return details.size() == 1 ? result : new Result(result.effect(), result.rowId(), String.join("; ", details));
    }

    /**
     * @param object   the Stripe object ({@code pi_…}, {@code re_…}) as read: its identity metadata, what its state
     *                 means ({@code StripeGateway.classify...}), its status as Stripe wrote it
     * @param clientId the client of the row it belongs to, when the caller knows it (else the object's
     *                 {@code chargeonce_client_id}; null: read from the row)
     */
    public Result apply(Connection tx, Operation op, StripeSide.ObjectState object, String clientId) throws SQLException {
        return apply(tx, driver.side(op), object, clientId);
    }

    private <R> Result apply(Connection tx, StripeSide<R> side, StripeSide.ObjectState object, String clientId)
            throws SQLException {
        Operation op = side.operation();
        String objectId = object.objectId();
        StripeOutcome outcome = object.outcome();
        String stripeStatus = object.stripeStatus();
        Optional<ObjectOwner> found = finishes.lockOwner(tx, op, objectId, object.identity(), clientId);
        if (found.isEmpty()) {
            // Made outside this service (no metadata of its own): what it means here, if anything (a Dashboard
            // refund of one of its charges counts against it); else unknown, as any object no row has.
            Optional<Result> outside = object.madeOutside() ? madeOutside.apply(tx, op, object) : Optional.empty();
            return outside.orElseGet(() -> new Result(Effect.UNKNOWN, null,
                    "no " + op.name().toLowerCase() + " has " + objectId + " (" + stripeStatus + ")"));
        }
        ObjectOwner owner = found.get();
        if (owner.status() == IntentStatus.PROCESSING) {
            R request = side.parse(owner.requestJson());
            if (!side.madeBy(request, object.requestFingerprint())) {
                // The key's earlier request made it, whose row the database lost: this row's driver takes that
                // request on (Stripe refuses this one's); finishing it here would give this request its payment.
                return new Result(Effect.IGNORED, owner.id(), objectId + " was made by another request of the key; its driver"
                        + " takes that request on");
            }
            Optional<Final> answer = side.finalAnswer(new RowRef(owner.id(), owner.createdAt()), request,
                    outcome, stripeConfig.pendingRecheck().get(0));
            if (answer.isEmpty()) {
                return new Result(Effect.IGNORED, owner.id(), objectId + " " + stripeStatus + ": no answer yet; its driver follows it");
            }
            return finishes.finishFromStripe(tx, op, owner.id(), owner.clientId(), answer.get())
                    ? new Result(Effect.APPLIED, owner.id(), "finished " + answer.get().status().column() + " (" + stripeStatus + ")")
                    : new Result(Effect.IGNORED, owner.id(), "no longer processing");
        }
        Optional<String> next = side.state(outcome);
        if (next.isEmpty()) {
            return new Result(Effect.IGNORED, owner.id(), objectId + " " + stripeStatus + " changes nothing");
        }
        if (!finishes.advanceState(tx, op, owner.id(), owner.clientId(), next.get(), objectId)) {
            return new Result(Effect.IGNORED, owner.id(), next.get() + " is not after " + owner.state());
        }
        side.stateMoved(tx, owner.id(), owner.clientId());
        return new Result(Effect.APPLIED, owner.id(), owner.state() + " -> " + next.get());
    }
}

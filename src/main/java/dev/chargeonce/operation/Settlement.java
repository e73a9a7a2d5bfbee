package dev.chargeonce.operation;

import dev.chargeonce.idempotency.IdempotencyStore;
import dev.chargeonce.idempotency.IdempotencyStore.Final;
import dev.chargeonce.idempotency.IdempotencyStore.ObjectOwner;
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
 *   <li>an object no row has is reported as unknown, never dropped.</li>
 * </ul>
 */
@ApplicationScoped
public class Settlement {

    public enum Effect { APPLIED, IGNORED, UNKNOWN }

    /** What applying it did; {@code rowId} when a row has the object. */
    public record Result(Effect effect, String rowId, String detail) {
    }

    private final IdempotencyStore store;
    private final OperationDriver driver;
    private final StripeConfig stripeConfig;

    Settlement(IdempotencyStore store, OperationDriver driver, StripeConfig stripeConfig) {
        this.store = store;
        this.driver = driver;
        this.stripeConfig = stripeConfig;
    }

    /**
     * @param objectId       the Stripe object ({@code pi_…}, {@code re_…})
     * @param stripeIdentity its {@code chargeonce_key} metadata (null when it has none)
     * @param outcome        what its state means ({@code StripeGateway.classify...})
     * @param stripeStatus   its status as Stripe wrote it, for the record
     */
    public Result apply(Connection tx, Operation op, String objectId, String stripeIdentity, StripeOutcome outcome,
                        String stripeStatus) throws SQLException {
        return apply(tx, driver.side(op), objectId, stripeIdentity, outcome, stripeStatus);
    }

    private <R> Result apply(Connection tx, StripeSide<R> side, String objectId, String stripeIdentity, StripeOutcome outcome,
                             String stripeStatus) throws SQLException {
        Operation op = side.operation();
        Optional<ObjectOwner> found = store.lockOwner(tx, op, objectId, stripeIdentity);
        if (found.isEmpty()) {
            return new Result(Effect.UNKNOWN, null, "no " + op.name().toLowerCase() + " has " + objectId + " (" + stripeStatus + ")");
        }
        ObjectOwner owner = found.get();
        if (owner.status() == IntentStatus.PROCESSING) {
            Optional<Final> answer = side.finalAnswer(new RowRef(owner.id(), owner.createdAt()), side.parse(owner.requestJson()),
                    outcome, stripeConfig.pendingRecheck().get(0));
            if (answer.isEmpty()) {
                return new Result(Effect.IGNORED, owner.id(), objectId + " " + stripeStatus + ": no answer yet; its driver follows it");
            }
            return store.finishFromStripe(tx, op, owner.id(), answer.get())
                    ? new Result(Effect.APPLIED, owner.id(), "finished " + answer.get().status().column() + " (" + stripeStatus + ")")
                    : new Result(Effect.IGNORED, owner.id(), "no longer processing");
        }
        Optional<String> next = side.state(outcome);
        if (next.isEmpty()) {
            return new Result(Effect.IGNORED, owner.id(), objectId + " " + stripeStatus + " changes nothing");
        }
        return store.advanceState(tx, op, owner.id(), next.get(), objectId)
                ? new Result(Effect.APPLIED, owner.id(), owner.state() + " -> " + next.get())
                : new Result(Effect.IGNORED, owner.id(), next.get() + " is not after " + owner.state());
    }
}

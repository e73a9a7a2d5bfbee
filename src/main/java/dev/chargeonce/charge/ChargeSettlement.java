package dev.chargeonce.charge;

import com.stripe.model.PaymentIntent;
import dev.chargeonce.idempotency.ChargeStatus;
import dev.chargeonce.idempotency.IdempotencyStore;
import dev.chargeonce.idempotency.IdempotencyStore.Final;
import dev.chargeonce.idempotency.IdempotencyStore.PaymentIntentOwner;
import dev.chargeonce.idempotency.IntentStatus;
import dev.chargeonce.stripe.PaymentOrder;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeOutcome;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;

/**
 * What Stripe says about a PaymentIntent after the request is over (a webhook event, the sync worker), applied to
 * its charge inside the caller's transaction, by the same rules as the request's driver:
 * <ul>
 *   <li>a row still {@code processing} (an unknown outcome, a crash) is finished with exactly the answer a driver
 *       would have written (ChargeOutcomes), fencing out whoever holds it: one path, one answer;</li>
 *   <li>an answered charge's state only moves forward (rank) and never out of a final state: events arrive out of
 *       order and more than once;</li>
 *   <li>a PaymentIntent no row has is reported as unknown, never dropped.</li>
 * </ul>
 */
@ApplicationScoped
public class ChargeSettlement {

    public enum Effect { APPLIED, IGNORED, UNKNOWN }

    /** What applying it did; {@code chargeId} when a charge has the PaymentIntent. */
    public record Result(Effect effect, String chargeId, String detail) {
    }

    private final IdempotencyStore store;
    private final StripeConfig stripeConfig;

    ChargeSettlement(IdempotencyStore store, StripeConfig stripeConfig) {
        this.store = store;
        this.stripeConfig = stripeConfig;
    }

    public Result apply(Connection tx, PaymentIntent pi) throws SQLException {
        StripeOutcome outcome = StripeGateway.classify(pi);
        String identity = pi.getMetadata() == null ? null : pi.getMetadata().get(PaymentOrder.KEY);
        Optional<PaymentIntentOwner> found = store.lockOwner(tx, pi.getId(), identity);
        if (found.isEmpty()) {
            return new Result(Effect.UNKNOWN, null, "no charge has PaymentIntent " + pi.getId() + " (" + pi.getStatus() + ")");
        }
        PaymentIntentOwner owner = found.get();
        if (owner.status() == IntentStatus.PROCESSING) {
            ChargeRef charge = new ChargeRef(owner.id(), owner.createdAt());
            Optional<Final> answer = ChargeOutcomes.finalAnswer(charge, ChargeRequest.fromCanonicalJson(owner.requestJson()),
                    outcome, stripeConfig.pendingRecheck().get(0));
            if (answer.isEmpty()) {
                return new Result(Effect.IGNORED, owner.id(), "PaymentIntent " + pi.getStatus() + ": no answer yet; its driver follows it");
            }
            return store.finishFromStripe(tx, owner.id(), answer.get())
                    ? new Result(Effect.APPLIED, owner.id(), "finished " + answer.get().status().column() + " (" + pi.getStatus() + ")")
                    : new Result(Effect.IGNORED, owner.id(), "no longer processing");
        }
        Optional<ChargeStatus> next = ChargeOutcomes.chargeStatus(outcome);
        if (next.isEmpty()) {
            return new Result(Effect.IGNORED, owner.id(), "PaymentIntent " + pi.getStatus() + " changes nothing");
        }
        return store.advanceChargeStatus(tx, owner.id(), next.get(), pi.getId())
                ? new Result(Effect.APPLIED, owner.id(), owner.chargeStatus() + " -> " + next.get().column())
                : new Result(Effect.IGNORED, owner.id(), next.get().column() + " is not after " + owner.chargeStatus());
    }
}

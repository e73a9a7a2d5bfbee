package dev.chargeonce.reconcile;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.idempotency.ClaimedIntent;
import dev.chargeonce.idempotency.Finishes.Final;
import dev.chargeonce.idempotency.OperatorRows;
import dev.chargeonce.idempotency.IntentStatus;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.idempotency.RowView;
import dev.chargeonce.idempotency.StoredAnswer;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.operation.RowRef;
import dev.chargeonce.operation.StripeSide;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeOutcome;
import dev.chargeonce.web.ErrorBody;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
import java.util.Locale;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * What an operator may do about a row or a finding, from the console or the admin API. Every action on a row names
 * the lease generation the operator saw and is fenced by it, like a driver's write: if a driver, an event or another
 * operator moved the row since, the action changes nothing and says so. Every action, done or refused, is recorded
 * with who, when, what and why. None of them can create anything at Stripe: they read Stripe (retrieve, list) and
 * write here.
 */
@ApplicationScoped
public class OperatorActions {

    private static final Logger LOG = Logger.getLogger(OperatorActions.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Pages a "prove nothing was made" lookup reads at most: an answer it cannot reach is a refusal, never a guess. */
    private static final int PROOF_MAX_PAGES = 2000;

    private final OperatorRows rows;
    private final ReconciliationStore store;
    private final OperationDriver driver;
    private final StripeConfig stripeConfig;

    OperatorActions(OperatorRows rows, ReconciliationStore store, OperationDriver driver, StripeConfig stripeConfig) {
        this.rows = rows;
        this.store = store;
        this.driver = driver;
        this.stripeConfig = stripeConfig;
    }

    /**
     * What an action did: {@code done}, or why it was refused (nothing changed then). {@code kind} names it among a
     * fixed few, for a reader that shows only words of its own (the console's banners); {@code message} has the
     * particulars (ids, generations, what Stripe said), for the audit trail and the admin API.
     */
    public record Outcome(boolean done, Kind kind, String message) {
        static Outcome done(Kind kind, String message) {
            return new Outcome(true, kind, message);
        }

        static Outcome refused(Kind kind, String message) {
            return new Outcome(false, kind, message);
        }
    }

    /** The outcomes an action can have: the first four are done, the others refused. */
    public enum Kind {
        ATTACHED, MARKED_FAILED, REQUEUED, ACKNOWLEDGED,
        REASON_REQUIRED, REASON_TOO_LONG, OBJECT_REQUIRED, NOT_PROCESSING, MOVED, STRIPE_UNREACHABLE, WRONG_IDENTITY,
        NOT_FINAL, STILL_SETTLING, STRIPE_HAS_OBJECT, NO_FINDING, ALREADY_RESOLVED
    }

    /**
     * Ends a processing (usually parked) row with the Stripe object a lookup or a finding names: retrieved from
     * Stripe by id, it must carry the row's key identity; the row then holds exactly the answer its driver would
     * have stored for that object, and the client's retry replays it.
     */
    public Outcome attach(String operator, Operation op, String rowId, int seenLeaseGeneration, String objectId, String reason) {
        Optional<Outcome> invalid = required(reason, objectId);
        if (invalid.isPresent()) {
            return audit(operator, "attach", op, rowId, null, seenLeaseGeneration, reason, invalid.get(), objectId);
        }
        Outcome outcome;
        try {
            outcome = attach(driver.side(op), rowId, seenLeaseGeneration, objectId.trim());
        } catch (StripeGateway.LookupFailedException e) {
            outcome = Outcome.refused(Kind.STRIPE_UNREACHABLE, "Stripe could not be asked about " + objectId + ": " + e.getMessage());
        }
        if (outcome.done()) {
            store.resolveFindingsOfRow(rowId, operator, "attached " + objectId + ": " + reason);
        }
        return audit(operator, "attach", op, rowId, null, seenLeaseGeneration, reason, outcome, objectId);
    }

    private <R> Outcome attach(StripeSide<R> side, String rowId, int seen, String objectId) {
        Operation op = side.operation();
        Optional<RowView> view = rows.view(op, rowId);
        Optional<ClaimedIntent> row = view.flatMap(v -> rows.inspect(op, rowId, v.clientId(), stripeConfig.keyHorizon()));
        if (row.isEmpty()) {
            return Outcome.refused(Kind.NOT_PROCESSING, rowId + " is not processing: it has its answer already");
        }
        if (row.get().leaseGeneration() != seen) {
            return moved(rowId, seen, row.get().leaseGeneration());
        }
        StripeSide.ObjectState object = side.look(objectId, false);
        String identity = view.map(RowView::identity).orElse(null);
        if (identity == null || !identity.equals(object.identity())) {
            return Outcome.refused(Kind.WRONG_IDENTITY, objectId + " does not carry this key's identity (" + identity + "); it belongs to "
                    + (object.identity() == null ? "no key of this service" : "another key (" + object.identity() + ")"));
        }
        Optional<Final> answer = side.finalAnswer(new RowRef(rowId, row.get().createdAt()), side.parse(row.get().requestJson()),
                object.outcome(), stripeConfig.pendingRecheck().get(0));
        if (answer.isEmpty()) {
            return Outcome.refused(Kind.NOT_FINAL, objectId + " is " + object.stripeStatus()
                    + " at Stripe: not an answer yet; attach it once it is");
        }
        if (!rows.finishByOperator(op, rowId, row.get().clientId(), seen, answer.get())) {
            return Outcome.refused(Kind.MOVED, rowId + " moved while Stripe was asked; look again");
        }
        LOG.warnf("operator attached %s to %s: %s", objectId, rowId, answer.get().status().column());
        return Outcome.done(Kind.ATTACHED, rowId + " now answers " + answer.get().answer().status() + " (" + object.stripeStatus()
                + " " + objectId + ")");
    }

    /**
     * Ends a processing row as "not made": only once Stripe proves that no request of its key can still run there
     * and a list of everything created since the key was first claimed finds nothing of it. The client's retry
     * then replays a final {@code 400} ({@code charge_abandoned}, {@code refund_abandoned}) telling it to use a new
     * key; a refund's reserved amount is given back.
     */
    public Outcome markFailed(String operator, Operation op, String rowId, int seenLeaseGeneration, String reason) {
        Optional<Outcome> invalid = required(reason, "-");
        if (invalid.isPresent()) {
            return audit(operator, "mark_failed", op, rowId, null, seenLeaseGeneration, reason, invalid.get(), null);
        }
        Outcome outcome;
        try {
            outcome = markFailed(driver.side(op), rowId, seenLeaseGeneration);
        } catch (StripeGateway.LookupFailedException e) {
            outcome = Outcome.refused(Kind.STRIPE_UNREACHABLE, "Stripe could not prove that nothing was made: " + e.getMessage());
        }
        if (outcome.done()) {
            store.resolveFindingsOfRow(rowId, operator, "marked failed: " + reason);
        }
        return audit(operator, "mark_failed", op, rowId, null, seenLeaseGeneration, reason, outcome, null);
    }

    private <R> Outcome markFailed(StripeSide<R> side, String rowId, int seen) {
        Operation op = side.operation();
        // By id, the row's client read first (the console names a row by its id alone), then the row on its client's.
        Optional<ClaimedIntent> row = rows.view(op, rowId).flatMap(v -> rows.inspect(op, rowId, v.clientId(), stripeConfig.keyHorizon()));
        if (row.isEmpty()) {
            return Outcome.refused(Kind.NOT_PROCESSING, rowId + " is not processing: it has its answer already");
        }
        ClaimedIntent intent = row.get();
        if (intent.leaseGeneration() != seen) {
            return moved(rowId, seen, intent.leaseGeneration());
        }
        // A try of the key may still be on its way: sent by the holder (up to its lease's send bound) and not yet
        // executed by Stripe. The list below would not see it, and it would charge after "nothing was made".
        Optional<OperatorRows.KeySettling> settling = rows.keySettling(op, rowId, intent.clientId(), stripeConfig.requestMaxDuration());
        if (settling.isEmpty()) {
            return Outcome.refused(Kind.NOT_PROCESSING, rowId + " is not processing: it has its answer already");
        }
        if (!settling.get().settled()) {
            return Outcome.refused(Kind.STILL_SETTLING, "a request with this key may still reach Stripe (its holder may send until its lease's"
                    + " send bound); try again after " + settling.get().settlesAt());
        }
        // Every attempt of the key carries its identity: a list from before the claim until now covers all of them,
        // a row lost with a failover and claimed again included: its payment may be older than the new row by as
        // much as the drivers' own search of an unknown history looks back (lost-history-lookback), so the proof
        // looks back as far (a list too large for the page budget refuses the action). It ends at the later of the
        // two clocks: the settling above was decided by the database's.
        Instant from = intent.createdAt().minus(stripeConfig.lostHistoryLookback()).minus(stripeConfig.requestMaxDuration());
        Instant until = settling.get().databaseNow().isAfter(Instant.now()) ? settling.get().databaseNow() : Instant.now();
        Optional<StripeOutcome> found = side.find(intent, side.parse(intent.requestJson()), from, until,
                PROOF_MAX_PAGES, () -> true);
        if (found.isPresent()) {
            return Outcome.refused(Kind.STRIPE_HAS_OBJECT, "Stripe has " + describe(found.get()) + " for this key: attach it instead");
        }
        Final abandoned = new Final(IntentStatus.FAILED, abandonedAnswer(op), null, null, null);
        if (!rows.abandonByOperator(op, rowId, intent.clientId(), seen, abandoned, stripeConfig.requestMaxDuration())) {
            return Outcome.refused(Kind.MOVED, rowId + " moved while Stripe was asked; look again");
        }
        LOG.warnf("operator marked %s failed: Stripe has nothing for its key", rowId);
        return Outcome.done(Kind.MARKED_FAILED, rowId + " now answers 400 " + abandonedCode(op) + " (Stripe has nothing for its key)");
    }

    /** Hands a parked or stuck row back to the drivers (nothing is sent by this; a driver sends only what is safe). */
    public Outcome requeue(String operator, Operation op, String rowId, int seenLeaseGeneration, String reason) {
        Optional<Outcome> invalid = required(reason, "-");
        Outcome outcome;
        if (invalid.isPresent()) {
            outcome = invalid.get();
        } else {
            Optional<RowView> row = rows.view(op, rowId);
            if (row.isEmpty() || row.get().status() != IntentStatus.PROCESSING) {
                outcome = Outcome.refused(Kind.NOT_PROCESSING, rowId + " is not processing: nothing to re-queue");
            } else if (row.get().leaseGeneration() != seenLeaseGeneration) {
                outcome = moved(rowId, seenLeaseGeneration, row.get().leaseGeneration());
            } else if (!rows.requeue(op, rowId, row.get().clientId(), seenLeaseGeneration)) {
                outcome = Outcome.refused(Kind.MOVED, rowId + " moved meanwhile; look again");
            } else {
                outcome = Outcome.done(Kind.REQUEUED, rowId + " is back with the drivers: the next retry or the recovery worker takes it over");
            }
        }
        return audit(operator, "requeue", op, rowId, null, seenLeaseGeneration, reason, outcome, null);
    }

    /** Closes a finding with the operator's note (what was done about it, outside this service). */
    public Outcome acknowledge(String operator, long findingId, String note) {
        Optional<Outcome> invalid = required(note, "-");
        Outcome outcome;
        Optional<ReconciliationStore.StoredFinding> finding = store.finding(findingId);
        if (invalid.isPresent()) {
            outcome = invalid.get();
        } else if (finding.isEmpty()) {
            outcome = Outcome.refused(Kind.NO_FINDING, "no finding " + findingId);
        } else if (!store.resolve(findingId, operator, "acknowledged: " + note)) {
            outcome = Outcome.refused(Kind.ALREADY_RESOLVED, "finding " + findingId + " is resolved already");
        } else {
            outcome = Outcome.done(Kind.ACKNOWLEDGED, "finding " + findingId + " acknowledged");
        }
        Operation op = finding.flatMap(f -> Optional.ofNullable(f.operation())).map(o -> Operation.valueOf(o.toUpperCase(Locale.ROOT))).orElse(null);
        return audit(operator, "acknowledge", op, finding.map(ReconciliationStore.StoredFinding::rowId).orElse(null), findingId, null,
                note, outcome, null);
    }

    private Outcome audit(String operator, String action, Operation op, String rowId, Long findingId, Integer leaseGen,
                          String reason, Outcome outcome, String detail) {
        store.audit(operator, action, op == null ? null : op.name().toLowerCase(Locale.ROOT), rowId, findingId, leaseGen,
                reason == null ? "" : reason.trim(), outcome.done() ? "done" : "refused",
                detail == null ? outcome.message() : detail + ": " + outcome.message());
        return outcome;
    }

    private static Optional<Outcome> required(String reason, String object) {
        if (reason == null || reason.isBlank()) {
            return Optional.of(Outcome.refused(Kind.REASON_REQUIRED, "say why: every action is recorded with its reason"));
        }
        if (reason.length() > 1000) {
            return Optional.of(Outcome.refused(Kind.REASON_TOO_LONG, "the reason is longer than 1000 characters"));
        }
        if (object == null || object.isBlank()) {
            return Optional.of(Outcome.refused(Kind.OBJECT_REQUIRED, "name the Stripe object to attach (pi_..., re_...)"));
        }
        return Optional.empty();
    }

    private static Outcome moved(String rowId, int seen, int now) {
        return Outcome.refused(Kind.MOVED, rowId + " moved since you looked (generation " + seen + ", now " + now + "): look again");
    }

    private static String describe(StripeOutcome outcome) {
        return outcome.getClass().getSimpleName().toLowerCase(Locale.ROOT) + " " + outcome;
    }

    static String abandonedCode(Operation op) {
        return op == Operation.REFUND ? "refund_abandoned" : "charge_abandoned";
    }

    /** The key's final answer after an operator proved that Stripe has nothing for it. */
    static StoredAnswer abandonedAnswer(Operation op) {
        String message = op == Operation.REFUND
                ? "This refund was not made: Stripe has no refund for this key, and an operator closed it. Nothing was refunded;"
                        + " use a new Idempotency-Key to refund."
                : "This charge was not made: Stripe has no payment for this key, and an operator closed it. Nothing was charged;"
                        + " use a new Idempotency-Key to pay.";
        try {
            return new StoredAnswer(400, JSON.writeValueAsString(ErrorBody.of("invalid_request_error", abandonedCode(op), message, null)));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}

package dev.chargeonce.operation;

import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.stripe.StripeOutcome;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * Counters of every operation's path. A charge's keep their names ({@code chargeonce.replays},
 * {@code chargeonce.charges{outcome}}, ...); a refund's are {@code chargeonce.refund.replays},
 * {@code chargeonce.refunds{outcome}}, .... Tags are fixed, low-cardinality words: never a key, a client or an
 * amount. Created at start-up with every series registered at 0, so that an alert's {@code increase()} sees the
 * first event.
 */
@Startup
@ApplicationScoped
public class OperationMetrics {

    private static final String[] OUTCOMES = {"succeeded", "declined", "requires_action", "processing", "canceled", "rejected",
            "pending", "not_sent", "unknown", "unknown_server_error", "key_finished_with_error", "key_conflict", "circuit_open"};
    private static final String[] EVENTS = {"replays", "conflicts", "mismatches", "takeovers", "fenced.out", "lookup.resolved",
            "reconciliation.parked"};

    private final MeterRegistry registry;

    OperationMetrics(MeterRegistry registry) {
        this.registry = registry;
        for (Operation op : Operation.values()) {
            for (String outcome : OUTCOMES) {
                registry.counter(outcomes(op), "outcome", outcome);
            }
            for (String event : EVENTS) {
                registry.counter(name(op, event));
            }
        }
    }

    private static String outcomes(Operation op) {
        return op == Operation.REFUND ? "chargeonce.refunds" : "chargeonce.charges";
    }

    /** A charge's counters, by the names the alerts and dashboards know. */
    private static final java.util.Map<String, String> CHARGE_NAMES = java.util.Map.of(
            "replays", "chargeonce.replays", "conflicts", "chargeonce.conflicts", "mismatches", "chargeonce.mismatches",
            "takeovers", "chargeonce.takeovers", "fenced.out", "chargeonce.fenced.out",
            "lookup.resolved", "chargeonce.lookup.resolved", "reconciliation.parked", "chargeonce.reconciliation.parked");

    private static String name(Operation op, String event) {
        return op == Operation.REFUND ? "chargeonce.refund." + event : CHARGE_NAMES.get(event);
    }

    void stripeOutcome(Operation op, StripeOutcome outcome) {
        String name = switch (outcome) {
            case StripeOutcome.Succeeded s -> "succeeded";
            case StripeOutcome.Declined d -> "declined";
            case StripeOutcome.RequiresAction a -> "requires_action";
            case StripeOutcome.Processing p -> "processing";
            case StripeOutcome.Canceled c -> "canceled";
            case StripeOutcome.Rejected r -> "rejected";
            case StripeOutcome.Pending p -> "pending";
            case StripeOutcome.NotSent n -> "not_sent";
            case StripeOutcome.Unknown u -> u.serverError() ? "unknown_server_error" : "unknown";
            case StripeOutcome.KeyFinishedWithError k -> "key_finished_with_error";
            case StripeOutcome.KeyConflict c -> "key_conflict";
        };
        registry.counter(outcomes(op), "outcome", name).increment();
    }

    public void replay(Operation op) {
        registry.counter(name(op, "replays")).increment();
    }

    public void conflict(Operation op) {
        registry.counter(name(op, "conflicts")).increment();
    }

    public void mismatch(Operation op) {
        registry.counter(name(op, "mismatches")).increment();
    }

    public void takeover(Operation op) {
        registry.counter(name(op, "takeovers")).increment();
    }

    void fencedOut(Operation op) {
        registry.counter(name(op, "fenced.out")).increment();
    }

    void lookupResolved(Operation op) {
        registry.counter(name(op, "lookup.resolved")).increment();
    }

    /** Answered 503 without calling Stripe: no permit of the account's rate budget within the request's wait. */
    void rateBudgetRefusal(Operation op) {
        registry.counter(outcomes(op), "outcome", "rate_budget").increment();
    }

    public void circuitOpenRejection(Operation op) {
        registry.counter(outcomes(op), "outcome", "circuit_open").increment();
    }

    void parkedForReconciliation(Operation op) {
        registry.counter(name(op, "reconciliation.parked")).increment();
    }
}

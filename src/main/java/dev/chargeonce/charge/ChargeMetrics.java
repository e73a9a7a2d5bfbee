package dev.chargeonce.charge;

import dev.chargeonce.stripe.StripeOutcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * Counters of the charge path. Tags are fixed, low-cardinality words: never a key, a client or an amount. Created
 * at start-up with every series registered at 0, so that an alert's {@code increase()} sees the first event.
 */
@Startup
@ApplicationScoped
public class ChargeMetrics {

    private final MeterRegistry registry;
    private final Counter replays;
    private final Counter conflicts;
    private final Counter mismatches;
    private final Counter takeovers;
    private final Counter fencedOut;
    private final Counter lookupResolved;
    private final Counter parked;

    ChargeMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.replays = registry.counter("chargeonce.replays");
        this.conflicts = registry.counter("chargeonce.conflicts");
        this.mismatches = registry.counter("chargeonce.mismatches");
        this.takeovers = registry.counter("chargeonce.takeovers");
        this.fencedOut = registry.counter("chargeonce.fenced.out");
        this.lookupResolved = registry.counter("chargeonce.lookup.resolved");
        this.parked = registry.counter("chargeonce.reconciliation.parked");
        for (String outcome : new String[] {"succeeded", "declined", "requires_action", "processing", "canceled", "rejected", "pending", "not_sent",
                "unknown", "unknown_server_error", "key_finished_with_error", "key_conflict", "circuit_open"}) {
            registry.counter("chargeonce.charges", "outcome", outcome);
        }
    }

    void stripeOutcome(StripeOutcome outcome) {
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
        registry.counter("chargeonce.charges", "outcome", name).increment();
    }

    void replay() {
        replays.increment();
    }

    void conflict() {
        conflicts.increment();
    }

    void mismatch() {
        mismatches.increment();
    }

    void takeover() {
        takeovers.increment();
    }

    void fencedOut() {
        fencedOut.increment();
    }

    void lookupResolved() {
        lookupResolved.increment();
    }

    void circuitOpenRejection() {
        registry.counter("chargeonce.charges", "outcome", "circuit_open").increment();
    }

    void parkedForReconciliation() {
        parked.increment();
    }
}

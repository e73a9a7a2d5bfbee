package dev.chargeonce.stripe;

import dev.chargeonce.idempotency.Operation;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.smallrye.faulttolerance.api.CircuitBreakerMaintenance;
import io.smallrye.faulttolerance.api.CircuitBreakerState;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.logging.Logger;

/**
 * The circuit breakers of {@link StripeApi}, one per operation, watched so that a claim can ask whether its
 * operation's circuit is open (and a gauge shows it).
 */
final class StripeCircuits {

    /** The gateway's category: these lines are the gateway's, wherever the code that writes them lives. */
    private static final Logger LOG = Logger.getLogger(StripeGateway.class);

    /** A circuit breaker of {@link StripeApi}, by name. */
    private static final class Circuit {
        final String name;
        final long delayNanos;
        final AtomicInteger open = new AtomicInteger();
        volatile long openedAt = System.nanoTime();

        Circuit(String name, String delayProperty) {
            this.name = name;
            this.delayNanos = TimeUnit.MILLISECONDS.toNanos(ConfigProvider.getConfig()
                    .getOptionalValue(delayProperty, Long.class).orElse(StripeApi.CIRCUIT_DELAY_MILLIS));
        }
    }

    private final Map<Operation, Circuit> circuits = new EnumMap<>(Operation.class);

    StripeCircuits(MeterRegistry metrics) {
        circuits.put(Operation.CHARGE, new Circuit(StripeApi.CIRCUIT, StripeApi.CIRCUIT_DELAY_PROPERTY));
        circuits.put(Operation.REFUND, new Circuit(StripeApi.REFUND_CIRCUIT, StripeApi.REFUND_CIRCUIT_DELAY_PROPERTY));
        circuits.forEach((op, circuit) -> metrics.gauge("chargeonce.stripe.circuit.open",
                Tags.of("circuit", circuit.name), circuit.open));
    }

    /** See {@link StripeGateway#acceptingCalls}. */
    boolean acceptingCalls(Operation op) {
        Circuit circuit = circuits.get(op);
        if (CircuitBreakerMaintenance.get().currentState(circuit.name) != CircuitBreakerState.OPEN) {
            return true;
        }
        // SmallRye moves an open circuit to half-open lazily, on the first call after the delay: past the delay,
        // let calls through, or the circuit would never be tried again.
        return System.nanoTime() - circuit.openedAt >= circuit.delayNanos;
    }

    /** Follows every circuit's state from now on: when it opened, the gauge, a line in the log. */
    void watch() {
        circuits.forEach((op, circuit) -> CircuitBreakerMaintenance.get().onStateChange(circuit.name, state -> {
            circuit.open.set(state == CircuitBreakerState.OPEN ? 1 : 0);
            if (state == CircuitBreakerState.OPEN) {
                circuit.openedAt = System.nanoTime();
                LOG.warnf("Stripe circuit breaker %s OPEN: new %ss are answered 503 without a claim", circuit.name,
                        op.name().toLowerCase(Locale.ROOT));
            } else {
                LOG.infof("Stripe circuit breaker %s %s", circuit.name, state);
            }
        }));
    }
}

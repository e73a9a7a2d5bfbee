package dev.chargeonce.stripe;

import com.stripe.exception.AuthenticationException;
import com.stripe.exception.CardException;
import com.stripe.exception.InvalidRequestException;
import com.stripe.exception.RateLimitException;
import com.stripe.exception.StripeException;
import com.stripe.model.PaymentIntent;
import com.stripe.model.StripeCollection;
import com.stripe.model.StripeError;
import com.stripe.param.PaymentIntentCreateParams;
import com.stripe.param.PaymentIntentListParams;
import io.smallrye.faulttolerance.api.CircuitBreakerMaintenance;
import io.smallrye.faulttolerance.api.CircuitBreakerState;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.microprofile.config.ConfigProvider;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.faulttolerance.exceptions.BulkheadException;
import org.eclipse.microprofile.faulttolerance.exceptions.CircuitBreakerOpenException;
import org.eclipse.microprofile.faulttolerance.exceptions.TimeoutException;
import org.jboss.logging.Logger;

/**
 * The only way into Stripe: create-and-confirm a PaymentIntent, or find one again. Every result is classified
 * into a {@link StripeOutcome}; nothing Stripe-specific leaks past this class.
 */
@io.quarkus.runtime.Startup
@ApplicationScoped
public class StripeGateway {

    private static final Logger LOG = Logger.getLogger(StripeGateway.class);

    /** Stripe could not prove whether a PaymentIntent exists (lookup failed or too many to page through). */
    public static final class LookupFailedException extends RuntimeException {
        LookupFailedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final StripeApi api;
    private final StripeClients clients;
    private final StripeConfig config;
    private final long circuitDelayNanos;
    private volatile long circuitOpenedAt = System.nanoTime();

    private final MeterRegistry metrics;
    private final Timer createLatency;
    private final AtomicInteger circuitOpen = new AtomicInteger();
    private final io.micrometer.core.instrument.Counter duplicateFindings;

    StripeGateway(StripeApi api, StripeClients clients, StripeConfig config, MeterRegistry metrics) {
        this.api = api;
        this.clients = clients;
        this.config = config;
        this.metrics = metrics;
        this.createLatency = Timer.builder("chargeonce.stripe.call").tag("call", "create")
                .description("Stripe create-and-confirm, fault-tolerance retries included")
                .publishPercentileHistogram().register(metrics);
        metrics.gauge("chargeonce.stripe.circuit.open", circuitOpen);
        // Registered up front so that the first finding is an increase from 0 that alerts can see.
        this.duplicateFindings = metrics.counter("chargeonce.reconciliation.findings", "finding", "duplicate_payment_intents");
        this.circuitDelayNanos = TimeUnit.MILLISECONDS.toNanos(ConfigProvider.getConfig()
                .getOptionalValue(StripeApi.CIRCUIT_DELAY_PROPERTY, Long.class).orElse(StripeApi.CIRCUIT_DELAY_MILLIS));
    }

    public StripeConfig config() {
        return config;
    }

    /**
     * False while the circuit breaker is open: a create would not be sent, so a new claim would be a lease taken
     * for nothing. (Half-open lets trial calls through.)
     */
    public boolean acceptingCalls() {
        if (CircuitBreakerMaintenance.get().currentState(StripeApi.CIRCUIT) != CircuitBreakerState.OPEN) {
            return true;
        }
        // SmallRye moves an open circuit to half-open lazily, on the first call after the delay: past the delay,
        // let calls through, or the circuit would never be tried again.
        return System.nanoTime() - circuitOpenedAt >= circuitDelayNanos;
    }

    void watchCircuit(@Observes StartupEvent event) {
        CircuitBreakerMaintenance.get().onStateChange(StripeApi.CIRCUIT, state -> {
            circuitOpen.set(state == CircuitBreakerState.OPEN ? 1 : 0);
            if (state == CircuitBreakerState.OPEN) {
                circuitOpenedAt = System.nanoTime();
                LOG.warn("Stripe circuit breaker OPEN: new charges are answered 503 without a claim");
            } else {
                LOG.infof("Stripe circuit breaker %s", state);
            }
        });
    }

    public StripeOutcome createAndConfirm(PaymentOrder order) {
        PaymentIntentCreateParams.Builder params = PaymentIntentCreateParams.builder()
                .setAmount(order.amount())
                .setCurrency(order.currency())
                .setPaymentMethod(order.paymentMethod())
                .setConfirm(true)
                .setAutomaticPaymentMethods(PaymentIntentCreateParams.AutomaticPaymentMethods.builder()
                        .setEnabled(true)
                        .setAllowRedirects(PaymentIntentCreateParams.AutomaticPaymentMethods.AllowRedirects.NEVER)
                        .build())
                .putAllMetadata(order.metadata())
                .putMetadata(PaymentOrder.CHARGE_ID, order.chargeId())
                .putMetadata(PaymentOrder.CLIENT_ID, order.clientId())
                .putMetadata(PaymentOrder.ATTEMPT, Integer.toString(order.attempt()));
        if (order.customer() != null) {
            params.setCustomer(order.customer());
        }
        if (order.description() != null) {
            params.setDescription(order.description());
        }
        Timer.Sample sample = Timer.start();
        try {
            return fromIntent(api.create(params.build(), order.stripeIdempotencyKey()));
        } catch (CardException e) {
            StripeError error = e.getStripeError();
            String paymentIntentId = error != null && error.getPaymentIntent() != null ? error.getPaymentIntent().getId() : null;
            return new StripeOutcome.Declined(paymentIntentId, nonNull(e.getCode(), "card_declined"), e.getDeclineCode(),
                    error != null && error.getMessage() != null ? error.getMessage() : "Your card was declined.");
        } catch (RateLimitException e) {
            return new StripeOutcome.NotSent("stripe rate limited the request");
        } catch (AuthenticationException e) {
            LOG.error("Stripe refused our API key; check chargeonce.stripe.api-key", e);
            return new StripeOutcome.NotSent("stripe authentication failed");
        } catch (InvalidRequestException e) {
            int status = e.getStatusCode() == null ? 400 : e.getStatusCode();
            return new StripeOutcome.Rejected(status, nonNull(e.getCode(), "invalid_request"),
                    nonNull(e.getStripeError() != null ? e.getStripeError().getMessage() : null, "Stripe rejected the payment."),
                    e.getStripeError() != null ? e.getStripeError().getParam() : null);
        } catch (CircuitBreakerOpenException e) {
            return new StripeOutcome.NotSent("circuit open");
        } catch (BulkheadException e) {
            return new StripeOutcome.NotSent("too many concurrent Stripe calls");
        } catch (StripeApi.UnreachableException | StripeApi.KeyInUseException | TimeoutException e) {
            return new StripeOutcome.Unknown(e.getMessage(), false);
        } catch (StripeApi.ServerErrorException e) {
            return new StripeOutcome.Unknown(e.getMessage(), true);
        } catch (StripeException e) {
            return new StripeOutcome.Unknown(e.getClass().getSimpleName() + ": " + e.getMessage(), true);
        } finally {
            sample.stop(createLatency);
        }
    }

    /**
     * Finds the PaymentIntent a charge's current Stripe attempt created, by the metadata every create writes.
     * Listing is strongly consistent at Stripe (search is not), so an empty answer proves that nothing was created.
     * Only PaymentIntents created in the attempt's window (from its first send to now, widened by the clock skew
     * between us and Stripe) are listed: minutes for the usual 5xx-then-retry, never the account's whole history.
     *
     * @throws LookupFailedException when absence cannot be proven
     */
    public Optional<StripeOutcome> findPaymentIntent(String chargeId, Instant sentFrom, Instant sentUntil) {
        long from = sentFrom.minus(config.lookupSkew()).getEpochSecond();
        long until = sentUntil.plus(config.lookupSkew()).getEpochSecond();
        List<PaymentIntent> matches = new ArrayList<>(1);
        String startingAfter = null;
        try {
            for (int page = 0; page < config.lookupMaxPages(); page++) {
                PaymentIntentListParams.Builder params = PaymentIntentListParams.builder()
                        .setCreated(PaymentIntentListParams.Created.builder().setGte(from).setLte(until).build())
                        .setLimit(100L);
                if (startingAfter != null) {
                    params.setStartingAfter(startingAfter);
                }
                StripeCollection<PaymentIntent> list = clients.client().v1().paymentIntents().list(params.build());
                for (PaymentIntent pi : list.getData()) {
                    if (pi.getMetadata() != null && chargeId.equals(pi.getMetadata().get(PaymentOrder.CHARGE_ID))) {
                        matches.add(pi);
                    }
                }
                if (!Boolean.TRUE.equals(list.getHasMore()) || list.getData().isEmpty()) {
                    return pick(chargeId, matches);
                }
                startingAfter = list.getData().get(list.getData().size() - 1).getId();
            }
        } catch (StripeException e) {
            throw new LookupFailedException("listing PaymentIntents failed: " + e.getMessage(), e);
        }
        throw new LookupFailedException("more than " + config.lookupMaxPages() + " pages of PaymentIntents to search", null);
    }

    private Optional<StripeOutcome> pick(String chargeId, List<PaymentIntent> matches) {
        if (matches.isEmpty()) {
            return Optional.empty();
        }
        if (matches.size() > 1) {
            // Should be impossible by construction; if it ever happens an operator must refund one of them.
            LOG.errorf("charge %s has %d PaymentIntents at Stripe; reconcile", chargeId, matches.size());
            duplicateFindings.increment();
        }
        PaymentIntent best = matches.stream().filter(pi -> "succeeded".equals(pi.getStatus())).findFirst().orElse(matches.get(0));
        return Optional.of(fromIntent(best));
    }

    private static StripeOutcome fromIntent(PaymentIntent pi) {
        return switch (nonNull(pi.getStatus(), "unknown")) {
            case "succeeded" -> new StripeOutcome.Succeeded(pi.getId());
            case "requires_action" -> new StripeOutcome.RequiresAction(pi.getId());
            case "requires_payment_method", "canceled" -> {
                StripeError last = pi.getLastPaymentError();
                yield new StripeOutcome.Declined(pi.getId(), last != null ? nonNull(last.getCode(), "card_declined") : "card_declined",
                        last != null ? last.getDeclineCode() : null,
                        last != null && last.getMessage() != null ? last.getMessage() : "Your card was declined.");
            }
            // processing, requires_capture, requires_confirmation: not final for us yet.
            default -> new StripeOutcome.Unknown("payment intent " + pi.getId() + " is " + pi.getStatus(), false);
        };
    }

    private static String nonNull(String value, String fallback) {
        return value == null ? fallback : value;
    }
}

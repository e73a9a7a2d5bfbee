package dev.chargeonce.stripe;

import com.stripe.exception.AuthenticationException;
import com.stripe.exception.CardException;
import com.stripe.exception.IdempotencyException;
import com.stripe.exception.InvalidRequestException;
import com.stripe.exception.RateLimitException;
import com.stripe.exception.StripeException;
import com.stripe.model.PaymentIntent;
import com.stripe.net.RequestOptions;
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
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
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

    /** Stripe could not tell whether a PaymentIntent exists, or how it stands (list or retrieve failed). */
    public static class LookupFailedException extends RuntimeException {
        LookupFailedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The caller lost its lease while the lookup paged: its result would be fenced out anyway. */
    public static final class LookupAbandonedException extends LookupFailedException {
        LookupAbandonedException(String message) {
            super(message, null);
        }
    }

    /**
     * The window holds more PaymentIntents than the lookup may read: trying again would cost as much and end the
     * same way, so the caller parks the row instead of retrying forever.
     */
    public static final class LookupTooLargeException extends LookupFailedException {
        LookupTooLargeException(String message) {
            super(message, null);
        }
    }

    private final StripeApi api;
    private final StripeClients clients;
    private final StripeConfig config;
    private final long circuitDelayNanos;
    private volatile long circuitOpenedAt = System.nanoTime();

    private final MeterRegistry metrics;
    private final Timer createLatency;
    private final Timer refundLatency;
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
        this.refundLatency = Timer.builder("chargeonce.stripe.call").tag("call", "refund")
                .description("Stripe refund create, fault-tolerance retries included")
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

    /**
     * Creates and confirms the PaymentIntent of {@code order}, classifying the whole sequence of tries (see
     * {@link StripeCall}): a {@link StripeOutcome.NotSent} only when no try can have run at Stripe.
     */
    public StripeCall createAndConfirm(PaymentOrder order) {
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
                .putMetadata(PaymentOrder.KEY, order.identity())
                .putMetadata(PaymentOrder.CLIENT_ID, order.clientId())
                .putMetadata(PaymentOrder.ATTEMPT, Integer.toString(order.attempt()));
        if (order.customer() != null) {
            params.setCustomer(order.customer());
        }
        if (order.description() != null) {
            params.setDescription(order.description());
        }
        return call(createLatency, log -> fromIntent(api.create(params.build(), order.stripeIdempotencyKey(),
                order.sendBefore(), log)));
    }

    /** What a call's request did, given the call's log; throws what each try proved (see {@link StripeApi}). */
    @FunctionalInterface
    private interface Request {
        StripeOutcome send(SendLog log) throws StripeException;
    }

    /** One call, all its tries classified together: {@link StripeOutcome.NotSent} only when no try can have run. */
    private StripeCall call(Timer latency, Request request) {
        SendLog log = new SendLog();
        Timer.Sample sample = Timer.start();
        StripeOutcome outcome;
        try {
            outcome = request.send(log);
        } catch (CardException e) {
            StripeError error = e.getStripeError();
            String paymentIntentId = error != null && error.getPaymentIntent() != null ? error.getPaymentIntent().getId() : null;
            outcome = new StripeOutcome.Declined(paymentIntentId, nonNull(e.getCode(), "card_declined"), e.getDeclineCode(),
                    error != null && error.getMessage() != null ? error.getMessage() : "Your card was declined.");
        } catch (InvalidRequestException e) {
            int status = e.getStatusCode() == null ? 400 : e.getStatusCode();
            outcome = new StripeOutcome.Rejected(status, nonNull(e.getCode(), "invalid_request"),
                    nonNull(e.getStripeError() != null ? e.getStripeError().getMessage() : null, "Stripe rejected the payment."),
                    e.getStripeError() != null ? e.getStripeError().getParam() : null);
        } catch (IdempotencyException e) {
            outcome = new StripeOutcome.KeyConflict("idempotency_error: " + e.getMessage());
        } catch (RateLimitException e) {
            outcome = notSentUnlessEarlierTries(log, "stripe rate limited the request");
        } catch (AuthenticationException e) {
            LOG.error("Stripe refused our API key; check chargeonce.stripe.api-key", e);
            outcome = notSentUnlessEarlierTries(log, "stripe authentication failed");
        } catch (CircuitBreakerOpenException e) {
            outcome = notSentUnlessEarlierTries(log, "circuit open");
        } catch (BulkheadException e) {
            outcome = notSentUnlessEarlierTries(log, "too many concurrent Stripe calls");
        } catch (StripeApi.LeaseSpentException e) {
            outcome = notSentUnlessEarlierTries(log, e.getMessage());
        } catch (StripeApi.StoredServerErrorException e) {
            outcome = new StripeOutcome.KeyFinishedWithError(e.getMessage());
        } catch (StripeApi.ServerErrorException e) {
            outcome = new StripeOutcome.Unknown(e.getMessage(), true);
        } catch (StripeApi.UnreachableException | StripeApi.KeyInUseException | StripeApi.EdgeErrorException e) {
            outcome = log.maybeExecuted() || e instanceof StripeApi.KeyInUseException
                    ? new StripeOutcome.Unknown(e.getMessage(), false)
                    : new StripeOutcome.NotSent(e.getMessage());
        } catch (TimeoutException e) {
            outcome = new StripeOutcome.Unknown("timeout: " + e.getMessage(), false);
        } catch (StripeException e) {
            outcome = new StripeOutcome.Unknown(e.getClass().getSimpleName() + ": " + e.getMessage(), false);
        } finally {
            sample.stop(latency);
        }
        long sinceNanos = log.sinceLastPossibleExecutionNanos();
        return new StripeCall(outcome, sinceNanos < 0 ? null : Duration.ofNanos(sinceNanos), log.tries());
    }

    /** A refusal of the last try proves nothing about earlier tries of the same call that may have charged. */
    private static StripeOutcome notSentUnlessEarlierTries(SendLog log, String reason) {
        return log.maybeExecuted()
                ? new StripeOutcome.Unknown(reason + ", after a try whose outcome is unknown", false)
                : new StripeOutcome.NotSent(reason);
    }

    /** The PaymentIntent as it is now, by id: how a payment that Stripe named but had not finished is followed. */
    public StripeOutcome retrieve(String paymentIntentId) {
        return fromIntent(retrievePaymentIntent(paymentIntentId));
    }

    public PaymentIntent retrievePaymentIntent(String paymentIntentId) {
        try {
            return clients.client().v1().paymentIntents().retrieve(paymentIntentId);
        } catch (StripeException e) {
            throw new LookupFailedException("retrieving " + paymentIntentId + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Finds the PaymentIntent of a charge by its stable identity (the {@link PaymentOrder#KEY} metadata every create
     * writes, whichever row or attempt sent it), listing PaymentIntents created in {@code [from, until]} widened by
     * the clock skew. Listing is strongly consistent at Stripe (search is not): when the window covers every
     * request of the key and none is still running there, an empty answer proves that nothing was created. Pages to
     * the end of the window; an empty page that says "more" is an error, not the end.
     *
     * @param legacyChargeId the row's id, matched too in the metadata that versions before the stable identity wrote
     * @param maxPages       pages to read before giving up with {@link LookupTooLargeException}
     * @param stillHolding   asked before every page: the caller keeps (renews) its lease, or the lookup is abandoned
     * @throws LookupFailedException when the list could not be read to its end
     */
    public Optional<StripeOutcome> findPaymentIntent(String identity, String legacyChargeId, Instant from, Instant until,
                                                     int maxPages, java.util.function.BooleanSupplier stillHolding) {
        long gte = from.minus(config.lookupSkew()).getEpochSecond();
        long lte = until.plus(config.lookupSkew()).getEpochSecond();
        List<PaymentIntent> matches = new ArrayList<>(1);
        String startingAfter = null;
        try {
            for (int page = 0; page < maxPages; page++) {
                if (!stillHolding.getAsBoolean()) {
                    throw new LookupAbandonedException("the lease was lost after " + page + " pages");
                }
                PaymentIntentListParams.Builder params = PaymentIntentListParams.builder()
                        .setCreated(PaymentIntentListParams.Created.builder().setGte(gte).setLte(lte).build())
                        .setLimit(100L);
                if (startingAfter != null) {
                    params.setStartingAfter(startingAfter);
                }
                StripeCollection<PaymentIntent> list = clients.client().v1().paymentIntents().list(params.build());
                List<PaymentIntent> data = list.getData() == null ? List.of() : list.getData();
                for (PaymentIntent pi : data) {
                    Map<String, String> metadata = pi.getMetadata();
                    if (metadata != null && (identity.equals(metadata.get(PaymentOrder.KEY))
                            || (legacyChargeId != null && legacyChargeId.equals(metadata.get(PaymentOrder.LEGACY_CHARGE_ID))))) {
                        matches.add(pi);
                    }
                }
                if (!Boolean.TRUE.equals(list.getHasMore())) {
                    return pick(identity, matches);
                }
                if (data.isEmpty()) {
                    throw new LookupFailedException("Stripe answered an empty page with has_more=true; the list cannot be trusted", null);
                }
                String last = data.get(data.size() - 1).getId();
                if (last.equals(startingAfter)) {
                    throw new LookupFailedException("Stripe's list did not advance past " + last, null);
                }
                startingAfter = last;
            }
        } catch (StripeException e) {
            throw new LookupFailedException("listing PaymentIntents failed: " + e.getMessage(), e);
        }
        throw new LookupTooLargeException("more than " + maxPages + " pages of PaymentIntents in the window");
    }

    private Optional<StripeOutcome> pick(String identity, List<PaymentIntent> matches) {
        if (matches.isEmpty()) {
            return Optional.empty();
        }
        if (matches.size() > 1) {
            // Should be impossible by construction; if it ever happens an operator must refund one of them.
            LOG.errorf("charge key %s has %d PaymentIntents at Stripe; reconcile", identity, matches.size());
            duplicateFindings.increment();
        }
        PaymentIntent best = matches.stream().filter(pi -> "succeeded".equals(pi.getStatus())).findFirst().orElse(matches.get(0));
        return Optional.of(fromIntent(best));
    }

    /**
     * What a PaymentIntent's state means for a charge. Public for events and the sync worker: a PaymentIntent
     * read from an event ({@link #paymentIntentOf}) is classified exactly as one Stripe answered.
     */
    public static StripeOutcome classify(PaymentIntent pi) {
        return fromIntent(pi);
    }

    /**
     * The object an event carries, whatever the event's API version ({@code deserializeUnsafe}: an empty
     * {@code getObject()} for another version would drop it silently).
     */
    public static com.stripe.model.StripeObject objectOfEvent(String eventPayload) {
        com.stripe.model.Event event = com.stripe.net.Webhook.constructEventWithoutVerification(eventPayload);
        try {
            return event.getDataObjectDeserializer().deserializeUnsafe();
        } catch (com.stripe.exception.EventDataObjectDeserializationException e) {
            throw new IllegalArgumentException("the event's object cannot be read: " + e.getMessage(), e);
        }
    }

    private static StripeOutcome fromIntent(PaymentIntent pi) {
        StripeError last = pi.getLastPaymentError();
        return switch (nonNull(pi.getStatus(), "unknown")) {
            case "succeeded" -> new StripeOutcome.Succeeded(pi.getId());
            case "requires_action" -> new StripeOutcome.RequiresAction(pi.getId(), pi.getClientSecret(),
                    pi.getNextAction() == null ? null : pi.getNextAction().toJson());
            case "processing" -> new StripeOutcome.Processing(pi.getId());
            case "requires_payment_method" -> last == null
                    // Waiting for a payment method, but no attempt with one failed: not a decline (yet).
                    ? new StripeOutcome.Pending(pi.getId(), pi.getStatus())
                    : new StripeOutcome.Declined(pi.getId(), nonNull(last.getCode(), "card_declined"), last.getDeclineCode(),
                            nonNull(last.getMessage(), "Your card was declined."));
            case "canceled" -> new StripeOutcome.Canceled(pi.getId());
            // requires_capture, requires_confirmation: states this service never asks for; followed by id.
            default -> new StripeOutcome.Pending(pi.getId(), pi.getStatus());
        };
    }

    // ---- refunds -------------------------------------------------------------------------------------------------

    /** Creates the refund of {@code order}, classifying the whole sequence of tries as a create's. */
    public StripeCall createRefund(RefundOrder order) {
        com.stripe.param.RefundCreateParams.Builder params = com.stripe.param.RefundCreateParams.builder()
                .setPaymentIntent(order.paymentIntentId())
                .setAmount(order.amount())
                .putAllMetadata(order.metadata())
                .putMetadata(PaymentOrder.KEY, order.identity())
                .putMetadata(PaymentOrder.CLIENT_ID, order.clientId())
                .putMetadata(PaymentOrder.ATTEMPT, Integer.toString(order.attempt()));
        if (order.reason() != null) {
            params.setReason(switch (order.reason()) {
                case "duplicate" -> com.stripe.param.RefundCreateParams.Reason.DUPLICATE;
                case "fraudulent" -> com.stripe.param.RefundCreateParams.Reason.FRAUDULENT;
                default -> com.stripe.param.RefundCreateParams.Reason.REQUESTED_BY_CUSTOMER;
            });
        }
        return call(refundLatency, log -> classifyRefund(api.createRefund(params.build(), order.stripeIdempotencyKey(),
                order.sendBefore(), log)));
    }

    /**
     * Finds the refund a refund key made (its {@code chargeonce_key} metadata), among the refunds of the
     * PaymentIntent created in {@code [from, until]} (widened by the skew), paging to the end.
     */
    public Optional<StripeOutcome> findRefund(String identity, String paymentIntentId, Instant from, Instant until, int maxPages,
                                              java.util.function.BooleanSupplier stillHolding) {
        long gte = from.minus(config.lookupSkew()).getEpochSecond();
        long lte = until.plus(config.lookupSkew()).getEpochSecond();
        List<com.stripe.model.Refund> matches = new ArrayList<>(1);
        String startingAfter = null;
        try {
            for (int page = 0; page < maxPages; page++) {
                if (!stillHolding.getAsBoolean()) {
                    throw new LookupAbandonedException("the lease was lost after " + page + " pages");
                }
                com.stripe.param.RefundListParams.Builder params = com.stripe.param.RefundListParams.builder()
                        .setPaymentIntent(paymentIntentId)
                        .setCreated(com.stripe.param.RefundListParams.Created.builder().setGte(gte).setLte(lte).build())
                        .setLimit(100L);
                if (startingAfter != null) {
                    params.setStartingAfter(startingAfter);
                }
                StripeCollection<com.stripe.model.Refund> list = clients.client().v1().refunds().list(params.build());
                List<com.stripe.model.Refund> data = list.getData() == null ? List.of() : list.getData();
                for (com.stripe.model.Refund refund : data) {
                    if (refund.getMetadata() != null && identity.equals(refund.getMetadata().get(PaymentOrder.KEY))) {
                        matches.add(refund);
                    }
                }
                if (!Boolean.TRUE.equals(list.getHasMore())) {
                    if (matches.size() > 1) {
                        LOG.errorf("refund key %s has %d refunds at Stripe; reconcile", identity, matches.size());
                        duplicateFindings.increment();
                    }
                    return matches.stream().findFirst().map(StripeGateway::classifyRefund);
                }
                if (data.isEmpty()) {
                    throw new LookupFailedException("Stripe answered an empty page with has_more=true; the list cannot be trusted", null);
                }
                startingAfter = data.get(data.size() - 1).getId();
            }
        } catch (StripeException e) {
            throw new LookupFailedException("listing refunds failed: " + e.getMessage(), e);
        }
        throw new LookupTooLargeException("more than " + maxPages + " pages of refunds in the window");
    }

    public com.stripe.model.Refund retrieveRefund(String refundId) {
        try {
            return clients.client().v1().refunds().retrieve(refundId);
        } catch (StripeException e) {
            throw new LookupFailedException("retrieving " + refundId + " failed: " + e.getMessage(), e);
        }
    }

    /** Cancels a refund that waits for action (only those can be); answers the refund as it is after it. */
    public com.stripe.model.Refund cancelRefund(String refundId) {
        try {
            return clients.client().v1().refunds().cancel(refundId);
        } catch (InvalidRequestException e) {
            return retrieveRefund(refundId);
        } catch (StripeException e) {
            throw new LookupFailedException("canceling " + refundId + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * What a refund's state means for its row: {@code succeeded}; {@code pending} (and {@code requires_action}) are
     * answered as made, their outcome to come; {@code failed} and {@code canceled} refunded nothing.
     */
    public static StripeOutcome classifyRefund(com.stripe.model.Refund refund) {
        return switch (nonNull(refund.getStatus(), "unknown")) {
            case "succeeded" -> new StripeOutcome.Succeeded(refund.getId());
            case "pending" -> new StripeOutcome.Processing(refund.getId());
            case "requires_action" -> new StripeOutcome.RequiresAction(refund.getId(), null, null);
            case "failed" -> new StripeOutcome.Declined(refund.getId(), "refund_failed", refund.getFailureReason(),
                    "The refund failed at Stripe" + (refund.getFailureReason() == null ? "." : ": " + refund.getFailureReason() + "."));
            case "canceled" -> new StripeOutcome.Canceled(refund.getId());
            default -> new StripeOutcome.Pending(refund.getId(), refund.getStatus());
        };
    }

    /** One page of Stripe's events, newest first, each as its JSON. */
    public record EventPage(java.util.List<String> events, java.util.List<String> ids, boolean hasMore) {
    }

    /**
     * Stripe's PaymentIntent events created at or after {@code since}, newest first, one page of 100 after
     * {@code startingAfter} (null: the first page). The Events API keeps 30 days: what an endpoint outage missed.
     */
    public EventPage listPaymentIntentEvents(Instant since, String startingAfter) {
        try {
            com.stripe.param.EventListParams.Builder params = com.stripe.param.EventListParams.builder()
                    .setCreated(com.stripe.param.EventListParams.Created.builder().setGte(since.getEpochSecond()).build())
                    .addType("payment_intent.*")
                    .setLimit(100L);
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            StripeCollection<com.stripe.model.Event> page = clients.client().v1().events().list(params.build());
            List<String> json = new ArrayList<>();
            List<String> ids = new ArrayList<>();
            for (com.stripe.model.Event event : page.getData()) {
                json.add(event.toJson());
                ids.add(event.getId());
            }
            return new EventPage(json, ids, Boolean.TRUE.equals(page.getHasMore()));
        } catch (StripeException e) {
            throw new LookupFailedException("listing events failed: " + e.getMessage(), e);
        }
    }

    /**
     * Cancels a PaymentIntent that waits for the customer (3-D Secure never completed), so that it can never be
     * completed later without the service knowing. Answers the PaymentIntent after it (it may have succeeded
     * meanwhile: then Stripe refuses to cancel, and the PaymentIntent as it is now is the answer).
     */
    public PaymentIntent cancel(String paymentIntentId) {
        try {
            return (clients.client().v1().paymentIntents().cancel(paymentIntentId,
                    com.stripe.param.PaymentIntentCancelParams.builder()
                            .setCancellationReason(com.stripe.param.PaymentIntentCancelParams.CancellationReason.ABANDONED)
                            .build(),
                    RequestOptions.builder().setIdempotencyKey("chargeonce-cancel-" + paymentIntentId).build()));
        } catch (InvalidRequestException e) {
            return retrievePaymentIntent(paymentIntentId);
        } catch (StripeException e) {
            throw new LookupFailedException("canceling " + paymentIntentId + " failed: " + e.getMessage(), e);
        }
    }

    private static String nonNull(String value, String fallback) {
        return value == null ? fallback : value;
    }
}

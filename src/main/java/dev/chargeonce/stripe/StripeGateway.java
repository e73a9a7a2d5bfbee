package dev.chargeonce.stripe;

import com.stripe.exception.AuthenticationException;
import dev.chargeonce.idempotency.Operation;
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
    private final Map<Operation, Circuit> circuits = new java.util.EnumMap<>(Operation.class);
    private final RecentDurations recentCalls = new RecentDurations(256);

    /**
     * How long this instance's recent Stripe calls took, at quantile {@code q} (0 to 1), over the last 256 calls,
     * tries and retries included; empty before the first. What a request that finds its key in flight may expect
     * to wait for the first one.
     */
    public Optional<Duration> recentCallDuration(double q) {
        return recentCalls.quantile(q);
    }

    /** The last {@code size} durations, in a ring; quantiles over them on demand (a 409 is rare enough). */
    static final class RecentDurations {
        private final long[] nanos;
        private int next;
        private int filled;

        RecentDurations(int size) {
            this.nanos = new long[size];
        }

        synchronized void record(long durationNanos) {
            nanos[next] = durationNanos;
            next = (next + 1) % nanos.length;
            filled = Math.min(filled + 1, nanos.length);
        }

        synchronized Optional<Duration> quantile(double q) {
            if (filled == 0) {
                return Optional.empty();
            }
            long[] sorted = java.util.Arrays.copyOf(nanos, filled);
            java.util.Arrays.sort(sorted);
            int index = (int) Math.min(filled - 1, Math.ceil(q * filled) - 1);
            return Optional.of(Duration.ofNanos(sorted[Math.max(0, index)]));
        }
    }

    private final MeterRegistry metrics;
    private final Timer createLatency;
    private final Timer refundLatency;
    private final io.micrometer.core.instrument.Counter duplicatePaymentIntents;
    private final io.micrometer.core.instrument.Counter duplicateRefunds;

    /** A circuit breaker of {@link StripeApi}, by name, watched so that a claim can ask whether it is open. */
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
        circuits.put(Operation.CHARGE, new Circuit(StripeApi.CIRCUIT, StripeApi.CIRCUIT_DELAY_PROPERTY));
        circuits.put(Operation.REFUND, new Circuit(StripeApi.REFUND_CIRCUIT, StripeApi.REFUND_CIRCUIT_DELAY_PROPERTY));
        circuits.forEach((op, circuit) -> metrics.gauge("chargeonce.stripe.circuit.open",
                io.micrometer.core.instrument.Tags.of("circuit", circuit.name), circuit.open));
        // Registered up front so that the first finding is an increase from 0 that alerts can see.
        this.duplicatePaymentIntents = metrics.counter("chargeonce.reconciliation.findings", "finding", "duplicate_payment_intents");
        this.duplicateRefunds = metrics.counter("chargeonce.reconciliation.findings", "finding", "duplicate_refunds");
    }

    public StripeConfig config() {
        return config;
    }

    /**
     * False while the operation's circuit breaker is open: its create would not be sent, so a new claim would be a
     * lease taken (and, for a refund, an amount reserved) for nothing. (Half-open lets trial calls through.)
     */
    public boolean acceptingCalls(Operation op) {
        Circuit circuit = circuits.get(op);
        if (CircuitBreakerMaintenance.get().currentState(circuit.name) != CircuitBreakerState.OPEN) {
            return true;
        }
        // SmallRye moves an open circuit to half-open lazily, on the first call after the delay: past the delay,
        // let calls through, or the circuit would never be tried again.
        return System.nanoTime() - circuit.openedAt >= circuit.delayNanos;
    }

    void watchCircuits(@Observes StartupEvent event) {
        circuits.forEach((op, circuit) -> CircuitBreakerMaintenance.get().onStateChange(circuit.name, state -> {
            circuit.open.set(state == CircuitBreakerState.OPEN ? 1 : 0);
            if (state == CircuitBreakerState.OPEN) {
                circuit.openedAt = System.nanoTime();
                LOG.warnf("Stripe circuit breaker %s OPEN: new %ss are answered 503 without a claim", circuit.name,
                        op.name().toLowerCase(java.util.Locale.ROOT));
            } else {
                LOG.infof("Stripe circuit breaker %s %s", circuit.name, state);
            }
        }));
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
            recentCalls.record(sample.stop(latency));
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
        List<PaymentIntent> matches = listToTheEnd("PaymentIntents", maxPages, stillHolding, startingAfter -> {
            PaymentIntentListParams.Builder params = PaymentIntentListParams.builder()
                    .setCreated(PaymentIntentListParams.Created.builder().setGte(gte).setLte(lte).build())
                    .setLimit(100L);
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            return clients.client().v1().paymentIntents().list(params.build());
        }, pi -> pi.getMetadata() != null && (identity.equals(pi.getMetadata().get(PaymentOrder.KEY))
                || (legacyChargeId != null && legacyChargeId.equals(pi.getMetadata().get(PaymentOrder.LEGACY_CHARGE_ID)))),
                PaymentIntent::getId);
        return pick("charge", identity, matches, PaymentIntent::getStatus, duplicatePaymentIntents).map(StripeGateway::fromIntent);
    }

    /** One page of a Stripe list, after {@code startingAfter} (null: the first page). */
    @FunctionalInterface
    private interface PageRead<T extends com.stripe.model.HasId> {
        StripeCollection<T> read(String startingAfter) throws StripeException;
    }

    /**
     * The objects of a Stripe list that match, read to its end: an empty page that says "more", or a page that
     * does not advance, is an error, not the end; more than {@code maxPages} pages is {@link LookupTooLargeException}.
     * Listing is strongly consistent at Stripe (search is not), so an empty result read to the end proves absence.
     */
    private static <T extends com.stripe.model.HasId> List<T> listToTheEnd(String what, int maxPages,
            java.util.function.BooleanSupplier stillHolding, PageRead<T> pages, java.util.function.Predicate<T> matching,
            java.util.function.Function<T, String> id) {
        List<T> matches = new ArrayList<>(1);
        String startingAfter = null;
        try {
            for (int page = 0; page < maxPages; page++) {
                if (!stillHolding.getAsBoolean()) {
                    throw new LookupAbandonedException("the lease was lost after " + page + " pages");
                }
                StripeCollection<T> list = pages.read(startingAfter);
                List<T> data = list.getData() == null ? List.of() : list.getData();
                data.stream().filter(matching).forEach(matches::add);
                if (!Boolean.TRUE.equals(list.getHasMore())) {
                    return matches;
                }
                if (data.isEmpty()) {
                    throw new LookupFailedException("Stripe answered an empty page of " + what + " with has_more=true; the list cannot be trusted", null);
                }
                String last = id.apply(data.get(data.size() - 1));
                if (last.equals(startingAfter)) {
                    throw new LookupFailedException("Stripe's list of " + what + " did not advance past " + last, null);
                }
                startingAfter = last;
            }
        } catch (StripeException e) {
            throw new LookupFailedException("listing " + what + " failed: " + e.getMessage(), e);
        }
        throw new LookupTooLargeException("more than " + maxPages + " pages of " + what + " in the window");
    }

    /**
     * The object a key made, of those found: more than one should be impossible by construction, and is reported
     * (an operator must refund one); a succeeded one is the key's answer then.
     */
    private static <T> Optional<T> pick(String kind, String identity, List<T> matches, java.util.function.Function<T, String> status,
                                        io.micrometer.core.instrument.Counter duplicates) {
        if (matches.isEmpty()) {
            return Optional.empty();
        }
        if (matches.size() > 1) {
            LOG.errorf("%s key %s has %d objects at Stripe; reconcile", kind, identity, matches.size());
            duplicates.increment();
        }
        return Optional.of(matches.stream().filter(m -> "succeeded".equals(status.apply(m))).findFirst().orElse(matches.get(0)));
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
        List<com.stripe.model.Refund> matches = listToTheEnd("refunds", maxPages, stillHolding, startingAfter -> {
            com.stripe.param.RefundListParams.Builder params = com.stripe.param.RefundListParams.builder()
                    .setPaymentIntent(paymentIntentId)
                    .setCreated(com.stripe.param.RefundListParams.Created.builder().setGte(gte).setLte(lte).build())
                    .setLimit(100L);
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            return clients.client().v1().refunds().list(params.build());
        }, refund -> refund.getMetadata() != null && identity.equals(refund.getMetadata().get(PaymentOrder.KEY)),
                com.stripe.model.Refund::getId);
        return pick("refund", identity, matches, com.stripe.model.Refund::getStatus, duplicateRefunds).map(StripeGateway::classifyRefund);
    }

    public com.stripe.model.Refund retrieveRefund(String refundId) {
        try {
            return clients.client().v1().refunds().retrieve(refundId);
        } catch (StripeException e) {
            throw new LookupFailedException("retrieving " + refundId + " failed: " + e.getMessage(), e);
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

    // ---- reconciliation: Stripe's records, page by page ------------------------------------------------------

    /** Stripe refused a read for the rate limit (429): nothing is wrong with the data, come back later. */
    public static final class RateLimitedException extends LookupFailedException {
        RateLimitedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * A PaymentIntent or refund as reconciliation compares it: its identity metadata (null when this service did
     * not make it), what its state means ({@link #classify}, {@link #classifyRefund}) and its raw status.
     *
     * @param refund          a refund (else a PaymentIntent)
     * @param paymentIntentId a refund's PaymentIntent (a PaymentIntent's own id)
     */
    public record StripeRecord(boolean refund, String id, String identity, String legacyChargeId, String clientId, long amount,
                               String currency, String status, StripeOutcome outcome, Instant created, String paymentIntentId) {

        /**
         * Money moved or may still move: a payment that succeeded or is on its way (captured or not), a refund made
         * and not failed or canceled.
         */
        public boolean movesMoney() {
            return refund ? java.util.Set.of("succeeded", "pending", "requires_action").contains(status)
                    : java.util.Set.of("succeeded", "processing", "requires_capture").contains(status);
        }
    }

    /** One page of a list, in Stripe's order (newest first), and where the next page starts. */
    public record RecordPage(List<StripeRecord> records, String lastId, boolean hasMore) {
    }

    /** PaymentIntents created in {@code [from, to]}, one page of 100 after {@code startingAfter} (null: the first). */
    public RecordPage listPaymentIntents(Instant from, Instant to, String startingAfter) {
        return page("PaymentIntents", () -> {
            PaymentIntentListParams.Builder params = PaymentIntentListParams.builder()
                    .setCreated(PaymentIntentListParams.Created.builder().setGte(from.getEpochSecond()).setLte(to.getEpochSecond()).build())
                    .setLimit(100L);
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            StripeCollection<PaymentIntent> list = clients.client().v1().paymentIntents().list(params.build());
            List<PaymentIntent> data = list.getData() == null ? List.of() : list.getData();
            return new RecordPage(data.stream().map(StripeGateway::record).toList(),
                    data.isEmpty() ? startingAfter : data.get(data.size() - 1).getId(), Boolean.TRUE.equals(list.getHasMore()));
        });
    }

    /**
     * Refunds created in {@code [from, to]} (of one PaymentIntent when {@code paymentIntentId} is set), one page of
     * 100 after {@code startingAfter}.
     */
    public RecordPage listRefunds(Instant from, Instant to, String paymentIntentId, String startingAfter) {
        return page("refunds", () -> {
            com.stripe.param.RefundListParams.Builder params = com.stripe.param.RefundListParams.builder()
                    .setCreated(com.stripe.param.RefundListParams.Created.builder().setGte(from.getEpochSecond()).setLte(to.getEpochSecond()).build())
                    .setLimit(100L);
            if (paymentIntentId != null) {
                params.setPaymentIntent(paymentIntentId);
            }
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            StripeCollection<com.stripe.model.Refund> list = clients.client().v1().refunds().list(params.build());
            List<com.stripe.model.Refund> data = list.getData() == null ? List.of() : list.getData();
            return new RecordPage(data.stream().map(StripeGateway::record).toList(),
                    data.isEmpty() ? startingAfter : data.get(data.size() - 1).getId(), Boolean.TRUE.equals(list.getHasMore()));
        });
    }

    /**
     * The client a Customer names in its metadata ({@code chargeonce_client_id}); empty when Stripe has no such
     * customer or it names none.
     */
    public Optional<String> customerClient(String customerId) {
        try {
            com.stripe.model.Customer customer = clients.client().v1().customers().retrieve(customerId);
            return Optional.ofNullable(customer.getMetadata() == null ? null : customer.getMetadata().get("chargeonce_client_id"));
        } catch (InvalidRequestException e) {
            if (e.getStatusCode() != null && e.getStatusCode() == 404) {
                return Optional.empty();
            }
            throw new LookupFailedException("retrieving customer " + customerId + " failed: " + e.getMessage(), e);
        } catch (StripeException e) {
            throw new LookupFailedException("retrieving customer " + customerId + " failed: " + e.getMessage(), e);
        }
    }

    /** A PaymentIntent by id; empty when Stripe has none with that id. */
    public Optional<StripeRecord> paymentIntentRecord(String id) {
        return retrieved("PaymentIntent " + id, () -> record(clients.client().v1().paymentIntents().retrieve(id)));
    }

    /** A refund by id; empty when Stripe has none with that id. */
    public Optional<StripeRecord> refundRecord(String id) {
        return retrieved("refund " + id, () -> record(clients.client().v1().refunds().retrieve(id)));
    }

    @FunctionalInterface
    private interface Read<T> {
        T read() throws StripeException;
    }

    private static RecordPage page(String what, Read<RecordPage> read) {
        try {
            return read.read();
        } catch (RateLimitException e) {
            throw new RateLimitedException("Stripe rate-limited the list of " + what, e);
        } catch (StripeException e) {
            throw new LookupFailedException("listing " + what + " failed: " + e.getMessage(), e);
        }
    }

    private static Optional<StripeRecord> retrieved(String what, Read<StripeRecord> read) {
        try {
            return Optional.of(read.read());
        } catch (InvalidRequestException e) {
            if (e.getStatusCode() != null && e.getStatusCode() == 404) {
                return Optional.empty();
            }
            throw new LookupFailedException("retrieving " + what + " failed: " + e.getMessage(), e);
        } catch (RateLimitException e) {
            throw new RateLimitedException("Stripe rate-limited retrieving " + what, e);
        } catch (StripeException e) {
            throw new LookupFailedException("retrieving " + what + " failed: " + e.getMessage(), e);
        }
    }

    private static StripeRecord record(PaymentIntent pi) {
        Map<String, String> md = pi.getMetadata() == null ? Map.of() : pi.getMetadata();
        return new StripeRecord(false, pi.getId(), md.get(PaymentOrder.KEY), md.get(PaymentOrder.LEGACY_CHARGE_ID), md.get(PaymentOrder.CLIENT_ID),
                pi.getAmount() == null ? 0 : pi.getAmount(), pi.getCurrency(), nonNull(pi.getStatus(), "unknown"), fromIntent(pi),
                pi.getCreated() == null ? Instant.EPOCH : Instant.ofEpochSecond(pi.getCreated()), pi.getId());
    }

    private static StripeRecord record(com.stripe.model.Refund refund) {
        Map<String, String> md = refund.getMetadata() == null ? Map.of() : refund.getMetadata();
        return new StripeRecord(true, refund.getId(), md.get(PaymentOrder.KEY), null, md.get(PaymentOrder.CLIENT_ID),
                refund.getAmount() == null ? 0 : refund.getAmount(), refund.getCurrency(), nonNull(refund.getStatus(), "unknown"),
                classifyRefund(refund), refund.getCreated() == null ? Instant.EPOCH : Instant.ofEpochSecond(refund.getCreated()),
                refund.getPaymentIntent());
    }

    /** One page of Stripe's events, newest first, each as its JSON. */
    public record EventPage(java.util.List<String> events, java.util.List<String> ids, boolean hasMore) {
    }

    /**
     * Stripe's events of these types (exact names: Stripe's {@code types} filter takes no wildcards, at most 20)
     * created at or after {@code since}, newest first, one page of 100 after {@code startingAfter} (null: the first
     * page). The Events API keeps 30 days: what an endpoint outage missed.
     */
    public EventPage listEvents(java.util.Collection<String> types, Instant since, String startingAfter) {
        if (types.isEmpty() || types.size() > 20) {
            throw new IllegalArgumentException("Stripe lists 1 to 20 event types at once, not " + types.size());
        }
        try {
            com.stripe.param.EventListParams.Builder params = com.stripe.param.EventListParams.builder()
                    .setCreated(com.stripe.param.EventListParams.Created.builder().setGte(since.getEpochSecond()).build())
                    .addAllType(List.copyOf(types))
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

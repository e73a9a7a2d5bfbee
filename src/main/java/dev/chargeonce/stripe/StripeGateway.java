package dev.chargeonce.stripe;

import com.stripe.model.PaymentIntent;
import com.stripe.model.Refund;
import com.stripe.model.StripeObject;
import dev.chargeonce.idempotency.Operation;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.Startup;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * The only way into Stripe: create-and-confirm a PaymentIntent or create a refund, find one again, read Stripe's
 * records. Every result is classified into a {@link StripeOutcome}; nothing Stripe-specific leaks past this class
 * but the objects a caller asks for by name.
 *
 * <p>The work is done behind it, by concern: {@link StripeCreates} (the calls that create, sent through
 * {@link StripeApi}), {@link StripeOutcomes} (what an answer or a failure means), {@link StripeLookups} (what a
 * driver reads when an outcome is unknown or not final), {@link StripeRecords} (reconciliation's and the events'
 * reads) and {@link StripeCircuits} (whether a new call would be sent at all).
 */
@Startup
@ApplicationScoped
public class StripeGateway {

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

    /**
     * Stripe has no event by the id a list's cursor names (Stripe keeps events 30 days; a test sandbox may have been
     * reset): the caller finds its place again by time.
     */
    public static final class EventCursorGoneException extends LookupFailedException {
        EventCursorGoneException(String message, Throwable cause) {
            super(message, cause);
        }
    }

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
            return refund ? Set.of("succeeded", "pending", "requires_action").contains(status)
                    : Set.of("succeeded", "processing", "requires_capture").contains(status);
        }
    }

    /** One page of a list, in Stripe's order (newest first), and where the next page starts. */
    public record RecordPage(List<StripeRecord> records, String lastId, boolean hasMore) {
    }

    /** One of Stripe's events as listed: its id, type, creation second and JSON. */
    public record ListedEvent(String id, String type, long created, String json) {
    }

    /** One page of Stripe's events, newest first (whichever way it was paged). */
    public record EventPage(List<ListedEvent> events, boolean hasMore) {

        /** The newest event of the page (the first), the place the next page toward newer events ends before. */
        public ListedEvent newest() {
            return events.getFirst();
        }
    }

    /**
     * What to list of Stripe's events: these types (exact names: Stripe's {@code types} filter takes no wildcards, at
     * most 20), created within {@code [createdGte, createdLte]} (null: unbounded), {@code limit} (1-100) per page,
     * and at most one cursor: {@code startingAfter} (the page of older events after it) or {@code endingBefore} (the
     * page of newer events before it, still newest first).
     */
    public record EventQuery(Collection<String> types, Long createdGte, Long createdLte, int limit, String startingAfter,
                             String endingBefore) {
    }

    private final StripeConfig config;
    private final StripeCircuits circuits;
    private final StripeCreates creates;
    private final StripeLookups lookups;
    private final StripeRecords records;

    StripeGateway(StripeApi api, StripeClients clients, StripeConfig config, MeterRegistry metrics,
                  dev.chargeonce.ratebudget.StripeRateBudget budget) {
        this.config = config;
        this.creates = new StripeCreates(api, metrics);
        this.circuits = new StripeCircuits(metrics);
        ReadPermits reads = new ReadPermits(clients, budget);
        this.lookups = new StripeLookups(reads, config, metrics);
        this.records = new StripeRecords(reads);
    }

    public StripeConfig config() {
        return config;
    }

    // ---- whether a call would be sent, how long calls take ---------------------------------------------------

    /**
     * False while the operation's circuit breaker is open: its create would not be sent, so a new claim would be a
     * lease taken (and, for a refund, an amount reserved) for nothing. (Half-open lets trial calls through.)
     */
    public boolean acceptingCalls(Operation op) {
        return circuits.acceptingCalls(op);
    }

    void watchCircuits(@Observes StartupEvent event) {
        circuits.watch();
    }

    /**
     * How long this instance's recent Stripe calls took, at quantile {@code q} (0 to 1), over the last 256 calls,
     * tries and retries included; empty before the first. What a request that finds its key in flight may expect
     * to wait for the first one.
     */
    public Optional<Duration> recentCallDuration(double q) {
        return creates.recentCallDuration(q);
    }

    // ---- the calls that create ---------------------------------------------------------------------------------

    /**
     * Creates and confirms the PaymentIntent of {@code order}, classifying the whole sequence of tries (see
     * {@link StripeCall}): a {@link StripeOutcome.NotSent} only when no try can have run at Stripe.
     */
    public StripeCall createAndConfirm(PaymentOrder order) {
        return creates.createAndConfirm(order);
    }

    /** Creates the refund of {@code order}, classifying the whole sequence of tries as a create's. */
    public StripeCall createRefund(RefundOrder order) {
        return creates.createRefund(order);
    }

    // ---- what an answer means ------------------------------------------------------------------------------------

    /**
     * What a PaymentIntent's state means for a charge. Public for events and the sync worker: a PaymentIntent
     * read from an event ({@link #objectOfEvent}) is classified exactly as one Stripe answered.
     */
    public static StripeOutcome classify(PaymentIntent pi) {
        return StripeOutcomes.ofPaymentIntent(pi);
    }

    /**
     * What a refund's state means for its row: {@code succeeded}; {@code pending} (and {@code requires_action}) are
     * answered as made, their outcome to come; {@code failed} and {@code canceled} refunded nothing.
     */
    public static StripeOutcome classifyRefund(Refund refund) {
        return StripeOutcomes.ofRefund(refund);
    }

    /**
     * The object an event carries, whatever the event's API version ({@code deserializeUnsafe}: an empty
     * {@code getObject()} for another version would drop it silently).
     */
    public static StripeObject objectOfEvent(String eventPayload) {
        com.stripe.model.Event event = com.stripe.net.Webhook.constructEventWithoutVerification(eventPayload);
        try {
            return event.getDataObjectDeserializer().deserializeUnsafe();
        } catch (com.stripe.exception.EventDataObjectDeserializationException e) {
            throw new IllegalArgumentException("the event's object cannot be read: " + e.getMessage(), e);
        }
    }

    // ---- when an outcome is unknown or not final -----------------------------------------------------------------

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
                                                     int maxPages, BooleanSupplier stillHolding) {
        return lookups.findPaymentIntent(identity, legacyChargeId, from, until, maxPages, stillHolding);
    }

    /** As {@link #findPaymentIntent}, the PaymentIntent itself: its metadata tells what request made it. */
    public Optional<PaymentIntent> findPaymentIntentMade(String identity, Instant from, Instant until, int maxPages,
                                                         BooleanSupplier stillHolding) {
        return lookups.findPaymentIntentMade(identity, null, from, until, maxPages, stillHolding);
    }

    /** As {@link #findPaymentIntent} (a row of a release that named its PaymentIntents by charge id too), the object itself. */
    public Optional<PaymentIntent> findPaymentIntentMade(String identity, String legacyChargeId, Instant from, Instant until,
                                                         int maxPages, BooleanSupplier stillHolding) {
        return lookups.findPaymentIntentMade(identity, legacyChargeId, from, until, maxPages, stillHolding);
    }

    /**
     * Finds the refund a refund key made (its {@code chargeonce_key} metadata), among the refunds of the
     * PaymentIntent created in {@code [from, until]} (widened by the skew), paging to the end.
     */
    public Optional<StripeOutcome> findRefund(String identity, String paymentIntentId, Instant from, Instant until, int maxPages,
                                              BooleanSupplier stillHolding) {
        return lookups.findRefund(identity, paymentIntentId, from, until, maxPages, stillHolding);
    }

    /**
     * Every refund of a charge ({@code ch_…}) as Stripe has it now, listed to the end ({@code GET /v1/refunds?charge=},
     * pages of 100, each read under the rate budget): what a {@code charge.refunded} event no longer carries.
     *
     * @throws LookupFailedException when the list could not be read to its end, or ran past {@code maxPages}
     */
    public List<Refund> refundsOfCharge(String chargeId, int maxPages) {
        return lookups.refundsOfCharge(chargeId, maxPages);
    }

    /** The PaymentIntent as it is now, by id: how a payment that Stripe named but had not finished is followed. */
    public StripeOutcome retrieve(String paymentIntentId) {
        return StripeOutcomes.ofPaymentIntent(lookups.retrievePaymentIntent(paymentIntentId));
    }

    public PaymentIntent retrievePaymentIntent(String paymentIntentId) {
        return lookups.retrievePaymentIntent(paymentIntentId);
    }

    public Refund retrieveRefund(String refundId) {
        return lookups.retrieveRefund(refundId);
    }

    /**
     * Cancels a PaymentIntent that waits for the customer (3-D Secure never completed), so that it can never be
     * completed later without the service knowing. Answers the PaymentIntent after it (it may have succeeded
     * meanwhile: then Stripe refuses to cancel, and the PaymentIntent as it is now is the answer).
     */
    public PaymentIntent cancel(String paymentIntentId) {
        return lookups.cancel(paymentIntentId);
    }

    /**
     * The client a Customer names in its metadata ({@code chargeonce_client_id}); empty when Stripe has no such
     * customer or it names none.
     */
    public Optional<String> customerClient(String customerId) {
        return lookups.customerClient(customerId);
    }

    // ---- reconciliation and the events' catch-up: Stripe's records, page by page ------------------------------

    /** PaymentIntents created in {@code [from, to]}, one page of 100 after {@code startingAfter} (null: the first). */
    public RecordPage listPaymentIntents(Instant from, Instant to, String startingAfter) {
        return records.listPaymentIntents(from, to, startingAfter);
    }

    /**
     * Refunds created in {@code [from, to]} (of one PaymentIntent when {@code paymentIntentId} is set), one page of
     * 100 after {@code startingAfter}.
     */
    public RecordPage listRefunds(Instant from, Instant to, String paymentIntentId, String startingAfter) {
        return records.listRefunds(from, to, paymentIntentId, startingAfter);
    }

    /** A PaymentIntent by id; empty when Stripe has none with that id. */
    public Optional<StripeRecord> paymentIntentRecord(String id) {
        return records.paymentIntentRecord(id);
    }

    /** A refund by id; empty when Stripe has none with that id. */
    public Optional<StripeRecord> refundRecord(String id) {
        return records.refundRecord(id);
    }

    /**
     * One page of Stripe's events (the Events API keeps 30 days: what an endpoint outage missed).
     *
     * @throws EventCursorGoneException when Stripe has no event by the cursor's id
     * @throws LookupFailedException    when the page could not be read ({@link RateLimitedException} for a 429)
     */
    public EventPage listEvents(EventQuery query) {
        return records.listEvents(query);
    }
}

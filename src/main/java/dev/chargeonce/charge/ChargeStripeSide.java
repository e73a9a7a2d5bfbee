package dev.chargeonce.charge;

import com.stripe.model.PaymentIntent;
import dev.chargeonce.idempotency.ChargeStatus;
import dev.chargeonce.idempotency.ClaimedIntent;
import dev.chargeonce.idempotency.CommandResults;
import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.idempotency.RowIds;
import dev.chargeonce.idempotency.Finishes.Final;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.operation.EarlierRequest;
import dev.chargeonce.operation.RowRef;
import dev.chargeonce.operation.StripeSide;
import dev.chargeonce.stripe.PaymentOrder;
import dev.chargeonce.stripe.StripeCall;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.stripe.StripeOutcome;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/** A charge at Stripe: a PaymentIntent, created and confirmed, found again by its identity, followed by id. */
@ApplicationScoped
public class ChargeStripeSide implements StripeSide<ChargeRequest> {

    /** The PaymentIntent events a charge follows (any other {@code payment_intent.*} event is read the same way). */
    private static final java.util.List<String> EVENTS = java.util.List.of("payment_intent.succeeded",
            "payment_intent.payment_failed", "payment_intent.canceled", "payment_intent.processing",
            "payment_intent.requires_action");

    private final StripeGateway stripe;
    private final CommandResults commandResults;

    ChargeStripeSide(StripeGateway stripe, CommandResults commandResults) {
        this.stripe = stripe;
        this.commandResults = commandResults;
    }

    /**
     * A charge answered {@code 202} whose outcome arrives later (an event, the sync worker): when a Kafka command
     * claimed it, its new state is queued for the command's producer, as {@code GET /v1/charges/{id}} shows it, in
     * the transaction that stores it. Its answer stays the {@code 202} (a retry replays it, byte for byte).
     */
    @Override
    public void stateMoved(java.sql.Connection tx, String rowId, String clientId) throws java.sql.SQLException {
        commandResults.queueLaterState(tx, rowId, clientId, ChargeQueries::viewJson);
    }

    @Override
    public Operation operation() {
        return Operation.CHARGE;
    }

    @Override
    public ChargeRequest parse(String requestJson) {
        return ChargeRequest.fromCanonicalJson(requestJson);
    }

    @Override
    public StripeCall send(ClaimedIntent intent, ChargeRequest request, long sendBefore) {
        return stripe.createAndConfirm(new PaymentOrder(identity(intent), intent.clientId(), intent.stripeAttempt(),
                StripeKeys.ofIdentity(false, identity(intent), intent.stripeAttempt()), request.amount(),
                request.currency(), request.paymentMethod(), request.customer(), request.description(), request.metadata(),
                requestFingerprint(intent, request), sendBefore));
    }

    /**
     * The fingerprint a row's PaymentIntent carries, version 2 whatever the rows are written with (what Stripe sees
     * of a row never changes between its sends). Only rows whose id is their identity's: a row claimed by a version
     * before that sent its first request without it, and Stripe would refuse a later one with it. Not when the
     * client's metadata leaves no room under Stripe's 50 keys.
     */
    static String requestFingerprint(ClaimedIntent intent, ChargeRequest request) {
        if (!intent.id().equals(RowIds.ofIdentity(ChargeQueries.PREFIX, identity(intent)))
                || request.metadata().size() >= ChargeRequestParser.MAX_METADATA_KEYS) {
            return null;
        }
        return Fingerprint.of(ChargeService.METHOD, ChargeService.PATH, request.canonicalJson()).stored(2);
    }

    /**
     * The key's PaymentIntent; a {@link StripeOutcome.KeyConflict} when it was made by another request than this one
     * (the key was first used with another body, whose row the database lost): never this row's answer.
     */
    @Override
    public Optional<StripeOutcome> find(ClaimedIntent intent, ChargeRequest request, Instant from, Instant until, int maxPages,
                                        BooleanSupplier stillHolding) {
        return stripe.findPaymentIntentMade(identity(intent), intent.id(), from, until, maxPages, stillHolding)
                .map(pi -> {
                    String madeBy = pi.getMetadata() == null ? null : pi.getMetadata().get(PaymentOrder.REQUEST);
                    return madeBy(request, madeBy) ? StripeGateway.classify(pi)
                            : new StripeOutcome.KeyConflict("the key's PaymentIntent " + pi.getId() + " was made by another request");
                });
    }

    @Override
    public boolean madeBy(ChargeRequest request, String requestFingerprint) {
        return requestFingerprint == null
                || Fingerprint.of(ChargeService.METHOD, ChargeService.PATH, request.canonicalJson()).matches(requestFingerprint);
    }

    @Override
    public Optional<EarlierRequest> earlierRequest(ClaimedIntent intent, ChargeRequest request, Instant from, Instant until,
                                                   int maxPages, BooleanSupplier stillHolding) {
        return stripe.findPaymentIntentMade(identity(intent), from, until, maxPages, stillHolding)
                .filter(pi -> pi.getMetadata() != null && pi.getMetadata().get(PaymentOrder.REQUEST) != null)
                .map(pi -> {
                    String fingerprint = pi.getMetadata().get(PaymentOrder.REQUEST);
                    ChargeRequest earlier = requestOf(pi);
                    return new EarlierRequest(StripeGateway.classify(pi), fingerprint, earlier.canonicalJson(),
                            earlier.amount(), earlier.currency(),
                            madeBy(request, fingerprint));
                });
    }

    /** The request a PaymentIntent was created by, as far as it shows it: every field is sent, the metadata less ours. */
    private static ChargeRequest requestOf(PaymentIntent pi) {
        java.util.SortedMap<String, String> metadata = new java.util.TreeMap<>();
        if (pi.getMetadata() != null) {
            pi.getMetadata().forEach((key, value) -> {
                if (!key.startsWith(ChargeRequestParser.RESERVED_METADATA_PREFIX)) {
                    metadata.put(key, value);
                }
            });
        }
        return new ChargeRequest(pi.getAmount(), pi.getCurrency(), pi.getPaymentMethod(), pi.getCustomer(),
                pi.getDescription(), metadata);
    }

    @Override
    public ObjectState look(String objectId, boolean giveUp) {
        PaymentIntent pi = giveUp ? stripe.cancel(objectId) : stripe.retrievePaymentIntent(objectId);
        return state(pi);
    }

    /** A PaymentIntent, as the service reads it (also from an event). */
    public static ObjectState state(PaymentIntent pi) {
        return new ObjectState(pi.getId(), pi.getMetadata() == null ? null : pi.getMetadata().get(PaymentOrder.KEY),
                pi.getMetadata() == null ? null : pi.getMetadata().get(PaymentOrder.CLIENT_ID), StripeGateway.classify(pi),
                pi.getStatus(), pi.getId(), pi.getAmount() == null ? 0 : pi.getAmount(),
                pi.getMetadata() == null ? null : pi.getMetadata().get(PaymentOrder.REQUEST));
    }

    @Override
    public java.util.List<String> eventTypes() {
        return EVENTS;
    }

    @Override
    public java.util.List<ObjectState> objectsOf(String eventType, com.stripe.model.StripeObject stripeObject) {
        return eventType.startsWith("payment_intent.") && stripeObject instanceof PaymentIntent pi
                ? java.util.List.of(state(pi)) : java.util.List.of();
    }

    @Override
    public Optional<Final> finalAnswer(RowRef row, ChargeRequest request, StripeOutcome outcome, Duration firstLook) {
        return ChargeOutcomes.finalAnswer(row, request, outcome, firstLook);
    }

    @Override
    public Optional<String> state(StripeOutcome outcome) {
        return ChargeOutcomes.chargeStatus(outcome).map(ChargeStatus::column);
    }

    /**
     * The identity the row stores (what was sent, what the console shows): never recomputed from the client's key,
     * which the row does not keep (and which a later secret would hash differently). Every row has one (V1.8.2).
     */
    private static String identity(ClaimedIntent intent) {
        return java.util.Objects.requireNonNull(intent.stripeIdentity(), "a row without its identity");
    }
}

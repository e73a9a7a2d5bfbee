package dev.chargeonce.stripe;

import com.stripe.exception.InvalidRequestException;
import com.stripe.exception.StripeException;
import com.stripe.model.Customer;
import com.stripe.model.HasId;
import com.stripe.model.PaymentIntent;
import com.stripe.model.Refund;
import com.stripe.model.StripeCollection;
import com.stripe.net.RequestOptions;
import com.stripe.param.PaymentIntentCancelParams;
import com.stripe.param.PaymentIntentListParams;
import com.stripe.param.RefundListParams;
import dev.chargeonce.stripe.StripeGateway.LookupAbandonedException;
import dev.chargeonce.stripe.StripeGateway.LookupFailedException;
import dev.chargeonce.stripe.StripeGateway.LookupTooLargeException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jboss.logging.Logger;

/**
 * What a driver reads when a create's outcome is unknown or not final yet: the PaymentIntent or refund a key made,
 * found by its identity in a window of Stripe's lists read to their end; one by id; a PaymentIntent canceled that
 * waits for a customer who never came; the client a Customer names.
 */
final class StripeLookups {

    /** The gateway's category: these lines are the gateway's, wherever the code that writes them lives. */
    private static final Logger LOG = Logger.getLogger(StripeGateway.class);

    private final ReadPermits reads;
    private final StripeConfig config;
    private final Counter duplicatePaymentIntents;
    private final Counter duplicateRefunds;

    StripeLookups(ReadPermits reads, StripeConfig config, MeterRegistry metrics) {
        this.reads = reads;
        this.config = config;
        // Registered up front so that the first finding is an increase from 0 that alerts can see.
        this.duplicatePaymentIntents = metrics.counter("chargeonce.reconciliation.findings", "finding", "duplicate_payment_intents");
        this.duplicateRefunds = metrics.counter("chargeonce.reconciliation.findings", "finding", "duplicate_refunds");
    }

    /** See {@link StripeGateway#findPaymentIntent}. */
    Optional<StripeOutcome> findPaymentIntent(String identity, String legacyChargeId, Instant from, Instant until,
                                              int maxPages, BooleanSupplier stillHolding) {
        return findPaymentIntentMade(identity, legacyChargeId, from, until, maxPages, stillHolding)
                .map(StripeOutcomes::ofPaymentIntent);
    }

    /** See {@link StripeGateway#findPaymentIntentMade}. */
    Optional<PaymentIntent> findPaymentIntentMade(String identity, String legacyChargeId, Instant from, Instant until,
                                                  int maxPages, BooleanSupplier stillHolding) {
        long gte = from.minus(config.lookupSkew()).getEpochSecond();
        long lte = until.plus(config.lookupSkew()).getEpochSecond();
        List<PaymentIntent> matches = listToTheEnd("PaymentIntents", maxPages, stillHolding, startingAfter -> {
            PaymentIntentListParams.Builder params = PaymentIntentListParams.builder()
                    .setCreated(PaymentIntentListParams.Created.builder().setGte(gte).setLte(lte).build())
                    .setLimit(100L);
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            return reads.client().v1().paymentIntents().list(params.build());
        }, pi -> pi.getMetadata() != null && (identity.equals(pi.getMetadata().get(PaymentOrder.KEY))
                || (legacyChargeId != null && legacyChargeId.equals(pi.getMetadata().get(PaymentOrder.LEGACY_CHARGE_ID)))),
                PaymentIntent::getId);
        return pick("charge", identity, matches, PaymentIntent::getStatus, duplicatePaymentIntents);
    }

    /** See {@link StripeGateway#findRefund}. */
    Optional<StripeOutcome> findRefund(String identity, String paymentIntentId, Instant from, Instant until, int maxPages,
                                       BooleanSupplier stillHolding) {
        long gte = from.minus(config.lookupSkew()).getEpochSecond();
        long lte = until.plus(config.lookupSkew()).getEpochSecond();
        List<Refund> matches = listToTheEnd("refunds", maxPages, stillHolding, startingAfter -> {
            RefundListParams.Builder params = RefundListParams.builder()
                    .setPaymentIntent(paymentIntentId)
                    .setCreated(RefundListParams.Created.builder().setGte(gte).setLte(lte).build())
                    .setLimit(100L);
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            return reads.client().v1().refunds().list(params.build());
        }, refund -> refund.getMetadata() != null && identity.equals(refund.getMetadata().get(PaymentOrder.KEY)),
                Refund::getId);
        return pick("refund", identity, matches, Refund::getStatus, duplicateRefunds).map(StripeOutcomes::ofRefund);
    }

    /** See {@link StripeGateway#refundsOfCharge}. */
    List<Refund> refundsOfCharge(String chargeId, int maxPages) {
        return listToTheEnd("refunds of " + chargeId, maxPages, () -> true, startingAfter -> {
            RefundListParams.Builder params = RefundListParams.builder().setCharge(chargeId).setLimit(100L);
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            return reads.client().v1().refunds().list(params.build());
        }, refund -> true, Refund::getId);
    }

    /** One page of a Stripe list, after {@code startingAfter} (null: the first page). */
    @FunctionalInterface
    private interface PageRead<T extends HasId> {
        StripeCollection<T> read(String startingAfter) throws StripeException;
    }

    /**
     * The objects of a Stripe list that match, read to its end: an empty page that says "more", or a page that
     * does not advance, is an error, not the end; more than {@code maxPages} pages is {@link LookupTooLargeException}.
     * Listing is strongly consistent at Stripe (search is not), so an empty result read to the end proves absence.
     */
    private <T extends HasId> List<T> listToTheEnd(String what, int maxPages, BooleanSupplier stillHolding,
                                                          PageRead<T> pages, Predicate<T> matching, Function<T, String> id) {
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
            reads.failed(e);
            throw new LookupFailedException("listing " + what + " failed: " + e.getMessage(), e);
        }
        throw new LookupTooLargeException("more than " + maxPages + " pages of " + what + " in the window");
    }

    /**
     * The object a key made, of those found: more than one should be impossible by construction, and is reported
     * (an operator must refund one); a succeeded one is the key's answer then.
     */
    private static <T> Optional<T> pick(String kind, String identity, List<T> matches, Function<T, String> status,
                                        Counter duplicates) {
        if (matches.isEmpty()) {
            return Optional.empty();
        }
        if (matches.size() > 1) {
            LOG.errorf("%s key %s has %d objects at Stripe; reconcile", kind, identity, matches.size());
            duplicates.increment();
        }
        return Optional.of(matches.stream().filter(m -> "succeeded".equals(status.apply(m))).findFirst().orElse(matches.get(0)));
    }

    /** See {@link StripeGateway#retrievePaymentIntent}. */
    PaymentIntent retrievePaymentIntent(String paymentIntentId) {
        try {
            return reads.client().v1().paymentIntents().retrieve(paymentIntentId);
        } catch (StripeException e) {
            reads.failed(e);
            throw new LookupFailedException("retrieving " + paymentIntentId + " failed: " + e.getMessage(), e);
        }
    }

    /** See {@link StripeGateway#retrieveRefund}. */
    Refund retrieveRefund(String refundId) {
        try {
            return reads.client().v1().refunds().retrieve(refundId);
        } catch (StripeException e) {
            reads.failed(e);
            throw new LookupFailedException("retrieving " + refundId + " failed: " + e.getMessage(), e);
        }
    }

    /** See {@link StripeGateway#cancel}. */
    PaymentIntent cancel(String paymentIntentId) {
        try {
            return (reads.client().v1().paymentIntents().cancel(paymentIntentId,
                    PaymentIntentCancelParams.builder()
                            .setCancellationReason(PaymentIntentCancelParams.CancellationReason.ABANDONED)
                            .build(),
                    RequestOptions.builder().setIdempotencyKey("chargeonce-cancel-" + paymentIntentId).build()));
        } catch (InvalidRequestException e) {
            return retrievePaymentIntent(paymentIntentId);
        } catch (StripeException e) {
            reads.failed(e);
            throw new LookupFailedException("canceling " + paymentIntentId + " failed: " + e.getMessage(), e);
        }
    }

    /** See {@link StripeGateway#customerClient}. */
    Optional<String> customerClient(String customerId) {
        try {
            Customer customer = reads.client().v1().customers().retrieve(customerId);
            return Optional.ofNullable(customer.getMetadata() == null ? null : customer.getMetadata().get("chargeonce_client_id"));
        } catch (InvalidRequestException e) {
            if (e.getStatusCode() != null && e.getStatusCode() == 404) {
                return Optional.empty();
            }
            throw new LookupFailedException("retrieving customer " + customerId + " failed: " + e.getMessage(), e);
        } catch (StripeException e) {
            reads.failed(e);
            throw new LookupFailedException("retrieving customer " + customerId + " failed: " + e.getMessage(), e);
        }
    }
}

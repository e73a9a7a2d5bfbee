package dev.chargeonce.stripe;

import com.stripe.exception.InvalidRequestException;
import com.stripe.exception.RateLimitException;
import com.stripe.exception.StripeException;
import com.stripe.model.Event;
import com.stripe.model.PaymentIntent;
import com.stripe.model.Refund;
import com.stripe.model.StripeCollection;
import com.stripe.param.EventListParams;
import com.stripe.param.PaymentIntentListParams;
import com.stripe.param.RefundListParams;
import dev.chargeonce.stripe.StripeGateway.EventCursorGoneException;
import dev.chargeonce.stripe.StripeGateway.EventPage;
import dev.chargeonce.stripe.StripeGateway.EventQuery;
import dev.chargeonce.stripe.StripeGateway.ListedEvent;
import dev.chargeonce.stripe.StripeGateway.LookupFailedException;
import dev.chargeonce.stripe.StripeGateway.RateLimitedException;
import dev.chargeonce.stripe.StripeGateway.RecordPage;
import dev.chargeonce.stripe.StripeGateway.StripeRecord;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Stripe's records as reconciliation and the events' catch-up read them: PaymentIntents and refunds page by page or
 * by id, each as a {@link StripeRecord}; events page by page, as their JSON.
 */
final class StripeRecords {

    private final ReadPermits reads;

    StripeRecords(ReadPermits reads) {
        this.reads = reads;
    }

    /** See {@link StripeGateway#listPaymentIntents}. */
    RecordPage listPaymentIntents(Instant from, Instant to, String startingAfter) {
        return page("PaymentIntents", () -> {
            PaymentIntentListParams.Builder params = PaymentIntentListParams.builder()
                    .setCreated(PaymentIntentListParams.Created.builder().setGte(from.getEpochSecond()).setLte(to.getEpochSecond()).build())
                    .setLimit(100L);
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            StripeCollection<PaymentIntent> list = reads.client().v1().paymentIntents().list(params.build());
            List<PaymentIntent> data = list.getData() == null ? List.of() : list.getData();
            return new RecordPage(data.stream().map(StripeRecords::record).toList(),
                    data.isEmpty() ? startingAfter : data.get(data.size() - 1).getId(), Boolean.TRUE.equals(list.getHasMore()));
        });
    }

    /** See {@link StripeGateway#listRefunds}. */
    RecordPage listRefunds(Instant from, Instant to, String paymentIntentId, String startingAfter) {
        return page("refunds", () -> {
            RefundListParams.Builder params = RefundListParams.builder()
                    .setCreated(RefundListParams.Created.builder().setGte(from.getEpochSecond()).setLte(to.getEpochSecond()).build())
                    .setLimit(100L);
            if (paymentIntentId != null) {
                params.setPaymentIntent(paymentIntentId);
            }
            if (startingAfter != null) {
                params.setStartingAfter(startingAfter);
            }
            StripeCollection<Refund> list = reads.client().v1().refunds().list(params.build());
            List<Refund> data = list.getData() == null ? List.of() : list.getData();
            return new RecordPage(data.stream().map(StripeRecords::record).toList(),
                    data.isEmpty() ? startingAfter : data.get(data.size() - 1).getId(), Boolean.TRUE.equals(list.getHasMore()));
        });
    }

    /** See {@link StripeGateway#paymentIntentRecord}. */
    Optional<StripeRecord> paymentIntentRecord(String id) {
        return retrieved("PaymentIntent " + id, () -> record(reads.client().v1().paymentIntents().retrieve(id)));
    }

    /** See {@link StripeGateway#refundRecord}. */
    Optional<StripeRecord> refundRecord(String id) {
        return retrieved("refund " + id, () -> record(reads.client().v1().refunds().retrieve(id)));
    }

    /** See {@link StripeGateway#listEvents}. */
    EventPage listEvents(EventQuery query) {
        if (query.types().isEmpty() || query.types().size() > 20) {
            throw new IllegalArgumentException("Stripe lists 1 to 20 event types at once, not " + query.types().size());
        }
        try {
            EventListParams.Builder params = EventListParams.builder().addAllType(List.copyOf(query.types())).setLimit((long) query.limit());
            if (query.createdGte() != null || query.createdLte() != null) {
                EventListParams.Created.Builder created = EventListParams.Created.builder();
                if (query.createdGte() != null) {
                    created.setGte(query.createdGte());
                }
                if (query.createdLte() != null) {
                    created.setLte(query.createdLte());
                }
                params.setCreated(created.build());
            }
            if (query.startingAfter() != null) {
                params.setStartingAfter(query.startingAfter());
            }
            if (query.endingBefore() != null) {
                params.setEndingBefore(query.endingBefore());
            }
            StripeCollection<Event> page = reads.client().v1().events().list(params.build());
            List<ListedEvent> events = new ArrayList<>();
            for (Event event : page.getData() == null ? List.<Event>of() : page.getData()) {
                events.add(new ListedEvent(event.getId(), event.getType(), event.getCreated() == null ? 0 : event.getCreated(),
                        event.toJson()));
            }
            if (events.isEmpty() && Boolean.TRUE.equals(page.getHasMore())) {
                throw new LookupFailedException("Stripe answered an empty page of events with has_more=true; the list cannot be trusted", null);
            }
            return new EventPage(events, Boolean.TRUE.equals(page.getHasMore()));
        } catch (InvalidRequestException e) {
            String cursor = query.endingBefore() != null ? query.endingBefore() : query.startingAfter();
            if (cursor != null && "resource_missing".equals(e.getCode())) {
                throw new EventCursorGoneException("Stripe has no event " + cursor + " to list from: " + e.getMessage(), e);
            }
            throw new LookupFailedException("listing events failed: " + e.getMessage(), e);
        } catch (RateLimitException e) {
            reads.failed(e);
            throw new RateLimitedException("Stripe rate-limited the list of events", e);
        } catch (StripeException e) {
            throw new LookupFailedException("listing events failed: " + e.getMessage(), e);
        }
    }

    @FunctionalInterface
    private interface Read<T> {
        T read() throws StripeException;
    }

    private RecordPage page(String what, Read<RecordPage> read) {
        try {
            return read.read();
        } catch (RateLimitException e) {
            reads.failed(e);
            throw new RateLimitedException("Stripe rate-limited the list of " + what, e);
        } catch (StripeException e) {
            throw new LookupFailedException("listing " + what + " failed: " + e.getMessage(), e);
        }
    }

    private Optional<StripeRecord> retrieved(String what, Read<StripeRecord> read) {
        try {
            return Optional.of(read.read());
        } catch (InvalidRequestException e) {
            if (e.getStatusCode() != null && e.getStatusCode() == 404) {
                return Optional.empty();
            }
            throw new LookupFailedException("retrieving " + what + " failed: " + e.getMessage(), e);
        } catch (RateLimitException e) {
            reads.failed(e);
            throw new RateLimitedException("Stripe rate-limited retrieving " + what, e);
        } catch (StripeException e) {
            throw new LookupFailedException("retrieving " + what + " failed: " + e.getMessage(), e);
        }
    }

    private static StripeRecord record(PaymentIntent pi) {
        Map<String, String> md = pi.getMetadata() == null ? Map.of() : pi.getMetadata();
        return new StripeRecord(false, pi.getId(), md.get(PaymentOrder.KEY), md.get(PaymentOrder.LEGACY_CHARGE_ID), md.get(PaymentOrder.CLIENT_ID),
                pi.getAmount() == null ? 0 : pi.getAmount(), pi.getCurrency(), StripeOutcomes.nonNull(pi.getStatus(), "unknown"),
                StripeOutcomes.ofPaymentIntent(pi), pi.getCreated() == null ? Instant.EPOCH : Instant.ofEpochSecond(pi.getCreated()),
                pi.getId());
    }

    private static StripeRecord record(Refund refund) {
        Map<String, String> md = refund.getMetadata() == null ? Map.of() : refund.getMetadata();
        return new StripeRecord(true, refund.getId(), md.get(PaymentOrder.KEY), null, md.get(PaymentOrder.CLIENT_ID),
                refund.getAmount() == null ? 0 : refund.getAmount(), refund.getCurrency(), StripeOutcomes.nonNull(refund.getStatus(), "unknown"),
                StripeOutcomes.ofRefund(refund), refund.getCreated() == null ? Instant.EPOCH : Instant.ofEpochSecond(refund.getCreated()),
                refund.getPaymentIntent());
    }
}

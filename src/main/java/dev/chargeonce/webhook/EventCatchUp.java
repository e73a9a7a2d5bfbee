package dev.chargeonce.webhook;

import dev.chargeonce.ratebudget.TrafficClass;
import dev.chargeonce.idempotency.DatabaseRefusedException;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeGateway.EventCursorGoneException;
import dev.chargeonce.stripe.StripeGateway.EventPage;
import dev.chargeonce.stripe.StripeGateway.EventQuery;
import dev.chargeonce.stripe.StripeGateway.ListedEvent;
import dev.chargeonce.webhook.EventCursor.Position;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.jboss.logging.Logger;

/**
 * Nothing lost while the endpoint was down, whatever the rate: reads Stripe's events of every type an operation
 * follows (charges' PaymentIntents, refunds) forward, oldest first, from a place kept in the database
 * ({@link EventCursor}), and feeds every one the inbox has not recorded through it, where it is applied like a
 * delivery. The place moves page by page, after the page's events are recorded, and never onto an event younger than
 * {@code chargeonce.webhooks.catch-up-overlap} (one can appear in Stripe's list after younger ones): a pass that
 * stops (its page budget, Stripe, the database) goes on from there, and what arrives meanwhile by webhook moves
 * nothing. One pass at a time over all instances (the place's lease); the others skip. Also keeps the inbox to its
 * retention.
 *
 * <p>Stripe lists newest first: a pass pages toward newer events with {@code ending_before}, from the last event
 * of its place. Without one (the first pass, or Stripe no longer has that event) it finds the oldest page at or
 * after the place's second by halving a {@code created} window (a few reads, never a walk through the window).
 */
@ApplicationScoped
public class EventCatchUp {

    private static final Logger LOG = Logger.getLogger(EventCatchUp.class);
    /** Stripe redelivers an event for up to 3 days: the inbox must remember it at least that long. */
    static final Duration STRIPE_REDELIVERY_WINDOW = Duration.ofDays(3);
    /** Stripe's clock may be a little ahead of this one: the first page's window reaches that far past now. */
    private static final long CLOCK_MARGIN_SECONDS = 60;

    /** How a pass ended: read to the end of Stripe's list, stopped with its place kept, or another holder's turn. */
    public enum Outcome { FINISHED, UNFINISHED, BUSY }

    /** Why a pass stopped before the end (the {@code reason} of {@code chargeonce_webhooks_catchup_unfinished_total}). */
    public enum Stop { PAGE_BUDGET, STRIPE, DATABASE, LEASE_LOST }

    /** What a pass did: its outcome, pages read, events fed that the inbox had not recorded, where it stopped. */
    public record PassResult(Outcome outcome, int pages, int fed, Stop stop) {
    }

    /** What bounds a pass: the configuration's, or a test's. */
    record Limits(int pageSize, int maxPages, Duration overlap, Duration lease, Duration firstWindow) {
        static Limits of(WebhookConfig config) {
            return new Limits(config.catchUpPageSize(), config.catchUpMaxPages(), config.catchUpOverlap(), config.catchUpLease(),
                    config.catchUpFirstWindow());
        }
    }

    private final StripeEventInbox inbox;
    private final EventCursor cursor;
    private final StripeGateway stripe;
    private final WebhookConfig config;
    private final List<String> followedTypes;
    private final Map<String, Counter> caughtUp = new LinkedHashMap<>();
    private final Map<Stop, Counter> unfinished = new EnumMap<>(Stop.class);
    /** This instance, as the lease names it (the pod's name where there is one). */
    private final String holder = System.getenv().getOrDefault("HOSTNAME", "instance") + "/" + UUID.randomUUID();

    EventCatchUp(StripeEventInbox inbox, EventCursor cursor, StripeGateway stripe, WebhookConfig config, MeterRegistry metrics,
                 OperationDriver driver) {
        this.inbox = inbox;
        this.cursor = cursor;
        this.stripe = stripe;
        this.config = config;
        this.followedTypes = Arrays.stream(Operation.values())
                .flatMap(op -> driver.side(op).eventTypes().stream()).distinct().toList();
        // Registered up front, one per followed type (bounded tags), so that a first catch-up is an increase from 0.
        for (String type : followedTypes) {
            caughtUp.put(type, metrics.counter("chargeonce.webhooks.caught.up", "type", type));
        }
        for (Stop stop : Stop.values()) {
            unfinished.put(stop, metrics.counter("chargeonce.webhooks.catchup.unfinished", "reason", stop.name().toLowerCase(Locale.ROOT)));
        }
    }

    void validateAtStartup(@Observes StartupEvent event) {
        if (config.retention().compareTo(STRIPE_REDELIVERY_WINDOW.plusDays(1)) < 0) {
            throw new IllegalStateException("chargeonce.webhooks.retention=" + config.retention() + " is shorter than Stripe's"
                    + " 3-day redelivery window plus a day: a redelivered event could be applied a second time");
        }
        if (config.catchUpPageSize() < 1 || config.catchUpPageSize() > 100) {
            throw new IllegalStateException("chargeonce.webhooks.catch-up-page-size=" + config.catchUpPageSize()
                    + ": Stripe lists 1 to 100 events a page");
        }
        if (config.catchUpMaxPages() < 1 || config.catchUpLease().isNegative() || config.catchUpLease().isZero()) {
            throw new IllegalStateException("chargeonce.webhooks.catch-up-max-pages and catch-up-lease must be positive");
        }
    }

    @Scheduled(identity = "event-catch-up", every = "${chargeonce.webhooks.catch-up-interval:5m}", delayed = "${chargeonce.webhooks.catch-up-initial-delay:30s}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void pass() {
        if (!config.catchUpEnabled()) {
            return;
        }
        TrafficClass.UPKEEP.run(() -> run(holder, Limits.of(config)));
        try {
            int deleted;
            do {
                deleted = inbox.deleteOlderThan(config.retention(), 500);
            } while (deleted == 500);
        } catch (DatabaseUnavailableException e) {
            LOG.warnf("inbox retention skipped: %s", e.getMessage());
        }
    }

    /** One pass as this instance; returns how many events it fed to the inbox that the inbox had not recorded. */
    public int catchUpOnce() {
        return run(holder, Limits.of(config)).fed();
    }

    /** One pass as {@code holder}: nothing if another holder's lease runs, else read on from the place. */
    PassResult run(String holder, Limits limits) {
        Instant started = Instant.now();
        Optional<Position> taken;
        try {
            taken = cursor.take(EventCursor.STRIPE_EVENTS, holder, limits.lease(), started.minus(limits.firstWindow()));
        } catch (DatabaseUnavailableException | DatabaseRefusedException e) {
            LOG.warnf("event catch-up skipped: %s", e.getMessage());
            unfinished.get(Stop.DATABASE).increment();
            return new PassResult(Outcome.UNFINISHED, 0, 0, Stop.DATABASE);
        }
        if (taken.isEmpty()) {
            return new PassResult(Outcome.BUSY, 0, 0, null);
        }
        Pass pass = new Pass(holder, limits, taken.get(), started.minus(limits.overlap()).getEpochSecond());
        Stop stop = null;
        try {
            pass.read();
        } catch (PageBudgetSpent e) {
            stop = Stop.PAGE_BUDGET;
        } catch (LeaseLost e) {
            stop = Stop.LEASE_LOST;
        } catch (StripeGateway.LookupFailedException e) {
            stop = Stop.STRIPE;
            LOG.warnf("event catch-up stopped at %s: %s", pass.position, e.getMessage());
        } catch (DatabaseUnavailableException | DatabaseRefusedException e) {
            stop = Stop.DATABASE;
            LOG.warnf("event catch-up stopped at %s: %s", pass.position, e.getMessage());
        } finally {
            try {
                cursor.giveBack(EventCursor.STRIPE_EVENTS, holder);
            } catch (DatabaseUnavailableException | DatabaseRefusedException e) {
                LOG.debugf("the catch-up's lease expires by itself: %s", e.getMessage());
            }
        }
        if (pass.fed > 0) {
            LOG.warnf("event catch-up: %d event(s) Stripe had and the inbox had not (an endpoint outage?)", pass.fed);
        }
        if (stop != null) {
            unfinished.get(stop).increment();
            LOG.infof("event catch-up pass stopped (%s) after %d page(s); the next goes on from %s", stop, pass.pages, pass.position);
            return new PassResult(Outcome.UNFINISHED, pass.pages, pass.fed, stop);
        }
        return new PassResult(Outcome.FINISHED, pass.pages, pass.fed, null);
    }

    /** The page budget of the pass is spent (the place is kept: the next pass goes on from it). */
    private static final class PageBudgetSpent extends RuntimeException {
        PageBudgetSpent() {
            super(null, null, false, false);
        }
    }

    /** Another holder took the lease (this one's expired): it goes on from the place, this pass stops. */
    private static final class LeaseLost extends RuntimeException {
        LeaseLost() {
            super(null, null, false, false);
        }
    }

    /** One pass's reading: the place as it moves, and what it read. */
    private final class Pass {
        private final String holder;
        private final Limits limits;
        /** Events created at or before this second have all appeared in Stripe's list by the time the pass began. */
        private final long settledUpTo;
        private Position position;
        /** Whether every event read so far was old enough for the place to move onto it. */
        private boolean settledSoFar = true;
        private int pages;
        private int fed;

        Pass(String holder, Limits limits, Position position, long settledUpTo) {
            this.holder = holder;
            this.limits = limits;
            this.position = position;
            this.settledUpTo = settledUpTo;
        }

        void read() {
            String after = position.eventId();
            boolean foundAgain = false;
            if (after == null) {
                after = firstPageFrom(position.created());
                if (after == null) {
                    moveTo(new Position(Math.max(position.created(), settledUpTo), null)); // nothing since the place
                    return;
                }
            }
            while (true) {
                if (pages >= limits.maxPages()) {
                    throw new PageBudgetSpent();
                }
                EventPage page;
                try {
                    page = stripe.listEvents(new EventQuery(followedTypes, null, null, limits.pageSize(), null, after));
                } catch (EventCursorGoneException e) {
                    if (foundAgain) {
                        throw e;
                    }
                    // Stripe no longer has the place's event (kept 30 days): find the place again by its second.
                    LOG.warnf("event catch-up: %s; reading again from %s", e.getMessage(), Instant.ofEpochSecond(position.created()));
                    foundAgain = true;
                    after = firstPageFrom(position.created());
                    if (after == null) {
                        moveTo(new Position(Math.max(position.created(), settledUpTo), null));
                        return;
                    }
                    continue;
                }
                pages++;
                if (page.events().isEmpty()) {
                    break;
                }
                record(page);
                after = page.newest().id();
                if (!page.hasMore()) {
                    break;
                }
            }
            if (settledSoFar && position.created() < settledUpTo) {
                // Read to the end and every event was settled: all created up to settledUpTo are recorded.
                moveTo(new Position(settledUpTo, position.eventId()));
            }
        }

        /**
         * Records the oldest page of events created at or after {@code from} (and, if one second holds more than a
         * page, all of that second's) and answers the newest event recorded, from which the pass pages on; null when
         * Stripe has no event there. Halving the window's end costs at most ~log2(seconds) reads, not counted in
         * the page budget: they are bounded by themselves, and a budget smaller than them would never start.
         */
        private String firstPageFrom(long from) {
            long top = Math.max(from, Instant.now().getEpochSecond() + CLOCK_MARGIN_SECONDS);
            EventPage page = window(from, top, null);
            if (!page.hasMore()) {
                return recordFirst(page);
            }
            long emptyUpTo = from - 1;
            long fullAt = top;
            while (fullAt - emptyUpTo > 1) {
                long middle = emptyUpTo + (fullAt - emptyUpTo) / 2;
                page = window(from, middle, null);
                if (page.hasMore()) {
                    fullAt = middle;
                } else if (page.events().isEmpty()) {
                    emptyUpTo = middle;
                } else {
                    return recordFirst(page);
                }
            }
            // More than a page of events in second fullAt and none before it: that second, down, then recorded oldest first.
            List<EventPage> second = new ArrayList<>();
            String startingAfter = null;
            do {
                page = window(fullAt, fullAt, startingAfter);
                if (page.events().isEmpty()) {
                    break;
                }
                second.add(page);
                startingAfter = page.events().getLast().id();
            } while (page.hasMore());
            for (int i = second.size() - 1; i >= 0; i--) {
                record(second.get(i));
            }
            return second.isEmpty() ? null : second.getFirst().newest().id();
        }

        private EventPage window(long from, long to, String startingAfter) {
            return stripe.listEvents(new EventQuery(followedTypes, from, to, limits.pageSize(), startingAfter, null));
        }

        private String recordFirst(EventPage page) {
            if (page.events().isEmpty()) {
                return null;
            }
            record(page);
            return page.newest().id();
        }

        /** Feeds the page's events the inbox lacks, oldest first, then moves the place (and renews the lease). */
        private void record(EventPage page) {
            List<ListedEvent> oldestFirst = page.events().reversed();
            Set<String> recorded = inbox.recordedAmong(oldestFirst.stream().map(ListedEvent::id).toList());
            Position to = position;
            for (ListedEvent event : oldestFirst) {
                if (!recorded.contains(event.id())
                        && inbox.receive(event.json(), "catch_up") != StripeEventInbox.Received.DUPLICATE) {
                    fed++;
                    Counter counter = caughtUp.get(event.type());
                    if (counter != null) {
                        counter.increment();
                    }
                }
                if (settledSoFar && event.created() <= settledUpTo) {
                    to = new Position(Math.max(to.created(), event.created()), event.id());
                } else {
                    settledSoFar = false;
                }
            }
            moveTo(to);
        }

        private void moveTo(Position to) {
            if (!cursor.move(EventCursor.STRIPE_EVENTS, holder, to, limits.lease())) {
                throw new LeaseLost();
            }
            position = to;
        }
    }
}

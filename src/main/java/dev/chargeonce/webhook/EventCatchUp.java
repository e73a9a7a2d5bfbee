package dev.chargeonce.webhook;

import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.stripe.StripeGateway;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.runtime.StartupEvent;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.time.Duration;
import java.time.Instant;
import org.jboss.logging.Logger;

/**
 * Nothing lost while the endpoint was down: lists Stripe's events of every type an operation follows (charges'
 * PaymentIntents, refunds) since shortly before the newest one
 * recorded (the Events API keeps 30 days) and feeds every one it has not recorded through the same inbox, where
 * it is deduplicated and applied like a delivery. Runs on every instance; two passes at once are harmless (the inbox
 * records an event once), they only list the same pages. Also keeps the inbox to its retention.
 */
@ApplicationScoped
public class EventCatchUp {

    private static final Logger LOG = Logger.getLogger(EventCatchUp.class);
    /** Stripe redelivers an event for up to 3 days: the inbox must remember it at least that long. */
    static final Duration STRIPE_REDELIVERY_WINDOW = Duration.ofDays(3);
    private static final int MAX_PAGES_PER_PASS = 200;

    private final StripeEventInbox inbox;
    private final StripeGateway stripe;
    private final WebhookConfig config;
    private final Counter caughtUp;
    private final java.util.List<String> followedTypes;

    EventCatchUp(StripeEventInbox inbox, StripeGateway stripe, WebhookConfig config, MeterRegistry metrics,
                 OperationDriver driver) {
        this.inbox = inbox;
        this.stripe = stripe;
        this.config = config;
        this.followedTypes = java.util.Arrays.stream(Operation.values())
                .flatMap(op -> driver.side(op).eventTypes().stream()).distinct().toList();
        this.caughtUp = metrics.counter("chargeonce.webhooks.caught.up");
    }

    void validateAtStartup(@Observes StartupEvent event) {
        if (config.retention().compareTo(STRIPE_REDELIVERY_WINDOW.plusDays(1)) < 0) {
            throw new IllegalStateException("chargeonce.webhooks.retention=" + config.retention() + " is shorter than Stripe's"
                    + " 3-day redelivery window plus a day: a redelivered event could be applied a second time");
        }
    }

    @Scheduled(identity = "event-catch-up", every = "${chargeonce.webhooks.catch-up-interval:5m}", delayed = "30s",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void pass() {
        if (!config.catchUpEnabled()) {
            return;
        }
        try {
            catchUpOnce();
            int deleted;
            do {
                deleted = inbox.deleteOlderThan(config.retention(), 500);
            } while (deleted == 500);
        } catch (DatabaseUnavailableException | StripeGateway.LookupFailedException e) {
            LOG.warnf("event catch-up skipped: %s", e.getMessage());
        }
    }

    /** One pass; returns how many events it fed to the inbox that the inbox had not recorded. */
    public int catchUpOnce() {
        Instant since = inbox.newestRecorded().map(newest -> newest.minus(config.catchUpOverlap()))
                .orElseGet(() -> Instant.now().minus(config.catchUpFirstWindow()));
        int fed = 0;
        String after = null;
        for (int page = 0; page < MAX_PAGES_PER_PASS; page++) {
            StripeGateway.EventPage events = stripe.listEvents(followedTypes, since, after);
            for (int i = 0; i < events.ids().size(); i++) {
                if (!inbox.recorded(events.ids().get(i))) {
                    StripeEventInbox.Received received = inbox.receive(events.events().get(i), "catch_up");
                    if (received != StripeEventInbox.Received.DUPLICATE) {
                        fed++;
                        caughtUp.increment();
                    }
                }
            }
            if (!events.hasMore() || events.ids().isEmpty()) {
                break;
            }
            after = events.ids().get(events.ids().size() - 1);
        }
        if (fed > 0) {
            LOG.warnf("event catch-up: %d event(s) Stripe had and the inbox had not (an endpoint outage?)", fed);
        }
        return fed;
    }
}

package dev.chargeonce.webhook;

import dev.chargeonce.idempotency.DatabaseUnavailableException;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code chargeonce.webhooks.unknown.events}: events naming a PaymentIntent no charge has (reconciliation looks at
 * them); {@code chargeonce.webhooks.last.received.age.seconds}: how long since Stripe's last event (a silent
 * endpoint while charges are made means a broken webhook setup; the catch-up covers it meanwhile);
 * {@code chargeonce.webhooks.catchup.lag.seconds}: how far behind now the catch-up's place is (every event Stripe made
 * before it is recorded; -1 before the first pass, or on an instance that runs no catch-up). Every event is applied in
 * the transaction that records it, so there is no backlog of unprocessed events to measure.
 */
@ApplicationScoped
public class WebhookGauges {

    private final StripeEventInbox inbox;
    private final EventCursor cursor;
    private final WebhookConfig config;
    private final AtomicLong unknown = new AtomicLong();
    private final AtomicLong lastReceivedAge = new AtomicLong(-1);
    private final AtomicLong catchUpLag = new AtomicLong(-1);

    WebhookGauges(StripeEventInbox inbox, EventCursor cursor, WebhookConfig config, MeterRegistry metrics) {
        this.inbox = inbox;
        this.cursor = cursor;
        this.config = config;
        metrics.gauge("chargeonce.webhooks.unknown.events", unknown);
        metrics.gauge("chargeonce.webhooks.last.received.age.seconds", lastReceivedAge);
        metrics.gauge("chargeonce.webhooks.catchup.lag.seconds", catchUpLag);
    }

    @Scheduled(identity = "webhook-gauges", every = "${chargeonce.gauges.interval:15s}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void refresh() {
        try {
            long[] counts = inbox.counts();
            unknown.set(counts[0]);
            lastReceivedAge.set(counts[1]);
            catchUpLag.set(config.catchUpEnabled()
                    ? cursor.lagSeconds(EventCursor.STRIPE_EVENTS).map(Math::round).orElse(-1L) : -1);
        } catch (DatabaseUnavailableException e) {
            // keep the last values
        }
    }
}

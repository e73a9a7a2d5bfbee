package dev.chargeonce.webhook;

import dev.chargeonce.idempotency.DatabaseUnavailableException;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code chargeonce.webhooks.unknown.events}: events naming a PaymentIntent no charge has (reconciliation looks at
 * them); {@code chargeonce.webhooks.last.received.age.seconds}: how long since Stripe's last event (a silent
 * endpoint while charges are made means a broken webhook setup; the catch-up covers it meanwhile). Every event is
 * applied in the transaction that records it, so there is no backlog of unprocessed events to measure.
 */
@ApplicationScoped
public class WebhookGauges {

    private final StripeEventInbox inbox;
    private final AtomicLong unknown = new AtomicLong();
    private final AtomicLong lastReceivedAge = new AtomicLong(-1);

    WebhookGauges(StripeEventInbox inbox, MeterRegistry metrics) {
        this.inbox = inbox;
        metrics.gauge("chargeonce.webhooks.unknown.events", unknown);
        metrics.gauge("chargeonce.webhooks.last.received.age.seconds", lastReceivedAge);
    }

    @Scheduled(identity = "webhook-gauges", every = "${chargeonce.gauges.interval:15s}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void refresh() {
        try {
            long[] counts = inbox.counts();
            unknown.set(counts[0]);
            lastReceivedAge.set(counts[1]);
        } catch (DatabaseUnavailableException e) {
            // keep the last values
        }
    }
}

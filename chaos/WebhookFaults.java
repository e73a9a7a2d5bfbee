package chaos;

import static chaos.Harness.sleep;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Webhook faults, switched in the stand-in's delivery (chargeonce only: the control has no webhook endpoint): bursts
 * of duplicate deliveries, deliveries delayed at random so that events overtake each other, and an outage whose
 * events are never delivered (the service's catch-up must find them in Stripe's Events API).
 */
final class WebhookFaults implements FaultSchedule.Family {

    private final Run run;
    /** The latest switch of each kind: its end switches back only if no later one of the kind came meanwhile. */
    private final Map<String, AtomicLong> webhookGenerations = new ConcurrentHashMap<>();

    WebhookFaults(Run run) {
        this.run = run;
    }

    @Override
    public Map<String, Integer> kinds() {
        Map<String, Integer> kinds = new LinkedHashMap<>();
        kinds.put("webhook_duplicates", 2);
        kinds.put("webhook_reorder", 2);
        kinds.put("webhook_outage", 2);
        return kinds;
    }

    @Override
    public boolean inject(String kind, SplittableRandom r) {
        switch (kind) {
            case "webhook_duplicates" -> webhookFault(kind, "duplicates=" + (2 + r.nextInt(4)), "duplicates=1",
                    2_000 + r.nextInt(6_001));
            case "webhook_reorder" -> webhookFault(kind, "reorder=true&delay_ms=" + (500 + r.nextInt(4_501)),
                    "reorder=false&delay_ms=0", 2_000 + r.nextInt(6_001));
            case "webhook_outage" -> webhookFault(kind, "lose=true", "lose=false", 1_000 + r.nextInt(5_001));
            default -> throw new IllegalArgumentException("unknown fault " + kind);
        }
        return true;
    }

    /**
     * Switches the stand-in's webhook delivery for {@code spanMillis}, then back (unless the same kind was switched
     * again meanwhile: the later one's span wins).
     */
    private void webhookFault(String kind, String on, String off, long spanMillis) {
        long generation = webhookGenerations.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
        if (!run.stripe.webhooks(on)) {
            return;
        }
        run.faults.note(kind, on + " for " + spanMillis + " ms");
        run.background.submit(() -> {
            sleep(spanMillis);
            if (webhookGenerations.get(kind).get() == generation) {
                run.stripe.webhooks(off);
            }
        });
    }
}

package chaos;

import static chaos.Harness.sleep;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Deals the faults of a run, one every 0.4-2.2 s until a second before its end, from a deck that holds every kind of
 * every family of faults, as many cards of a kind as its weight. Each family knows its kinds and how to inject one.
 */
final class FaultSchedule {

    /** A family of faults: its kinds and their weights (in the deck's order), and how to inject one of them. */
    interface Family {
        Map<String, Integer> kinds();

        /** Injects one fault; false when it could not be injected now (not a failure: tried again later). */
        boolean inject(String kind, SplittableRandom r);
    }

    private final Run run;
    private final List<Family> families = new ArrayList<>();
    private final Map<String, Integer> deck = new LinkedHashMap<>();
    private final Map<String, Family> familyOf = new LinkedHashMap<>();

    FaultSchedule(Run run) {
        this.run = run;
        families.add(new ProcessFaults(run));
        families.add(new DatabaseCuts(run));
        families.add(new LostCommits(run));
        families.add(new StripeFaults(run));
        if (run.variant == Variant.CHARGEONCE) {
            // Webhooks (the control has no webhook endpoint).
            families.add(new WebhookFaults(run));
        }
        for (Family family : families) {
            family.kinds().forEach((kind, weight) -> {
                deck.put(kind, weight);
                familyOf.put(kind, family);
            });
        }
    }

    /**
     * The fault kinds and their weights: cards of a deck the schedule deals from, reshuffled when it is empty.
     * One deck (31 cards, one every 0.4-2.2 s: about 40 s) holds every kind, so a run of 60 s or more deals each
     * at least once (the verdict requires it), while the weights keep crashes and database cuts the most common.
     */
    Map<String, Integer> deck() {
        return Collections.unmodifiableMap(deck);
    }

    /** Deals until a second before the run's end (the schedule's own thread). */
    void run() {
        SplittableRandom r = run.rnd();
        List<String> cards = new ArrayList<>();
        while (System.currentTimeMillis() < run.endAt - 1_000) {
            sleep(400 + r.nextInt(1_800));
            if (System.currentTimeMillis() >= run.endAt - 1_000) {
                break;
            }
            if (cards.isEmpty()) {
                deck.forEach((kind, weight) -> cards.addAll(Collections.nCopies(weight, kind)));
                for (int i = cards.size() - 1; i > 0; i--) {
                    Collections.swap(cards, i, r.nextInt(i + 1));
                }
            }
            String kind = cards.remove(cards.size() - 1);
            boolean injected;
            try {
                injected = inject(kind, r);
            } catch (RuntimeException e) {
                run.switchFailed(kind + ": " + e);
                injected = true;
            }
            if (!injected) {
                // Not possible right now (both instances down, no finished row yet): back into the deck, so that
                // the kind still comes up in this run.
                cards.add(r.nextInt(cards.size() + 1), kind);
            }
        }
    }

    private boolean inject(String kind, SplittableRandom r) {
        Family family = familyOf.get(kind);
        if (family == null) {
            throw new IllegalArgumentException("unknown fault " + kind);
        }
        return family.inject(kind, r);
    }
}

package chaos;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/** The fault schedule's log: what was done, when. */
final class FaultLog {
    /** The kinds of fault of this target's deck (FaultSchedule.deck) and their weights. */
    final Map<String, Integer> deck;
    final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
    final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
    /** The start of the chaos: every time in the fault log and the evidence is relative to it. */
    volatile long t0 = System.currentTimeMillis();

    FaultLog(Map<String, Integer> deck) {
        this.deck = deck;
    }

    void note(String kind, String detail) {
        counts.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
        String line = String.format(Locale.ROOT, "%7.2fs %s %s", (System.currentTimeMillis() - t0) / 1000.0, kind, detail);
        events.add(line);
    }

    /** Something a fault led to that is worth reporting but is not a fault itself (counted apart). */
    void finding(String kind, String detail) {
        count(kind, 1);
        events.add(String.format(Locale.ROOT, "%7.2fs (finding) %s %s", (System.currentTimeMillis() - t0) / 1000.0,
                kind, detail));
    }

    /** A line in the log that is neither a fault nor a finding (an instance ready again, ...). */
    void event(String detail) {
        events.add(String.format(Locale.ROOT, "%7.2fs (event) %s", (System.currentTimeMillis() - t0) / 1000.0, detail));
    }

    void count(String what, int n) {
        counts.computeIfAbsent(what, k -> new AtomicInteger()).addAndGet(n);
    }

    int of(String kind) {
        AtomicInteger n = counts.get(kind);
        return n == null ? 0 : n.get();
    }

    /** Faults injected, of every kind of the deck. */
    int total() {
        return deck.keySet().stream().mapToInt(this::of).sum();
    }

    List<String> kindsMissing() {
        return deck.keySet().stream().filter(k -> of(k) == 0).toList();
    }
}

package chaos;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** Counts of every answer clients got, by status (-1: connection failed or timed out). */
final class Tally {
    final Map<Integer, AtomicLong> byStatus = new ConcurrentHashMap<>();
    final AtomicLong requests = new AtomicLong();

    void count(Answer a) {
        requests.incrementAndGet();
        byStatus.computeIfAbsent(a.status(), s -> new AtomicLong()).incrementAndGet();
    }

    long of(int status) {
        AtomicLong n = byStatus.get(status);
        return n == null ? 0 : n.get();
    }

    long other() {
        long known = of(201) + of(402) + of(409) + of(422) + of(503) + of(-1);
        return requests.get() - known;
    }
}

package dev.chargeonce.ratebudget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The slots one instance holds: when one may be used, and when the next batch is booked before the pool runs dry. */
class LocalSlotsTest {

    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long TOLERANCE = 100 * MS;

    @Test
    void aSlotIsGoodFromItsTimeUntilTheToleranceAfterAndNotLater() {
        LocalSlots pool = new LocalSlots(250 * MS);
        long t = 1_000_000 * MS;
        pool.add(t, 10 * MS, 2);
        assertNull(pool.take(t - 20 * MS, TOLERANCE, t - 15 * MS), "not before its time, for a request that cannot wait");
        assertEquals(t, pool.take(t + 50 * MS, TOLERANCE, t + 50 * MS), "due: taken at once");
        assertNull(pool.take(t + 10 * MS + TOLERANCE + 1, TOLERANCE, Long.MAX_VALUE), "past its tolerance: dropped");
    }

    @Test
    void farFromTheRateTheNextBatchIsBookedBeforeTheSlotsLeftAreDropped() {
        LocalSlots pool = new LocalSlots(250 * MS);
        long t = 1_000_000 * MS;
        // Far from the rate a batch's slots are packed (10 µs apart at 100,000 a second) and all dropped together.
        pool.add(t, 10_000, 40);
        assertFalse(pool.runningOut(t + 10 * MS, TOLERANCE, 40), "40 slots good for another 90 ms");
        assertTrue(pool.runningOut(t + 80 * MS, TOLERANCE, 40), "all 40 dropped within 20 ms: book the next batch now");
    }

    @Test
    void nearTheRateTheNextBatchIsBookedWhenHalfOfOneIsLeft() {
        LocalSlots pool = new LocalSlots(250 * MS);
        long t = 1_000_000 * MS;
        // At the rate a batch's slots are spread over the batch period (20 a second: 50 ms apart).
        pool.add(t, 50 * MS, 5);
        assertFalse(pool.runningOut(t, TOLERANCE, 5));
        pool.take(t, TOLERANCE, t);
        pool.take(t + 50 * MS, TOLERANCE, t + 50 * MS);
        assertFalse(pool.runningOut(t + 50 * MS, TOLERANCE, 5), "3 of 5 left");
        pool.take(t + 100 * MS, TOLERANCE, t + 100 * MS);
        assertTrue(pool.runningOut(t + 100 * MS, TOLERANCE, 5), "2 of 5 left");
    }
}

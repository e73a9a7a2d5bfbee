package dev.chargeonce.ratebudget;

import java.util.ArrayDeque;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The permits this instance has booked from one schedule and not used yet: slots in {@link System#nanoTime()}, in
 * order. A slot is good from its time until {@code tolerance} after it; one nobody took by then is dropped (the
 * schedule moved past it, so using it later would be a burst Stripe did not allow for).
 *
 * <p>One booking statement at a time per schedule ({@link #booking}): the requests that find no slot wait for the
 * one booking for them all, whose size is how many are waiting, or the demand of the last period when that is more.
 */
final class LocalSlots {

    final ReentrantLock booking = new ReentrantLock();
    /** A booking ahead is under way (at most one at a time). */
    private final java.util.concurrent.atomic.AtomicBoolean refilling = new java.util.concurrent.atomic.AtomicBoolean();

    /** The last booking found the schedule booked ahead (its requests wait in line): nothing is free now. */
    private volatile boolean inLine;

    private final ArrayDeque<Long> slots = new ArrayDeque<>();
    private final long periodNanos;
    private int waiting;
    private long periodStart = System.nanoTime();
    private int takenThisPeriod;
    private int takenLastPeriod;

    LocalSlots(long periodNanos) {
        this.periodNanos = periodNanos;
    }

    synchronized void enter() {
        waiting++;
    }

    synchronized void leave() {
        waiting--;
    }

    /**
     * The earliest slot still good: one due already (whatever the request's deadline: using it waits for nothing),
     * or one to come no later than {@code latest}; null when there is none.
     */
    synchronized Long take(long now, long toleranceNanos, long latest) {
        while (!slots.isEmpty() && slots.peekFirst() + toleranceNanos < now) {
            slots.pollFirst();
        }
        Long first = slots.peekFirst();
        if (first == null || (first - now > 0 && first - latest > 0)) {
            return null;
        }
        slots.pollFirst();
        countTaken(now);
        takenThisPeriod++;
        return first;
    }

    /** Slots of a booking: {@code count} of them from {@code first}, {@code interval} apart. */
    synchronized void add(long first, long intervalNanos, int count) {
        for (int i = 0; i < count; i++) {
            slots.addLast(first + i * intervalNanos);
        }
    }

    /** How many permits to book at once: those waiting, or the last period's demand, at most {@code max}. */
    synchronized int batchSize(int max) {
        countTaken(System.nanoTime());
        return Math.max(1, Math.min(max, Math.max(waiting, takenLastPeriod)));
    }

    /**
     * True when the next batch should be booked now, before a request finds the pool empty: at most half a batch is
     * left, or what is left is about to be dropped (far from the rate, a batch's slots lie within a few microseconds
     * of each other and are all dropped at once, a tolerance after their booking).
     */
    synchronized boolean runningOut(long now, long toleranceNanos, int batch) {
        while (!slots.isEmpty() && slots.peekFirst() + toleranceNanos < now) {
            slots.pollFirst();
        }
        return slots.size() * 2 <= batch || slots.peekLast() + toleranceNanos - now < toleranceNanos / 4;
    }

    void inLine(boolean inLine) {
        this.inLine = inLine;
    }

    boolean inLine() {
        return inLine;
    }

    /** True for the one caller that may book ahead now. */
    boolean startRefill() {
        return refilling.compareAndSet(false, true);
    }

    void refillDone() {
        refilling.set(false);
    }

    private void countTaken(long now) {
        if (now - periodStart >= periodNanos) {
            takenLastPeriod = now - periodStart >= 2 * periodNanos ? 0 : takenThisPeriod;
            takenThisPeriod = 0;
            periodStart = now;
        }
    }
}

package dev.chargeonce.ratebudget;

import java.util.function.Supplier;

/**
 * Who a Stripe request is for, in the order the budget serves them. Each class owns a share of every endpoint's
 * rate (its floor: background work never starves) and borrows, without waiting, what the others leave idle; only
 * {@link #FOREGROUND} waits in line for its own share (a client is waiting for it).
 *
 * <p>The class of the running code is set by the worker that runs it ({@link #run}, {@link #call}); a client's request needs
 * nothing: {@link #FOREGROUND} is what runs outside any worker.
 */
public enum TrafficClass {
    /** New charges and refunds, and what a client's request does to finish its own row. */
    FOREGROUND("foreground"),
    /** Payment sync and the recovery of outcomes not known (the recovery worker); a webhook's reads. */
    RECOVERY("recovery"),
    /** Reconciliation and the events' catch-up. */
    UPKEEP("upkeep");

    private static final ThreadLocal<TrafficClass> CURRENT = new ThreadLocal<>();

    private final String id;

    TrafficClass(String id) {
        this.id = id;
    }

    public String id() {
        return id;
    }

    /** The class of the code running on this thread: {@link #FOREGROUND} unless a worker said otherwise. */
    public static TrafficClass current() {
        TrafficClass set = CURRENT.get();
        return set == null ? FOREGROUND : set;
    }

    /** Runs {@code work} as this class's traffic (its Stripe requests take this class's permits). */
    public <T> T call(Supplier<T> work) {
        TrafficClass before = CURRENT.get();
        CURRENT.set(this);
        try {
            return work.get();
        } finally {
            if (before == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(before);
            }
        }
    }

    /** As {@link #call(Supplier)}, for work without a result. */
    public void run(Runnable work) {
        call(() -> {
            work.run();
            return null;
        });
    }

    static TrafficClass byId(String id) {
        for (TrafficClass c : values()) {
            if (c.id.equals(id)) {
                return c;
            }
        }
        return null;
    }
}

package dev.chargeonce.web;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * At most {@code chargeonce.admission.claims-at-once} requests on their way to their claim at once; the others wait in
 * a queue, first come first served, without a thread.
 *
 * <p>Why: with a slow Stripe and thousands of requests in flight, all but a few hundred of them waited for a database
 * connection, each on a virtual thread of its own, parked in the pool with a timer. Their stacks live on the heap and
 * the longest-waiting ones were promoted: at 2,000 in flight a fifth of the service's CPU went to the collector, and
 * more to the pool's waiters and timers (README, "The cost of exactly-once"). A queued request is a few objects; its
 * virtual thread starts when a place is free.
 *
 * <p>A place is held from the start of the work until its claim is made ({@link #claimMade()}, called by the
 * operation's driver once the claim has committed), never across the Stripe call: a slow Stripe adds requests waiting
 * for Stripe, not requests waiting here. Work that makes no claim (a webhook, a refusal, a replay found by a peek)
 * holds its place to its end.
 *
 * <p>A request refused here (the queue full, or a wait longer than {@code chargeonce.admission.queue-wait}) claimed
 * nothing and sent nothing: 503 {@code overloaded}, to be retried with the same key.
 */
@Singleton
public class ClaimQueue {

    /** The place the current thread holds, if any: a turn's virtual thread, until its claim is made. */
    private static final ThreadLocal<ClaimQueue> PLACE = new ThreadLocal<>();

    private final int atOnce;
    private final int capacity;
    private final long maxWaitNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Turn<?>> queue = new ArrayDeque<>();
    private int free;
    private final Counter refusedFull;
    private final Counter refusedWait;

    ClaimQueue(@ConfigProperty(name = "chargeonce.admission.claims-at-once", defaultValue = "64") int atOnce,
               @ConfigProperty(name = "chargeonce.admission.queue-size", defaultValue = "10000") int capacity,
               @ConfigProperty(name = "chargeonce.admission.queue-wait", defaultValue = "5s") Duration maxWait,
               MeterRegistry registry) {
        if (atOnce < 1 || capacity < 0 || maxWait.isNegative() || maxWait.isZero()) {
            throw new IllegalArgumentException("chargeonce.admission: claims-at-once must be at least 1 (is " + atOnce
                    + "), queue-size at least 0 (is " + capacity + "), queue-wait positive (is " + maxWait + ")");
        }
        this.atOnce = atOnce;
        this.capacity = capacity;
        this.maxWaitNanos = maxWait.toNanos();
        this.free = atOnce;
        registry.gauge("chargeonce.admission.queued", this, ClaimQueue::queued);
        this.refusedFull = registry.counter("chargeonce.admission.refused", "reason", "queue_full");
        this.refusedWait = registry.counter("chargeonce.admission.refused", "reason", "waited_too_long");
    }

    /**
     * Frees the place the current thread holds, if it holds one: its claim is made (or none will be), and the next
     * request in the queue starts. Idempotent, and a no-op on a thread that holds no place (a Kafka consumer, a worker).
     */
    public static void claimMade() {
        ClaimQueue queue = PLACE.get();
        if (queue != null) {
            PLACE.remove();
            queue.passOn();
        }
    }

    /**
     * {@code work} on one of {@code threads} as soon as a place is free: now, or when an earlier request has made its
     * claim. Its answer, or a 503 {@code overloaded} when the queue is full or the wait was too long.
     */
    public <T> CompletableFuture<T> submit(Supplier<T> work, Executor threads) {
        CompletableFuture<T> answer = new CompletableFuture<>();
        Turn<T> turn = new Turn<>(work, answer, threads, Vertx.currentContext(), System.nanoTime());
        boolean now = false;
        boolean full = false;
        lock.lock();
        try {
            if (free > 0) {
                free--;
                now = true;
            } else if (queue.size() < capacity) {
                queue.addLast(turn);
            } else {
                full = true;
            }
        } finally {
            lock.unlock();
        }
        if (now) {
            // On the caller's thread (the event loop): a context-preserving executor takes the request's context here.
            turn.start(threads);
        } else if (full) {
            refusedFull.increment();
            answer.completeExceptionally(overloaded());
        }
        return answer;
    }

    /** Requests waiting for a place now. */
    public int queued() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }

    int atOnce() {
        return atOnce;
    }

    /** A place came free: to the oldest request that has not waited too long, or back to the free ones. */
    private void passOn() {
        while (true) {
            Turn<?> next;
            lock.lock();
            try {
                next = queue.pollFirst();
                if (next == null) {
                    free++;
                    return;
                }
            } finally {
                lock.unlock();
            }
            if (System.nanoTime() - next.queuedAt <= maxWaitNanos) {
                next.startQueued();
                return;
            }
            refusedWait.increment();
            next.answer.completeExceptionally(overloaded());
        }
    }

    private static ApiException overloaded() {
        return ApiException.unavailable("overloaded", "This instance has more requests waiting than it admits and took"
                + " no claim: nothing was done with this request. Retry it with the same Idempotency-Key.", Duration.ofSeconds(1));
    }

    private final class Turn<T> {
        final Supplier<T> work;
        final CompletableFuture<T> answer;
        final Executor threads;
        final Context context;
        final long queuedAt;

        Turn(Supplier<T> work, CompletableFuture<T> answer, Executor threads, Context context, long queuedAt) {
            this.work = work;
            this.answer = answer;
            this.threads = threads;
            this.context = context;
            this.queuedAt = queuedAt;
        }

        /**
         * Started by the thread that freed a place, another request's: the executor must take this request's context,
         * not that one's, so the start goes through this request's context first (one task on its event loop).
         */
        void startQueued() {
            if (context == null) {
                start(threads);
                return;
            }
            try {
                context.runOnContext(ignored -> start(threads));
            } catch (RuntimeException e) {
                giveUp(e);
            }
        }

        void start(Executor executor) {
            try {
                executor.execute(this::run);
            } catch (RuntimeException e) {
                giveUp(e); // the executor is shut down: the place must not be lost with the task
            }
        }

        private void giveUp(RuntimeException e) {
            passOn();
            answer.completeExceptionally(e);
        }

        private void run() {
            PLACE.set(ClaimQueue.this);
            T result;
            try {
                result = work.get();
            } catch (Throwable t) {
                claimMade();
                answer.completeExceptionally(t);
                return;
            }
            claimMade(); // before the answer is written: completing may run the response's writing on this thread
            answer.complete(result);
        }
    }
}

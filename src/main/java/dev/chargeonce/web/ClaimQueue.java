package dev.chargeonce.web;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

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
 * nothing and sent nothing: 503 {@code overloaded}, to be retried with the same key. The wait is bounded even when no
 * place comes free (every holder stuck behind a frozen database): one sweeper thread answers the requests at the head
 * of the queue that waited too long.
 *
 * <p>Nothing here decides whether a charge happens once: that is the claim's unique row. This class only decides
 * when a request gets to make its claim, and a request it refuses never ran.
 */
@Singleton
public class ClaimQueue {

    private static final Logger LOG = Logger.getLogger(ClaimQueue.class);

    /** The place the current thread holds, if any: a turn's virtual thread, until its claim is made. */
    private static final ThreadLocal<ClaimQueue> PLACE = new ThreadLocal<>();

    private final int capacity;
    private final long maxWaitNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Turn<?>> queue = new ArrayDeque<>();
    private int free;
    private final Counter refusedFull;
    private final Counter refusedWait;
    private final Thread sweeper; // null: none (tests)
    private volatile boolean stopped;

    @Inject
    ClaimQueue(@ConfigProperty(name = "chargeonce.admission.claims-at-once", defaultValue = "32") int atOnce,
               @ConfigProperty(name = "chargeonce.admission.queue-size", defaultValue = "10000") int capacity,
               @ConfigProperty(name = "chargeonce.admission.queue-wait", defaultValue = "5s") Duration maxWait,
               MeterRegistry registry) {
        // A look every fifth of the longest wait (10-100 ms): a request is refused at most that much past its wait.
        this(atOnce, capacity, maxWait, registry,
                Math.max(TimeUnit.MILLISECONDS.toNanos(10), Math.min(TimeUnit.MILLISECONDS.toNanos(100), maxWait.toNanos() / 5)));
    }

    /** {@code sweepEveryNanos} 0: no sweeper (a test of what happens without it). */
    ClaimQueue(int atOnce, int capacity, Duration maxWait, MeterRegistry registry, long sweepEveryNanos) {
        if (atOnce < 1 || capacity < 0 || maxWait.isNegative() || maxWait.isZero()) {
            throw new IllegalArgumentException("chargeonce.admission: claims-at-once must be at least 1 (is " + atOnce
                    + "), queue-size at least 0 (is " + capacity + "), queue-wait positive (is " + maxWait + ")");
        }
        this.capacity = capacity;
        this.maxWaitNanos = maxWait.toNanos();
        this.free = atOnce;
        registry.gauge("chargeonce.admission.queued", this, ClaimQueue::queued);
        this.refusedFull = registry.counter("chargeonce.admission.refused", "reason", "queue_full");
        this.refusedWait = registry.counter("chargeonce.admission.refused", "reason", "waited_too_long");
        if (sweepEveryNanos > 0) {
            // No context class loader: the thread must not keep an application's class loader alive after it stops.
            sweeper = Thread.ofPlatform().daemon().name("chargeonce-claim-queue-sweeper").unstarted(() -> sweepEvery(sweepEveryNanos));
            sweeper.setContextClassLoader(null);
            sweeper.start();
        } else {
            sweeper = null;
        }
    }

    /** Stops the sweeper (the application shuts down) and answers what still waits: 503, nothing claimed. */
    @PreDestroy
    void stop() {
        stopped = true;
        if (sweeper != null) {
            LockSupport.unpark(sweeper);
        }
        List<Turn<?>> left;
        lock.lock();
        try {
            left = new ArrayList<>(queue);
            queue.clear();
        } finally {
            lock.unlock();
        }
        left.forEach(turn -> turn.answer.completeExceptionally(new Overloaded()));
    }

    /**
     * Frees the place the current thread holds, if it holds one: its claim is made (or none will be), and the next
     * request in the queue starts. Idempotent, and a no-op on a thread that holds no place (a Kafka consumer, a worker).
     * Never throws: it runs right after a claim committed, whose charge must go on whatever happens here.
     */
    public static void claimMade() {
        ClaimQueue queue = PLACE.get();
        if (queue != null) {
            PLACE.remove();
            try {
                queue.passOn();
            } catch (Throwable e) {
                LOG.error("a place before the claim could not be passed on", e);
            }
        }
    }

    /**
     * {@code work} on one of {@code threads} as soon as a place is free: now, or when an earlier request has made its
     * claim. Its answer, or a 503 {@code overloaded} when the queue is full or the wait was too long.
     */
    public <T> CompletableFuture<T> submit(Supplier<T> work, Executor threads) {
        CompletableFuture<T> answer = new CompletableFuture<>();
        Context context = Vertx.currentContext();
        Turn<T> turn;
        boolean now = false;
        boolean full = false;
        lock.lock();
        try {
            // Timed under the lock: the queue stays in order of its turns' times, which the sweeper relies on.
            turn = new Turn<>(work, answer, threads, context, System.nanoTime());
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
            boolean started = false;
            try {
                started = turn.start();
            } finally {
                if (!started) {
                    passOn();
                }
            }
        } else if (full) {
            refusedFull.increment();
            answer.completeExceptionally(new Overloaded());
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

    /** Places free now (for tests: all of them once nothing runs). */
    int freePlaces() {
        lock.lock();
        try {
            return free;
        } finally {
            lock.unlock();
        }
    }

    /**
     * A place came free: to the oldest request that has not waited too long and could be started, or back to the free
     * ones. A loop, not a recursion: a queue of thousands that cannot be started (the executor shut down) is answered
     * turn after turn. (A turn handed to an event loop that has closed is dropped by Vert.x without a word: that is the
     * end of shutdown, whose connections close with it, and its client retries the same key elsewhere.)
     */
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
            if (System.nanoTime() - next.queuedAt > maxWaitNanos) {
                refuseWaitedTooLong(next);
            } else if (next.startQueued()) {
                return;
            }
        }
    }

    private void sweepEvery(long nanos) {
        while (!stopped) {
            LockSupport.parkNanos(nanos);
            try {
                sweep();
            } catch (Throwable e) {
                // a sweep that fails must not end the sweeper: waits would be bounded only by a place coming free
                LOG.error("the claim queue's sweep failed; sweeping again", e);
            }
        }
    }

    /** Answers the requests at the head of the queue that waited too long (the queue is in order of arrival). */
    void sweep() {
        List<Turn<?>> expired = new ArrayList<>();
        long now = System.nanoTime();
        lock.lock();
        try {
            while (!queue.isEmpty() && now - queue.peekFirst().queuedAt > maxWaitNanos) {
                expired.add(queue.pollFirst());
            }
        } finally {
            lock.unlock();
        }
        expired.forEach(this::refuseWaitedTooLong);
    }

    private void refuseWaitedTooLong(Turn<?> turn) {
        refusedWait.increment();
        turn.answer.completeExceptionally(new Overloaded());
    }

    /** 503 overloaded. Without a stack trace: it is an answer, made in numbers exactly when the service is busiest. */
    private static final class Overloaded extends ApiException {
        Overloaded() {
            super(503, "api_error", "overloaded", "This instance has more requests waiting than it admits and took no"
                    + " claim: nothing was done with this request. Retry it with the same Idempotency-Key.", null, Duration.ofSeconds(1));
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;
        }
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
         * Started by the thread that freed a place, another request's. The executor must take this request's context,
         * not that one's: the start goes through this request's context first (one task on its event loop). Without a
         * context (a caller outside Vert.x) there is none to carry, and a plain virtual thread runs it. False when it
         * could not be started (answered 503, the place not taken).
         */
        boolean startQueued() {
            if (context == null) {
                try {
                    Thread.ofVirtual().start(this::run);
                    return true;
                } catch (Throwable e) {
                    return refuse(e);
                }
            }
            try {
                context.runOnContext(ignored -> {
                    if (!start()) {
                        passOn();
                    }
                });
                return true;
            } catch (Throwable e) {
                return refuse(e);
            }
        }

        /** Runs the work on the executor; false when it refused (answered 503, the place to be passed on). */
        boolean start() {
            try {
                threads.execute(this::run);
                return true;
            } catch (Throwable e) {
                return refuse(e);
            }
        }

        private boolean refuse(Throwable e) {
            LOG.debugf(e, "a request could not be started (shutting down?)");
            answer.completeExceptionally(new Overloaded());
            return false;
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
            claimMade(); // the answer's writing does not need the place
            answer.complete(result);
        }
    }
}

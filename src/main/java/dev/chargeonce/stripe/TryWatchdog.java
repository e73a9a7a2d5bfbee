package dev.chargeonce.stripe;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jboss.logging.Logger;

/**
 * Bounds each try of a Stripe call (the whole try: connecting, sending, every read) with one watchdog thread, instead
 * of a timer task per call.
 *
 * <p>Why: Fault Tolerance's {@code @Timeout} did the same by scheduling a task on its timer thread for every call and
 * cancelling it when the call returned; measured with it switched off, a new charge cost the service 14% less CPU
 * (README, "The cost of exactly-once"). Here a try registers itself in a set and leaves it when it ends; a daemon
 * thread looks at the set every {@link #LOOK_MILLIS} ms and interrupts the thread of a try older than its limit. A
 * virtual thread interrupted in a socket read or write has that socket closed and the I/O fails, so the try ends as
 * it did under {@code @Timeout} (which interrupts the thread as well), and {@link StripeApi} reports it as the same
 * {@link org.eclipse.microprofile.faulttolerance.exceptions.TimeoutException}: retried, and counted by the circuit
 * breaker.
 *
 * <p>An interrupt never outlives its try: the watchdog interrupts only under the watch's lock while the try is
 * running, and a try that ends after being interrupted clears its thread's interrupt under the same lock, so nothing
 * the thread does next (a database statement) sees it.
 */
final class TryWatchdog {

    /** How often the watchdog looks: a try ends at most this much later than its limit. */
    static final long LOOK_MILLIS = 50;

    private static final Logger LOG = Logger.getLogger(TryWatchdog.class);

    private final Set<Watch> running = ConcurrentHashMap.newKeySet();
    private final Thread thread;
    private volatile boolean stopped;

    TryWatchdog() {
        // No context class loader: the thread must not keep an application's class loader alive after it stops.
        thread = Thread.ofPlatform().daemon().name("chargeonce-stripe-try-watchdog").unstarted(this::watch);
        thread.setContextClassLoader(null);
        thread.start();
    }

    /**
     * Stops the watchdog (the application shuts down) and ends the tries still running, as if their limit had come: a
     * try on a virtual thread has no socket read timeout of its own ({@link StripeClients#forWatchedTry}), so nothing
     * else would bound it. Ended, its outcome is unknown, and its row's next holder looks the payment up. A try that
     * starts after this is ended at once.
     */
    void stop() {
        stopped = true;
        LockSupport.unpark(thread);
        running.forEach(Watch::expire);
    }

    /** Starts watching the current thread's try; close the watch when the try ends (try-with-resources). */
    Watch start(long limitNanos) {
        Watch watch = new Watch(Thread.currentThread(), System.nanoTime() + limitNanos);
        running.add(watch);
        // Read after the add: a stop() that this read does not see has not yet looked at the running tries, and will
        // find this one (stop writes the flag before it looks).
        if (stopped) {
            watch.expire();
        }
        return watch;
    }

    /** Tries being watched now (for tests). */
    int running() {
        return running.size();
    }

    private void watch() {
        while (!stopped) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(LOOK_MILLIS));
            try {
                long now = System.nanoTime();
                for (Watch watch : running) {
                    if (now - watch.deadline >= 0) {
                        watch.expire();
                    }
                }
            } catch (Throwable e) {
                // a look that fails must not end the watchdog: every later try would be unbounded
                LOG.error("the Stripe try watchdog's look failed; looking again", e);
            }
        }
    }

    /** One try of one thread. */
    final class Watch implements AutoCloseable {
        private static final int RUNNING = 0;
        private static final int EXPIRED = 1;
        private static final int ENDED = 2;

        private final Thread thread;
        private final long deadline;
        private int state = RUNNING;

        private Watch(Thread thread, long deadline) {
            this.thread = thread;
            this.deadline = deadline;
        }

        private synchronized void expire() {
            if (state == RUNNING) {
                state = EXPIRED;
                thread.interrupt();
            }
        }

        /** Whether the watchdog ended this try (its thread was interrupted for it). */
        synchronized boolean expired() {
            return state == EXPIRED;
        }

        /**
         * Ends the watch, on the watched thread: an interrupt the watchdog gave this try is cleared (and the watch
         * still says it expired). An interrupt from elsewhere that arrived during an expired try is cleared with it,
         * as Fault Tolerance's timeout did: the try has ended as a timeout either way.
         */
        @Override
        public void close() {
            running.remove(this); // outside the lock: the set's own locks never nest in the watch's
            synchronized (this) {
                if (state == EXPIRED) {
                    Thread.interrupted();
                } else {
                    state = ENDED;
                }
            }
        }
    }
}

package dev.chargeonce.web;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The queue before the claim: at most so many requests between their start and their claim, the others waiting
 * without a thread; a place passes on when a claim is made (not when the Stripe call after it ends), when the work
 * ends without a claim and when it fails; a request refused here never runs its work.
 */
class ClaimQueueTest {

    private static final long PATIENCE_SECONDS = 30; // a busy machine is slow; nothing here waits this long when it passes
    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final List<ClaimQueue> queues = new ArrayList<>();

    @AfterEach
    void stop() {
        threads.shutdownNow();
        queues.forEach(ClaimQueue::stop);
    }

    private ClaimQueue queue(int atOnce, int capacity, Duration maxWait) {
        ClaimQueue queue = new ClaimQueue(atOnce, capacity, maxWait, registry);
        queues.add(queue);
        return queue;
    }

    @Test
    void aRequestBeyondThePlacesWaitsWithoutAThreadAndStartsOnceAClaimIsMade() throws Exception {
        ClaimQueue queue = queue(1, 10, Duration.ofMinutes(1));
        CountDownLatch claimNow = new CountDownLatch(1);
        CountDownLatch stripeAnswers = new CountDownLatch(1);
        CompletableFuture<String> first = queue.submit(() -> {
            await(claimNow);
            ClaimQueue.claimMade();
            await(stripeAnswers); // the slow Stripe call: it holds no place
            return "first";
        }, threads);
        CountDownLatch secondStarted = new CountDownLatch(1);
        CompletableFuture<String> second = queue.submit(() -> {
            secondStarted.countDown();
            return "second";
        }, threads);

        assertFalse(secondStarted.await(300, TimeUnit.MILLISECONDS), "the second started while the only place was held");
        assertEquals(1, queue.queued());
        assertEquals(1.0, registry.get("chargeonce.admission.queued").gauge().value());

        claimNow.countDown();
        assertEquals("second", second.get(PATIENCE_SECONDS, TimeUnit.SECONDS), "the first's claim freed the place");
        assertFalse(first.isDone(), "the first is still in its Stripe call");
        stripeAnswers.countDown();
        assertEquals("first", first.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertEquals(0, queue.queued());
        assertEquals(1, queue.freePlaces());
    }

    @Test
    void aFullQueueIsRefusedAtOnceAndItsWorkNeverRuns() throws Exception {
        ClaimQueue queue = queue(1, 1, Duration.ofMinutes(1));
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<String> holder = holdUntil(queue, release);
        CompletableFuture<String> queued = queue.submit(() -> "queued", threads);
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<String> refused = marking(queue, ran, "refused");

        assertTrue(refused.isDone(), "a full queue answers at once");
        assertOverloaded(refused);
        assertEquals(1.0, registry.get("chargeonce.admission.refused").tag("reason", "queue_full").counter().count());
        release.countDown();
        assertEquals("holder", holder.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertEquals("queued", queued.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertFalse(ran.get(), "a refused request ran its work");
    }

    /** Without the sweeper: the place that comes free finds the request expired, refuses it and is not lost. */
    @Test
    void aRequestThatWaitedTooLongIsRefusedItsWorkNeverRunsAndThePlaceIsNotLost() throws Exception {
        ClaimQueue queue = new ClaimQueue(1, 10, Duration.ofMillis(100), registry, 0);
        queues.add(queue);
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<String> holder = holdUntil(queue, release);
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<String> late = marking(queue, ran, "late");
        Thread.sleep(300);
        release.countDown();

        assertEquals("holder", holder.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertOverloaded(late);
        assertFalse(ran.get(), "a request refused for its wait ran its work");
        assertEquals(1.0, registry.get("chargeonce.admission.refused").tag("reason", "waited_too_long").counter().count());
        assertEquals("next", queue.submit(() -> "next", threads).get(PATIENCE_SECONDS, TimeUnit.SECONDS),
                "the place came back after the refusal");
        assertEquals(1, queue.freePlaces());
    }

    @Test
    void whatStillWaitsAtShutdownIsAnsweredAndNeverRuns() throws Exception {
        ClaimQueue queue = queue(1, 10, Duration.ofMinutes(1));
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<String> holder = holdUntil(queue, release);
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<String> waiting = marking(queue, ran, "waiting");
        queue.stop();
        assertOverloaded(waiting);
        release.countDown();
        assertEquals("holder", holder.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertFalse(ran.get());
    }

    @Test
    void aPlaceIsFreedWhenTheWorkFailsOrEndsWithoutAClaim() throws Exception {
        ClaimQueue queue = queue(1, 10, Duration.ofMinutes(1));
        CompletableFuture<String> failing = queue.submit(() -> {
            throw new IllegalStateException("the database refused");
        }, threads);
        CompletableFuture<String> noClaim = queue.submit(() -> "a replay found by a peek", threads);
        CompletableFuture<String> after = queue.submit(() -> "after", threads);

        ExecutionException failed = assertThrows(ExecutionException.class, () -> failing.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, failed.getCause(), "the work's own failure, unwrapped, for the mappers");
        assertEquals("a replay found by a peek", noClaim.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertEquals("after", after.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertEquals(0, queue.queued());
        assertEquals(1, queue.freePlaces());
    }

    @Test
    void aClaimMadeTwiceOrWithoutAPlaceFreesNothingMore() throws Exception {
        ClaimQueue.claimMade(); // a Kafka consumer's thread, a worker's: no place, nothing happens
        ClaimQueue queue = queue(1, 10, Duration.ofMinutes(1));
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<String> holder = queue.submit(() -> {
            ClaimQueue.claimMade();
            ClaimQueue.claimMade(); // a second call must not free a second place
            await(release);
            return "holder";
        }, threads);
        CountDownLatch secondInside = new CountDownLatch(1);
        CountDownLatch secondGoes = new CountDownLatch(1);
        CompletableFuture<String> second = queue.submit(() -> {
            secondInside.countDown();
            await(secondGoes);
            return "second";
        }, threads);
        assertTrue(secondInside.await(PATIENCE_SECONDS, TimeUnit.SECONDS));
        AtomicBoolean thirdRan = new AtomicBoolean();
        CompletableFuture<String> third = queue.submit(() -> {
            thirdRan.set(true);
            return "third";
        }, threads);
        Thread.sleep(300);
        assertFalse(thirdRan.get(), "a double claimMade freed a place that was never held");
        secondGoes.countDown();
        release.countDown();
        assertEquals("third", third.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertEquals("second", second.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertEquals("holder", holder.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
    }

    /**
     * Two thousand requests, eight places: never more than eight between start and claim, every request answered, and
     * the Stripe calls after the claims overlap. The first 33 requests past their claim wait for each other: with the
     * places held across the Stripe call only eight could ever be there at once, and they would wait forever.
     */
    @Test
    void underManyRequestsAtMostThePlacesAreBeforeTheirClaimAndTheStripeCallsOverlap() throws Exception {
        int places = 8;
        ClaimQueue queue = queue(places, 10_000, Duration.ofMinutes(1));
        AtomicInteger beforeClaim = new AtomicInteger();
        AtomicInteger mostBeforeClaim = new AtomicInteger();
        CountDownLatch inStripeTogether = new CountDownLatch(4 * places + 1);
        List<CompletableFuture<Integer>> answers = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            int n = i;
            answers.add(queue.submit(() -> {
                mostBeforeClaim.accumulateAndGet(beforeClaim.incrementAndGet(), Math::max);
                sleep(1); // the claim
                beforeClaim.decrementAndGet();
                ClaimQueue.claimMade();
                inStripeTogether.countDown();
                await(inStripeTogether); // the Stripe call: the first ones' end only once 33 are in one at once
                return n;
            }, threads));
        }
        for (int i = 0; i < answers.size(); i++) {
            assertEquals(i, answers.get(i).get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        }
        assertTrue(mostBeforeClaim.get() <= places, "before their claim at once: " + mostBeforeClaim.get());
        assertEquals(0, queue.queued());
        assertEquals(places, queue.freePlaces(), "every place came back");
    }

    @Test
    void aRequestIsRefusedAtItsWaitEvenWhenNoPlaceComesFree() throws Exception {
        ClaimQueue queue = queue(1, 10, Duration.ofMillis(100));
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<String> stuck = holdUntil(queue, release); // a holder stuck behind a frozen database
        AtomicBoolean ran = new AtomicBoolean();
        long queuedAt = System.nanoTime();
        CompletableFuture<String> waiting = marking(queue, ran, "waiting");

        assertOverloaded(waiting);
        long answeredAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - queuedAt);
        assertTrue(answeredAfter >= 100, "refused before its wait: " + answeredAfter + " ms");
        assertFalse(stuck.isDone(), "the holder is still stuck: the refusal did not wait for a place");
        assertFalse(ran.get());
        assertEquals(0, queue.queued());
        release.countDown();
        assertEquals("holder", stuck.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        assertEquals(1, queue.freePlaces());
    }

    @Test
    void aRequestThatCannotBeStartedIsRefusedAndItsPlaceIsNotLost() throws Exception {
        ClaimQueue queue = queue(2, 10, Duration.ofMinutes(1));
        Executor shutDown = task -> {
            throw new RejectedExecutionException("shutting down");
        };
        for (int i = 0; i < 5; i++) {
            assertOverloaded(queue.submit(() -> "never", shutDown));
        }
        assertEquals(2, queue.freePlaces(), "no place was lost to a refused start");
        assertEquals("after", queue.submit(() -> "after", threads).get(PATIENCE_SECONDS, TimeUnit.SECONDS));
    }

    @Test
    void aNonsensicalSettingIsRefusedAtStart() {
        assertThrows(IllegalArgumentException.class, () -> queue(0, 10, Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class, () -> queue(1, -1, Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class, () -> queue(1, 10, Duration.ZERO));
    }

    /** Work that holds its place (it makes no claim) until {@code release}; answers "holder". */
    private CompletableFuture<String> holdUntil(ClaimQueue queue, CountDownLatch release) {
        return queue.submit(() -> {
            await(release);
            return "holder";
        }, threads);
    }

    /** Work that marks {@code ran} when it runs. */
    private CompletableFuture<String> marking(ClaimQueue queue, AtomicBoolean ran, String answer) {
        return queue.submit(() -> {
            ran.set(true);
            return answer;
        }, threads);
    }

    private static void assertOverloaded(CompletableFuture<?> answer) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> answer.get(PATIENCE_SECONDS, TimeUnit.SECONDS));
        ApiException refusal = assertInstanceOf(ApiException.class, e.getCause());
        assertEquals(503, refusal.status());
        assertEquals("overloaded", refusal.code());
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(PATIENCE_SECONDS, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
            }
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}

package dev.chargeonce.web;

import io.quarkus.virtual.threads.VirtualThreads;
import jakarta.inject.Singleton;
import jakarta.ws.rs.core.Response;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.function.Supplier;

/**
 * The answer of a request that must block (the database, Stripe), worked out on a virtual thread of its own, for an
 * endpoint that returns a {@link CompletionStage} and so runs on the event loop.
 *
 * <p>Why not {@code @RunOnVirtualThread}: Quarkus REST reads the body of a blocking endpoint on the endpoint's own
 * thread, and a virtual thread waits for the event loop to hand it the bytes (a timed wait: a task scheduled and
 * cancelled on the JDK's {@code DelayScheduler}, the thread parked and woken). A non-blocking endpoint has its body read
 * on the event loop before it is called; the endpoint checks the envelope there (CPU only) and only the work that blocks
 * starts a virtual thread, from the same context-preserving executor {@code @RunOnVirtualThread} uses (the request's
 * Vert.x context, hence its log MDC). The cost-of-exactly-once profiles (docs/benchmarks.md) measure it.
 *
 * <p>Such an endpoint is {@code @Cancellable(false)}: a client that hangs up does not cancel the answer's future. Its
 * work would go on regardless (cancelling a {@link java.util.concurrent.CompletableFuture} interrupts nothing), and the request's context
 * stays until the answer is written, as it did on a {@code @RunOnVirtualThread} endpoint. A body larger than
 * {@code quarkus.rest.input-buffer-size} is read to its end on a worker thread, and the endpoint is called there.
 *
 * <p>Only so many of these answers are on their way to their claim at once; the others wait without a thread
 * ({@link ClaimQueue}).
 */
@Singleton
public class VirtualThreadAnswers {

    private final ExecutorService virtualThreads;
    private final ClaimQueue claims;

    VirtualThreadAnswers(@VirtualThreads ExecutorService virtualThreads, ClaimQueue claims) {
        this.virtualThreads = virtualThreads;
        this.claims = claims;
    }

    /**
     * {@code work} on a virtual thread once {@link ClaimQueue} has a place for it; what it throws is mapped as if the
     * endpoint had thrown it.
     */
    public CompletionStage<Response> answer(Supplier<Response> work) {
        return claims.submit(work, virtualThreads);
    }
}

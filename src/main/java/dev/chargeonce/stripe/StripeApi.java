package dev.chargeonce.stripe;

import com.stripe.exception.ApiConnectionException;
import com.stripe.exception.ApiException;
import com.stripe.exception.AuthenticationException;
import com.stripe.exception.IdempotencyException;
import com.stripe.exception.RateLimitException;
import com.stripe.exception.StripeException;
import com.stripe.model.PaymentIntent;
import com.stripe.net.RequestOptions;
import com.stripe.net.StripeResponse;
import com.stripe.param.PaymentIntentCreateParams;
import dev.chargeonce.ratebudget.Endpoint;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.smallrye.faulttolerance.api.CircuitBreakerName;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.temporal.ChronoUnit;
import org.eclipse.microprofile.faulttolerance.Bulkhead;
import org.eclipse.microprofile.faulttolerance.CircuitBreaker;
import org.eclipse.microprofile.faulttolerance.Retry;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.faulttolerance.exceptions.TimeoutException;

/**
 * The fault-tolerant edge of the Stripe SDK. Every value here is a default that configuration overrides
 * (see the README): {@code dev.chargeonce.stripe.StripeApi/create/Timeout/value} and so on.
 *
 * <p>Each try's result is thrown as a type that says what it proves, and recorded in the call's {@link SendLog},
 * so that the whole sequence of tries can be classified, not only its last exception. The retry re-sends only
 * what is safe and useful to re-send with the same Stripe key: dropped connections, timeouts, Stripe's 409 (key in
 * use) and 5xx from Stripe's edge. A 5xx that Stripe's API answered is not retried: Stripe stores it for the key,
 * so the next driver re-sends once to see it replayed, and then looks the payment up.
 */
@ApplicationScoped
class StripeApi {

    /** The circuit breaker of the create call, by name, so the service can ask whether it is open. */
    static final String CIRCUIT = "stripe-create";
    /** The circuit's default open delay; configuration may override it (see {@link StripeGateway#acceptingCalls}). */
    static final long CIRCUIT_DELAY_MILLIS = 5_000;
    static final String CIRCUIT_DELAY_PROPERTY = "dev.chargeonce.stripe.StripeApi/create/CircuitBreaker/delay";
    /** The refunds' circuit: refunds failing must not stop charges, nor the reverse. */
    static final String REFUND_CIRCUIT = "stripe-refund";
    static final String REFUND_CIRCUIT_DELAY_PROPERTY = "dev.chargeonce.stripe.StripeApi/createRefund/CircuitBreaker/delay";

    /**
     * The longest one try may take, in seconds (connecting, sending and every read): {@link TryWatchdog} ends it then.
     * Configured as Fault Tolerance's {@code @Timeout} was, {@code dev.chargeonce.stripe.StripeApi/create/Timeout/value}
     * (and {@code createRefund}'s), which {@link StripeCallBudget} reads too.
     */
    static final long TIMEOUT_SECONDS = 9;
    /** The defaults of the annotations below (and their units), for {@link StripeCallBudget}. */
    static final int MAX_RETRIES = 2;
    static final long RETRY_DELAY_MILLIS = 200;
    static final long RETRY_JITTER_MILLIS = 150;
    static final long RETRY_MAX_DURATION_SECONDS = 25;
    /** MicroProfile Fault Tolerance's config keys of this class: {@code <root><method>/Retry/maxRetries}... */
    static final String CONFIG_ROOT = "dev.chargeonce.stripe.StripeApi/";
    /** The methods that create at Stripe (each bounded by the lease, see {@link StripeCallBudget}). */
    static final java.util.List<String> CREATE_METHODS = java.util.List.of("create", "createRefund");

    /** The call may have reached Stripe and its answer was lost; re-sending the same key is safe and useful. */
    static final class UnreachableException extends RuntimeException {
        UnreachableException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /**
     * Stripe answered 409: a request with this key is still running there (typically the original of a row we
     * took over). Re-sending later is safe; it says nothing about Stripe's health, so the breaker ignores it.
     */
    static final class KeyInUseException extends RuntimeException {
        KeyInUseException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /**
     * A 5xx that did not come from Stripe's API (no Stripe error object: a load balancer, a proxy): the request may
     * or may not have been passed on. Nothing about the key is stored at Stripe by it; re-sending is safe.
     */
    static final class EdgeErrorException extends RuntimeException {
        EdgeErrorException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /** Stripe's API answered 5xx for the key first-hand: Stripe stores it for the key. Counts against Stripe's health. */
    static final class ServerErrorException extends RuntimeException {
        ServerErrorException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /**
     * Stripe replayed a stored 5xx for the key: the key's one execution is over. Says nothing about Stripe's health
     * now (it is the answer of an earlier request), so the breaker ignores it.
     */
    static final class StoredServerErrorException extends RuntimeException {
        StoredServerErrorException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /** The holder's lease ends before this try could start: it is not sent (the next holder sends the key). */
    static final class LeaseSpentException extends RuntimeException {
        LeaseSpentException() {
            super("the lease ends before another try could be sent", null, false, false);
        }
    }

    private final StripeClients clients;
    private final dev.chargeonce.ratebudget.StripeRateBudget budget;
    private final TryWatchdog watchdog = new TryWatchdog();
    private final long createTryNanos;
    private final long refundTryNanos;
    /** The read timeout, in nanoseconds (at least 1 ms: StripeCallBudget): what bounds a try on a virtual thread besides its limit. */
    private final long readTimeoutNanos;
    /** Tries the watchdog ended (what Fault Tolerance's {@code ft_timeout} metrics counted before it). */
    private final Counter createTriesExpired;
    private final Counter refundTriesExpired;

    StripeApi(StripeClients clients, StripeConfig stripe, Config config, MeterRegistry registry,
              dev.chargeonce.ratebudget.StripeRateBudget budget) {
        this.clients = clients;
        this.budget = budget;
        this.readTimeoutNanos = stripe.readTimeout().toNanos();
        this.createTryNanos = tryLimitNanos(config, "create");
        this.refundTryNanos = tryLimitNanos(config, "createRefund");
        this.createTriesExpired = registry.counter(TRIES_EXPIRED, "call", "create");
        this.refundTriesExpired = registry.counter(TRIES_EXPIRED, "call", "createRefund");
    }

    /** Counter of Stripe tries that ran past their limit ({@code Timeout/value}) and were ended, tagged by call. */
    static final String TRIES_EXPIRED = "chargeonce.stripe.tries.expired";

    @jakarta.annotation.PreDestroy
    void stopWatchdog() {
        watchdog.stop();
    }

    private static long tryLimitNanos(Config config, String method) {
        return java.util.concurrent.TimeUnit.SECONDS.toNanos(StripeCallBudget.trySeconds(config, CONFIG_ROOT + method + "/"));
    }

    @Retry(maxRetries = MAX_RETRIES, delay = RETRY_DELAY_MILLIS, jitter = RETRY_JITTER_MILLIS,
            maxDuration = RETRY_MAX_DURATION_SECONDS, durationUnit = ChronoUnit.SECONDS,
            retryOn = {UnreachableException.class, KeyInUseException.class, EdgeErrorException.class, TimeoutException.class})
    @CircuitBreaker(requestVolumeThreshold = 20, failureRatio = 0.5, delay = CIRCUIT_DELAY_MILLIS, delayUnit = ChronoUnit.MILLIS,
            successThreshold = 2, failOn = {UnreachableException.class, EdgeErrorException.class, ServerErrorException.class,
            TimeoutException.class})
    @CircuitBreakerName(StripeApi.CIRCUIT)
    @Bulkhead(2048)
    PaymentIntent create(PaymentIntentCreateParams params, String idempotencyKey, long sendBefore, SendLog log)
            throws StripeException {
        return send(sendBefore, createTryNanos, createTriesExpired, log, Endpoint.PAYMENT_INTENTS_CREATE, client -> client.v1().paymentIntents().create(params,
                RequestOptions.builder().setIdempotencyKey(idempotencyKey).build()));
    }

    /**
     * A refund, with the same fault tolerance as a create (the same budget, so the same lease covers it), behind a
     * circuit of its own: refunds failing must not stop charges, nor the reverse.
     */
    @Retry(maxRetries = MAX_RETRIES, delay = RETRY_DELAY_MILLIS, jitter = RETRY_JITTER_MILLIS,
            maxDuration = RETRY_MAX_DURATION_SECONDS, durationUnit = ChronoUnit.SECONDS,
            retryOn = {UnreachableException.class, KeyInUseException.class, EdgeErrorException.class, TimeoutException.class})
    @CircuitBreaker(requestVolumeThreshold = 20, failureRatio = 0.5, delay = CIRCUIT_DELAY_MILLIS, delayUnit = ChronoUnit.MILLIS,
            successThreshold = 2, failOn = {UnreachableException.class, EdgeErrorException.class, ServerErrorException.class,
            TimeoutException.class})
    @CircuitBreakerName(StripeApi.REFUND_CIRCUIT)
    @Bulkhead(2048)
    com.stripe.model.Refund createRefund(com.stripe.param.RefundCreateParams params, String idempotencyKey, long sendBefore,
                                         SendLog log) throws StripeException {
        return send(sendBefore, refundTryNanos, refundTriesExpired, log, Endpoint.REFUNDS_CREATE, client -> client.v1().refunds().create(params,
                RequestOptions.builder().setIdempotencyKey(idempotencyKey).build()));
    }

    @FunctionalInterface
    interface StripeRequest<T> {
        T send(com.stripe.StripeClient client) throws StripeException;
    }

    /**
     * One try: sent only inside the lease, ended by the watchdog after {@link #tryLimitNanos}, recorded in the call's
     * log, its failure thrown as what it proves. A try the watchdog ended is a {@link TimeoutException}, whatever the
     * interrupted I/O threw (it may have reached Stripe: the log keeps it as maybe executed).
     */
    private <T> T send(long sendBefore, long limitNanos, Counter expiredTries, SendLog log, Endpoint endpoint,
                       StripeRequest<T> request) throws StripeException {
        if (System.nanoTime() - sendBefore >= 0) {
            throw new LeaseSpentException();
        }
        boolean virtualThread = Thread.currentThread().isVirtual();
        long tryNanos = tryLimitNanos(limitNanos, virtualThread);
        com.stripe.StripeClient client = clients.forWatchedTry(virtualThread);
        try (TryWatchdog.Watch watch = watchdog.start(tryNanos)) {
            try {
                return sendOnce(log, request, client);
            } catch (RateLimitException e) {
                budget.rateLimited(endpoint, rateLimitedReason(e));
                throw e;
            } catch (StripeException | RuntimeException e) {
                if (watch.expired()) {
                    expiredTries.increment();
                    throw new TimeoutException("the Stripe try took longer than " + java.time.Duration.ofNanos(tryNanos), e);
                }
                throw e;
            }
        }
    }

    /**
     * How long the watchdog lets one try run: its limit ({@code Timeout/value}) and, on a virtual thread, where the
     * SDK's client has no read timeout ({@link StripeClients#forWatchedTry}), no longer than the read timeout either.
     * That bound is tighter than the read timeout it replaces (which restarts with every byte and counts neither the
     * connect nor the send), so the call's budget ({@link StripeCallBudget}: at most the limit, and at most connect +
     * read timeout per try) still holds.
     */
    long tryLimitNanos(long limitNanos, boolean virtualThread) {
        return virtualThread ? Math.min(limitNanos, readTimeoutNanos) : limitNanos;
    }

    private static <T> T sendOnce(SendLog log, StripeRequest<T> request, com.stripe.StripeClient client) throws StripeException {
        // Until an answer proves otherwise, a try that was started may have run at Stripe (a timeout interrupts it
        // from outside, and it stays "maybe").
        log.trying();
        log.mayHaveExecuted();
        try {
            return request.send(client);
        } catch (ApiConnectionException e) {
            if (e.getCause() instanceof java.net.ConnectException) {
                log.didNotExecute(); // refused: not a byte of the request reached anyone
            }
            throw new UnreachableException("connection: " + e.getMessage(), e);
        } catch (IdempotencyException e) {
            log.didNotExecute();
            throw e;
        } catch (RateLimitException | AuthenticationException e) {
            // Not executed, and not stored for the key by Stripe.
            log.didNotExecute();
            throw e;
        } catch (ApiException e) {
            Integer status = e.getStatusCode();
            if (status != null && status == 409) {
                log.didNotExecute(); // another request with the key is the one running
                throw new KeyInUseException("stripe 409 (key in use): " + e.getMessage(), e);
            }
            if (e.getStripeError() == null || e.getStripeError().getLastResponse() == null) {
                throw new EdgeErrorException("stripe edge " + status + ": " + e.getMessage(), e);
            }
            if (replayed(e.getStripeError().getLastResponse())) {
                log.didNotExecute();
                throw new StoredServerErrorException("stripe " + status + " (replayed): " + e.getMessage(), e);
            }
            throw new ServerErrorException("stripe " + status + ": " + e.getMessage(), e);
        } catch (StripeException e) {
            // Card errors and invalid requests: final answers of the key (first-hand or replayed).
            if (e.getStripeError() != null && replayed(e.getStripeError().getLastResponse())) {
                log.didNotExecute();
            }
            throw e;
        }
    }

    /** Stripe's {@code Stripe-Rate-Limited-Reason} header of a 429 ({@code endpoint-rate}, {@code global-concurrency}...). */
    static String rateLimitedReason(StripeException e) {
        StripeResponse response = e.getStripeError() == null ? null : e.getStripeError().getLastResponse();
        return response == null || response.headers() == null ? null
                : response.headers().firstValue("Stripe-Rate-Limited-Reason").orElse(null);
    }

    private static boolean replayed(StripeResponse response) {
        return response != null && response.headers() != null
                && response.headers().firstValue("Idempotent-Replayed").map("true"::equalsIgnoreCase).orElse(false);
    }
}

package dev.chargeonce.stripe;

import com.stripe.StripeClient;
import com.stripe.exception.ApiConnectionException;
import com.stripe.exception.ApiException;
import com.stripe.exception.IdempotencyException;
import com.stripe.exception.StripeException;
import com.stripe.model.PaymentIntent;
import com.stripe.net.RequestOptions;
import com.stripe.param.PaymentIntentCreateParams;
import io.smallrye.faulttolerance.api.CircuitBreakerName;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.temporal.ChronoUnit;
import org.eclipse.microprofile.faulttolerance.Bulkhead;
import org.eclipse.microprofile.faulttolerance.CircuitBreaker;
import org.eclipse.microprofile.faulttolerance.Retry;
import org.eclipse.microprofile.faulttolerance.Timeout;
import org.eclipse.microprofile.faulttolerance.exceptions.TimeoutException;

/**
 * The fault-tolerant edge of the Stripe SDK. Every value here is a default that configuration overrides
 * (see the README): {@code dev.chargeonce.stripe.StripeApi/create/Timeout/value} and so on.
 *
 * <p>Unknown outcomes are thrown, so that the circuit breaker counts them and the retry sees them; the retry
 * re-sends only what is safe to re-send with the same Stripe key: dropped connections, timeouts and Stripe's
 * 409 (key in use). A Stripe 5xx is not retried: Stripe replays a 500 for its key, so only a lookup can tell.
 */
@ApplicationScoped
class StripeApi {

    /** The circuit breaker of the create call, by name, so the service can ask whether it is open. */
    static final String CIRCUIT = "stripe-create";
    /** The circuit's default open delay; configuration may override it (see {@link StripeGateway#acceptingCalls}). */
    static final long CIRCUIT_DELAY_MILLIS = 5_000;
    static final String CIRCUIT_DELAY_PROPERTY = "dev.chargeonce.stripe.StripeApi/create/CircuitBreaker/delay";

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

    /** Stripe answered 5xx; the same key would replay it. */
    static final class ServerErrorException extends RuntimeException {
        ServerErrorException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    private final StripeClients clients;

    StripeApi(StripeClients clients) {
        this.clients = clients;
    }

    @Timeout(value = 9, unit = ChronoUnit.SECONDS)
    @Retry(maxRetries = 2, delay = 200, jitter = 150, maxDuration = 25, durationUnit = ChronoUnit.SECONDS,
            retryOn = {UnreachableException.class, KeyInUseException.class, TimeoutException.class})
    @CircuitBreaker(requestVolumeThreshold = 20, failureRatio = 0.5, delay = CIRCUIT_DELAY_MILLIS, delayUnit = ChronoUnit.MILLIS,
            successThreshold = 2, failOn = {UnreachableException.class, ServerErrorException.class, TimeoutException.class})
    @CircuitBreakerName(StripeApi.CIRCUIT)
    @Bulkhead(2048)
    PaymentIntent create(PaymentIntentCreateParams params, String idempotencyKey) throws StripeException {
        StripeClient client = clients.client();
        try {
            return client.v1().paymentIntents().create(params,
                    RequestOptions.builder().setIdempotencyKey(idempotencyKey).build());
        } catch (ApiConnectionException e) {
            throw new UnreachableException("connection: " + e.getMessage(), e);
        } catch (IdempotencyException e) {
            // Our parameters are derived from the stored row, so this should not happen; if it does, an earlier
            // request with this key may have charged. Treat it as unknown and let the lookup decide.
            throw new ServerErrorException("idempotency_error: " + e.getMessage(), e);
        } catch (ApiException e) {
            Integer status = e.getStatusCode();
            if (status != null && status == 409) {
                throw new KeyInUseException("stripe 409 (key in use): " + e.getMessage(), e);
            }
            throw new ServerErrorException("stripe " + status + ": " + e.getMessage(), e);
        }
    }
}

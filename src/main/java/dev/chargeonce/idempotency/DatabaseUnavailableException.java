package dev.chargeonce.idempotency;

/**
 * The primary could not run a statement (pool exhausted, connection refused, socket timeout). Whatever the
 * caller was about to do next, it must not do: in particular, a claim that did not commit never reaches Stripe.
 */
public class DatabaseUnavailableException extends RuntimeException {
    public DatabaseUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}

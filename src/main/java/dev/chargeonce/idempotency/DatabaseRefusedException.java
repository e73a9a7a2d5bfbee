package dev.chargeonce.idempotency;

/**
 * The database refused a statement for what it carried (invalid data, a violated constraint): not an outage (see
 * {@link DatabaseFailures}). The caller must not do what it was about to do next, as for an outage, but a retry of
 * the same request cannot help.
 */
public class DatabaseRefusedException extends RuntimeException {
    public DatabaseRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}

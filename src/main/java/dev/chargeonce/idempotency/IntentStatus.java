package dev.chargeonce.idempotency;

/**
 * The only values of {@code stripe_intents.status}: where the key stands. Every status but {@code processing}
 * holds the key's final answer, replayed byte for byte.
 */
public enum IntentStatus {
    PROCESSING("processing"),
    /** Charged: the answer is a 201. */
    COMPLETED("completed"),
    /** Not charged, for good: a decline or Stripe's refusal (402/400). */
    FAILED("failed"),
    /**
     * Stripe took the payment and will finish it later (3-D Secure for the customer to complete, a bank debit
     * processing): the answer is a 202; the charge's outcome arrives in {@link ChargeStatus} by webhook or sync.
     */
    ACCEPTED("accepted");

    private final String column;

    IntentStatus(String column) {
        this.column = column;
    }

    public String column() {
        return column;
    }

    public static IntentStatus fromColumn(String value) {
        return switch (value) {
            case "processing" -> PROCESSING;
            case "completed" -> COMPLETED;
            case "failed" -> FAILED;
            case "accepted" -> ACCEPTED;
            default -> throw new IllegalStateException("unknown status " + value);
        };
    }
}

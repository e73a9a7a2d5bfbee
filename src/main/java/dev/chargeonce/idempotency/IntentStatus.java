package dev.chargeonce.idempotency;

/** The only values of {@code stripe_intents.status}. */
public enum IntentStatus {
    PROCESSING("processing"), COMPLETED("completed"), FAILED("failed");

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
            default -> throw new IllegalStateException("unknown status " + value);
        };
    }
}

package dev.chargeonce.idempotency;

import java.util.Arrays;
import java.util.List;

/**
 * {@code stripe_intents.charge_status}: the charge as GET shows it, following its PaymentIntent at Stripe after the
 * key's answer was given. It never moves backwards: a later state has a higher rank, and the final ones
 * ({@code succeeded}, {@code canceled}) never change (Stripe delivers events out of order and more than once).
 */
public enum ChargeStatus {
    REQUIRES_ACTION("requires_action", 1),
    PROCESSING("processing", 2),
    /** The payment failed (declined, authentication failed); Stripe may still let the customer succeed later. */
    FAILED("failed", 3),
    SUCCEEDED("succeeded", 4),
    CANCELED("canceled", 4);

    private final String column;
    private final int rank;

    ChargeStatus(String column, int rank) {
        this.column = column;
        this.rank = rank;
    }

    public String column() {
        return column;
    }

    /** The rank the database compares ({@link StatementCatalog} keeps the same order in SQL). */
    public int rank() {
        return rank;
    }

    public boolean isFinal() {
        return this == SUCCEEDED || this == CANCELED;
    }

    /** Every state's name, as the API shows it. */
    public static List<String> names() {
        return Arrays.stream(values()).map(ChargeStatus::column).toList();
    }

    public static ChargeStatus fromColumn(String value) {
        if (value == null) {
            return null;
        }
        for (ChargeStatus status : values()) {
            if (status.column.equals(value)) {
                return status;
            }
        }
        throw new IllegalStateException("unknown charge status " + value);
    }
}

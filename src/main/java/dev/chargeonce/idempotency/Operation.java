package dev.chargeonce.idempotency;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * What a key claims a side effect at Stripe for: a charge or a refund. Both run the same protocol (claim → lease →
 * Stripe call → fenced finish → replay; takeover, lookup after a 5xx, key horizon, recovery, retention), on a table
 * each, through the same statements ({@link StatementCatalog}); they differ only in the names below and in what
 * follows the answer: the Stripe object's state (a charge's PaymentIntent, a refund), which only moves forward.
 */
public enum Operation {

    /** A failed payment may still succeed (the customer tries again): it is followed until succeeded or canceled. */
    CHARGE("stripe_intents", "payment_intent_id", "charge_status",
            ranks("requires_action", 1, "processing", 2, "failed", 3, "succeeded", 4, "canceled", 4),
            Set.of("succeeded", "canceled"), Set.of("succeeded", "canceled")),

    /**
     * A refund can still fail after it succeeded (Stripe: a closed account; its event says so), so only failed and
     * canceled are final; once succeeded it is no longer looked at on a schedule. {@code requires_action} (the
     * customer's details) comes before {@code pending}.
     */
    REFUND("stripe_refunds", "stripe_refund_id", "refund_status",
            ranks("requires_action", 1, "pending", 2, "succeeded", 3, "failed", 4, "canceled", 4),
            Set.of("failed", "canceled"), Set.of("succeeded", "failed", "canceled"));

    private final String table;
    private final String objectIdColumn;
    private final String stateColumn;
    private final Map<String, Integer> ranks;
    private final Set<String> finalStates;
    private final Set<String> settledStates;

    Operation(String table, String objectIdColumn, String stateColumn, Map<String, Integer> ranks, Set<String> finalStates,
              Set<String> settledStates) {
        this.table = table;
        this.objectIdColumn = objectIdColumn;
        this.stateColumn = stateColumn;
        this.ranks = ranks;
        this.finalStates = finalStates;
        this.settledStates = settledStates;
    }

    /** Its name in paths and records: {@code charge}, {@code refund}. */
    public String column() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }

    /** The table of its rows. */
    public String table() {
        return table;
    }

    /** The column of the Stripe object it made ({@code pi_…}, {@code re_…}). */
    public String objectIdColumn() {
        return objectIdColumn;
    }

    /** The column of that object's state at Stripe, after the key's answer. */
    public String stateColumn() {
        return stateColumn;
    }

    public boolean isFinalState(String state) {
        return finalStates.contains(state);
    }

    /** The states' order in SQL: a state only moves to a higher rank, never out of a final one. */
    /** A Stripe state's rank (0: unknown): a state moves only to a higher one. */
    int rank(String state) {
        return ranks.getOrDefault(state, 0);
    }

    String rankSql(String expression) {
        // A searched CASE, not "CASE expression WHEN ...": Citus 13.2 rewrites a simple CASE on a parameter wrongly
        // in an UPDATE's WHERE ("operator does not exist: text = boolean" on the worker).
        return ranks.entrySet().stream().map(e -> "WHEN " + expression + " = '" + e.getKey() + "' THEN " + e.getValue())
                .collect(Collectors.joining(" ", "CASE ", " ELSE 0 END"));
    }

    String finalStatesSql() {
        return inList(finalStates);
    }

    /** The states after which the sync worker no longer looks (events still move a state that is not final). */
    String settledStatesSql() {
        return inList(settledStates);
    }

    private static String inList(Set<String> states) {
        return states.stream().sorted().map(s -> "'" + s + "'").collect(Collectors.joining(", ", "(", ")"));
    }

    private static Map<String, Integer> ranks(Object... pairs) {
        Map<String, Integer> ranks = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            ranks.put((String) pairs[i], (Integer) pairs[i + 1]);
        }
        return ranks;
    }
}

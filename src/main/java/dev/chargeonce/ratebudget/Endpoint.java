package dev.chargeonce.ratebudget;

/**
 * The Stripe endpoints the service calls, as Stripe counts them for its per-endpoint limits: each named operation
 * is one endpoint ({@code POST /v1/payment_intents} and {@code GET /v1/payment_intents/{id}} are two; retrieves of
 * different ids share one). Reads the service makes rarely share one budget ({@link #READS}).
 */
public enum Endpoint {
    /** {@code POST /v1/payment_intents}: a charge's create-and-confirm. */
    PAYMENT_INTENTS_CREATE("payment_intents.create"),
    /** {@code POST /v1/refunds}. */
    REFUNDS_CREATE("refunds.create"),
    /** Retrieves and lists: PaymentIntents, refunds, events, customers; cancels. */
    READS("reads");

    private final String id;

    Endpoint(String id) {
        this.id = id;
    }

    /** The name in configuration ({@code chargeonce.stripe.budget.rates."<id>"}), the table and the metrics. */
    public String id() {
        return id;
    }

    static Endpoint byId(String id) {
        for (Endpoint endpoint : values()) {
            if (endpoint.id.equals(id)) {
                return endpoint;
            }
        }
        return null;
    }
}

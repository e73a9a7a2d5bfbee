package dev.chargeonce.ratebudget;

/**
 * One schedule of the budget as it stands (the console shows them): its configured rate, its rate now (lower after
 * Stripe's 429s, climbing back) and how far ahead its permits are booked (how long a request of its class would wait
 * in line now).
 */
public record Standing(String endpoint, String trafficClass, double configuredRate, double rate, double bookedAheadSeconds) {

    /** Lowered after Stripe's 429s and not climbed back yet. */
    public boolean lowered() {
        return rate < configuredRate - 1e-9;
    }

    /** The rates to one decimal, as the console shows them. */
    public String rateText() {
        return String.format(java.util.Locale.ROOT, "%.1f", rate);
    }

    public String configuredRateText() {
        return String.format(java.util.Locale.ROOT, "%.1f", configuredRate);
    }

    public String bookedAheadText() {
        return String.format(java.util.Locale.ROOT, "%.1f s", bookedAheadSeconds);
    }
}

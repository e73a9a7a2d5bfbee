package dev.chargeonce.reconcile;

import java.util.Locale;

/** Every kind of difference reconciliation tells apart, each with what an operator can do about it. */
public enum FindingKind {

    /** Stripe has a payment of one of our keys that moved money and no row here has that key or names it. */
    UNKNOWN_PAYMENT_INTENT("Stripe charged a key this service has no row for (a lost row?): refund it or tie it to an order by hand."),
    /** A row has the key, but names no PaymentIntent (processing, parked) or failed: Stripe's can be attached. */
    UNRECORDED_PAYMENT_INTENT("The key's row does not name this PaymentIntent, which moved money: attach it to the row."),
    /** Two PaymentIntents that moved money for one (client, key): the one thing this service exists to prevent. */
    DUPLICATE_PAYMENT_INTENTS("Two payments for one key: refund the one the row does not name."),
    /** A row names a PaymentIntent that differs at Stripe (amount, currency, state). */
    DIFFERS_AT_STRIPE("The row and Stripe disagree on this payment: Stripe's word is the truth; check the row's story."),
    /** A row names a PaymentIntent Stripe does not have. */
    MISSING_AT_STRIPE("The row names a PaymentIntent Stripe does not have."),
    /** Stripe has a refund of one of our refund keys and no row has that key or names it. */
    UNKNOWN_REFUND("Stripe made a refund for a key this service has no row for."),
    /** A refund row has the key but names no Stripe refund (processing, parked) or failed. */
    UNRECORDED_REFUND("The refund key's row does not name this refund: attach it to the row."),
    /** Two refunds that paid out for one (client, refund key). */
    DUPLICATE_REFUNDS("Two refunds for one key: the customer was paid back twice."),
    /** A refund row names a refund that differs at Stripe (amount, currency, state). */
    REFUND_DIFFERS("The refund row and Stripe disagree on this refund."),
    /** A refund row names a refund Stripe does not have. */
    REFUND_MISSING_AT_STRIPE("The row names a refund Stripe does not have."),
    /** What a charge's finished refunds reserve here differs from what Stripe's refunds of its PaymentIntent add up to. */
    REFUND_TOTAL_DIFFERS("The charge's refunds add up differently here and at Stripe."),
    /** A PaymentIntent that moved money and carries none of the service's metadata: made in Stripe's Dashboard, or elsewhere. */
    MADE_OUTSIDE("Made outside the service (Stripe's Dashboard, another integration): nothing to do here unless it "
            + "duplicates an order; refund it at Stripe if so."),
    /** A refund without the service's metadata on one of its charges: it counts against the charge here. */
    REFUNDED_OUTSIDE("Refunded outside the service (Stripe's Dashboard): it counts against the charge here (its refunded "
            + "amount, what is left to refund); nothing to do unless the customer is paid back twice."),
    /** A row parked for an operator: the service will never send its key again by itself. */
    PARKED_ROW("Parked: look its key up at Stripe, then attach what was found, or mark it failed when nothing was."),
    /** A row processing for longer than it should, however often driven. */
    STUCK_ROW("Processing for too long: look at its story; re-queue it for a driver if nothing is wrong at Stripe.");

    private final String advice;

    FindingKind(String advice) {
        this.advice = advice;
    }

    /** What to do about it, for the console. */
    public String advice() {
        return advice;
    }

    /** As stored and as a metric tag. */
    public String column() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Two objects that moved money for one key: the finding that matters most. */
    public boolean duplicate() {
        return this == DUPLICATE_PAYMENT_INTENTS || this == DUPLICATE_REFUNDS;
    }

    /** What others did at Stripe (its Dashboard): told to the operator, not alerted on (nothing is wrong here). */
    public boolean doneOutside() {
        return this == MADE_OUTSIDE || this == REFUNDED_OUTSIDE;
    }

    /** The kinds about a row's own state, which the job resolves itself once the row is no longer so. */
    public boolean aboutRowState() {
        return this == PARKED_ROW || this == STUCK_ROW;
    }
}

package dev.chargeonce.console;

import java.math.BigDecimal;
import java.text.NumberFormat;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Currency;
import java.util.Locale;

/**
 * How the console's pages show what the rows hold: an amount in its currency's units with its symbol ({@code $72.32},
 * {@code ¥7232}: the minor units of Stripe's amounts, scaled by the currency's own fraction digits as the JDK's
 * {@link Currency} knows them), a time to the second in UTC, and the head of a long text (the rest folded away).
 */
public final class Readable {

    /** Texts longer than this are folded: their head shows, the rest opens on a click ({@code <details>}). */
    static final int FOLD_AFTER = 120;
    private static final DateTimeFormatter UTC = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'", Locale.ROOT)
            .withZone(ZoneOffset.UTC);

    private Readable() {
    }

    /**
     * {@code amount} minor units of {@code currency} (an ISO 4217 code, any case) as its symbol and units: 7232 usd
     * is {@code $72.32}, 7232 jpy (no minor unit) {@code ¥7232}, 7232 eur {@code €72.32}. The symbols are the
     * English ones ({@code CA$} for Canada's dollar), without grouping, so that every amount reads the same in every
     * operator's browser. A code the JDK does not know shows as it is ({@code 7232 xyz}).
     */
    public static String money(long amount, String currency) {
        Currency known;
        try {
            known = Currency.getInstance(currency.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException | NullPointerException e) {
            return amount + " " + currency;
        }
        int digits = known.getDefaultFractionDigits();
        if (digits < 0) { // a currency without units of its own (XAU, XXX): the amount as it is
            return amount + " " + currency;
        }
        NumberFormat format = NumberFormat.getCurrencyInstance(Locale.US);
        format.setCurrency(known);
        format.setMinimumFractionDigits(digits);
        format.setMaximumFractionDigits(digits);
        format.setGroupingUsed(false);
        return format.format(BigDecimal.valueOf(amount, digits));
    }

    /** A time to the second, in UTC: {@code 2026-12-05 20:13:06 UTC}; an empty text for none. */
    public static String utc(Instant at) {
        return at == null ? "" : UTC.format(at);
    }

    /** Whether a text is long enough to fold. */
    public static boolean isLong(String text) {
        return text != null && text.length() > FOLD_AFTER;
    }

    /** A long text's head, cut at a space where one is near the fold, with an ellipsis. */
    public static String head(String text) {
        if (!isLong(text)) {
            return text == null ? "" : text;
        }
        int cut = text.lastIndexOf(' ', FOLD_AFTER);
        return text.substring(0, cut > FOLD_AFTER / 2 ? cut : FOLD_AFTER) + " …";
    }
}

package dev.chargeonce.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The console's amounts, times and long texts, as operators read them. */
class ReadableTest {

    @Test
    void anAmountIsShownInItsCurrencysUnitsWithItsSymbol() {
        assertEquals("$72.32", Readable.money(7232, "usd"));
        assertEquals("$0.05", Readable.money(5, "usd"));
        assertEquals("$1234567.89", Readable.money(123456789, "USD"));
        // no minor unit: Stripe's amount is the units already
        assertEquals("¥7232", Readable.money(7232, "jpy"));
        assertEquals("€72.32", Readable.money(7232, "eur"));
        // three decimals (Bahrain's dinar): the JDK's fraction digits, no table of our own
        assertEquals("BHD7.232", Readable.money(7232, "bhd").replace('\u00a0', ' ').replace(" ", ""));
    }

    @Test
    void aCurrencyTheJdkDoesNotKnowIsShownAsItIs() {
        assertEquals("7232 xyz", Readable.money(7232, "xyz"));
        assertEquals("7232 null", Readable.money(7232, null));
    }

    @Test
    void aTimeIsShownToTheSecondInUtc() {
        assertEquals("2026-12-05 20:13:06 UTC", Readable.utc(Instant.parse("2026-12-05T20:13:06.123456Z")));
        assertEquals("", Readable.utc(null));
    }

    @Test
    void aLongTextIsFoldedAfterItsHead() {
        String shortText = "card_declined";
        assertFalse(Readable.isLong(shortText));
        assertEquals(shortText, Readable.head(shortText));
        String longText = "word ".repeat(60).strip();
        assertTrue(Readable.isLong(longText));
        String head = Readable.head(longText);
        assertTrue(head.length() <= Readable.FOLD_AFTER + 2 && head.endsWith(" …") && longText.startsWith(head.substring(0, head.length() - 2)),
                head);
        assertFalse(Readable.isLong(null));
    }
}

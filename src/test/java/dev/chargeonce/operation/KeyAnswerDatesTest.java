package dev.chargeonce.operation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.idempotency.StoredAnswer;
import jakarta.ws.rs.core.Response;
import java.time.Instant;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * A replay's dates are HTTP dates in RFC 9110's IMF-fixdate form: a two-digit day, English names, GMT. (RFC 1123's
 * formatter of the JDK writes "Sat, 5 Dec 2026", which IMF-fixdate does not allow: only a day under 10 shows it.)
 */
class KeyAnswerDatesTest {

    /** RFC 9110, section 5.6.7: {@code IMF-fixdate = day-name "," SP date1 SP time-of-day SP GMT}. */
    static final Pattern IMF_FIXDATE = Pattern.compile(
            "(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \\d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \\d{4} \\d{2}:\\d{2}:\\d{2} GMT");

    @Test
    void aDayUnderTenHasTwoDigits() {
        Instant original = Instant.parse("2026-12-05T07:08:09Z");
        Instant expires = Instant.parse("2027-06-03T20:09:18Z");
        Response replay = KeyAnswer.replay(new StoredAnswer(201, "{}"), original, expires).toResponse("k");
        assertEquals("Sat, 05 Dec 2026 07:08:09 GMT", replay.getHeaderString("Idempotent-Original-Date"));
        assertEquals("Thu, 03 Jun 2027 20:09:18 GMT", replay.getHeaderString("Idempotency-Key-Expires"));
    }

    @Test
    void everyDayOfAYearIsImfFixdate() {
        Instant day = Instant.parse("2027-01-01T00:00:00Z");
        for (int i = 0; i < 366; i++, day = day.plusSeconds(86_400 + 3_661)) {
            Response replay = KeyAnswer.replay(new StoredAnswer(201, "{}"), day, day).toResponse("k");
            String date = replay.getHeaderString("Idempotent-Original-Date");
            assertTrue(IMF_FIXDATE.matcher(date).matches(), date);
        }
    }
}

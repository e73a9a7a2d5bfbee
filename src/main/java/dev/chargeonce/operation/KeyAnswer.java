package dev.chargeonce.operation;

import dev.chargeonce.idempotency.StoredAnswer;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/**
 * What a key's request answers (a charge, a refund): a status and the exact bytes of the body.
 *
 * @param replayed     the body is a stored answer of an earlier request ({@code Idempotent-Replayed: true})
 * @param retryAfter   set on answers that ask the client to retry the same key later
 * @param originalDate on a replay: when the key's first request came ({@code Idempotent-Original-Date})
 * @param expires      on a replay: when the key's answer stops being kept ({@code Idempotency-Key-Expires})
 * @param inFlightRow  on a {@code 409} in flight: the key's row, which a request may wait for ({@code Prefer: wait})
 * @param waitApplied  the {@code Prefer: wait} this answer honoured ({@code Preference-Applied}), in seconds; 0: none
 */
public record KeyAnswer(int status, String body, boolean replayed, Duration retryAfter, Instant originalDate, Instant expires,
                        InFlightRow inFlightRow, int waitApplied) {

    /** The row of a key in flight and how long its holder's lease still runs (by the database's clock). */
    public record InFlightRow(String id, Duration leaseLeft) {
    }

    public static KeyAnswer first(StoredAnswer answer) {
        return new KeyAnswer(answer.status(), answer.body(), false, null, null, null, null, 0);
    }

    public static KeyAnswer replay(StoredAnswer answer, Instant originalDate, Instant expires) {
        return new KeyAnswer(answer.status(), answer.body(), true, null, originalDate, expires, null, 0);
    }

    public static KeyAnswer retryLater(int status, String body, Duration retryAfter) {
        return new KeyAnswer(status, body, false, retryAfter, null, null, null, 0);
    }

    KeyAnswer inFlightOn(InFlightRow row) {
        return new KeyAnswer(status, body, replayed, retryAfter, originalDate, expires, row, waitApplied);
    }

    /** This answer, after the request waited as {@code Prefer: wait=seconds} asked. */
    public KeyAnswer afterWaiting(int seconds) {
        return new KeyAnswer(status, body, replayed, retryAfter, originalDate, expires, inFlightRow, seconds);
    }

    /**
     * HTTP dates (RFC 9110 IMF-fixdate): {@code Sat, 05 Dec 2026 20:09:18 GMT}. Not the JDK's RFC_1123_DATE_TIME, which
     * writes a day under 10 with one digit ({@code Sat, 5 Dec}): RFC 1123 allows that, IMF-fixdate does not.
     */
    private static final DateTimeFormatter HTTP_DATE =
            DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.ENGLISH).withZone(ZoneOffset.UTC);

    /**
     * The HTTP answer: the exact bytes; on a replay {@code Idempotent-Replayed: true}, the original request's date and
     * the key's expiry; {@code Retry-After} in whole seconds (rounded up, at least 1) when the client should come
     * back; the {@code Idempotency-Key} as the client sent it, echoed on every answer.
     */
    public jakarta.ws.rs.core.Response toResponse(String idempotencyKeyHeader) {
        jakarta.ws.rs.core.Response.ResponseBuilder response = jakarta.ws.rs.core.Response.status(status).entity(body)
                .type(jakarta.ws.rs.core.MediaType.APPLICATION_JSON_TYPE);
        if (idempotencyKeyHeader != null) {
            response.header("Idempotency-Key", idempotencyKeyHeader);
        }
        if (replayed) {
            response.header("Idempotent-Replayed", "true");
            if (originalDate != null) {
                response.header("Idempotent-Original-Date", HTTP_DATE.format(originalDate));
            }
            if (expires != null) {
                response.header("Idempotency-Key-Expires", HTTP_DATE.format(expires));
            }
        }
        if (waitApplied > 0) {
            response.header("Preference-Applied", "wait=" + waitApplied);
        }
        if (retryAfter != null) {
            response.header("Retry-After", Math.max(1, (retryAfter.toMillis() + 999) / 1000));
        }
        return response.build();
    }
}

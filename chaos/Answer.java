package chaos;

import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One answer a client got; {@code sentAt} / {@code receivedAt}: epoch ms when the request left and when its answer
 * came back (or the request failed); {@code port}: the instance asked (0: not a request).
 */
record Answer(int status, String body, boolean replayed, String retryAfter, long sentAt, long receivedAt, int port) {
    Answer(int status, String body, boolean replayed, String retryAfter) {
        this(status, body, replayed, retryAfter, System.currentTimeMillis(), System.currentTimeMillis(), 0);
    }

    Answer sent(long at, URI uri) {
        return new Answer(status, body, replayed, retryAfter, at, receivedAt, uri.getPort());
    }

    boolean isFinal() {
        // 202: Stripe took the payment and the customer must authenticate it (3-D Secure): the key's answer.
        return status == 201 || status == 202 || status == 402 || status == 400 || status == 422;
    }

    /**
     * The service parked the key for an operator (503 charge_under_reconciliation, Retry-After 10 minutes): it
     * answers so until someone reconciles it, so clients stop asking. Expected only after a lost commit.
     */
    boolean isParked() {
        return status == 503 && body != null && body.contains("\"charge_under_reconciliation\"");
    }

    /** The charge id the answer names: {@code id} of a 201, {@code error.charge} of a 402/400. */
    String chargeId() {
        Object o = Json.parseQuietly(body);
        if (o instanceof Map<?, ?> m) {
            if (m.get("error") instanceof Map<?, ?> e) {
                return e.get("charge") instanceof String c ? c : null;
            }
            return m.get("id") instanceof String c ? c : null;
        }
        return null;
    }

    /**
     * Which row answered: its charge id and creation time. A row the database lost and a retry claimed again has
     * the same charge id (its key identity's) and a creation time of its own.
     */
    String rowOf() {
        Object o = Json.parseQuietly(body);
        Object created = o instanceof Map<?, ?> m ? m.get("created") : null;
        return chargeId() + "@" + created;
    }

    /**
     * What must not change when the database lost the row and a new row answered: the status code and the whole
     * body except the new row's charge id and creation time (same PaymentIntent, amount, currency, status...).
     */
    Object sameAfterLostRow() {
        Object o = Json.parseQuietly(body);
        if (o instanceof Map<?, ?> m) {
            Map<Object, Object> copy = new LinkedHashMap<>(m);
            copy.remove("id");
            copy.remove("created");
            if (copy.get("error") instanceof Map<?, ?> e) {
                Map<Object, Object> error = new LinkedHashMap<>(e);
                error.remove("charge");
                copy.put("error", error);
            }
            return List.of(status, copy);
        }
        return List.of(status, String.valueOf(body));
    }

    String describe() {
        return status + (replayed ? " (replayed)" : "") + " " + (body == null ? "" : body.length() > 300 ? body.substring(0, 300) + "…" : body);
    }

    /** The {@code error.code} of an answer, or null. */
    static String errorCode(Answer a) {
        Object o = Json.parseQuietly(a.body());
        return o instanceof Map<?, ?> m && m.get("error") instanceof Map<?, ?> e && e.get("code") instanceof String c ? c : null;
    }
}

package dev.chargeonce.idempotency;

import dev.chargeonce.web.ApiException;

/** A client's {@code Idempotency-Key}: 1 to 255 printable ASCII characters, as Stripe accepts them. */
public record IdempotencyKey(String value) {

    public static final String HEADER = "Idempotency-Key";
    public static final int MAX_LENGTH = 255;

    public static IdempotencyKey parse(String header) {
        if (header == null) {
            throw ApiException.invalidRequest("idempotency_key_missing",
                    "Send an Idempotency-Key header: a unique value per logical payment, reused on every retry.", HEADER);
        }
        if (header.isEmpty() || header.length() > MAX_LENGTH) {
            throw ApiException.invalidRequest("idempotency_key_invalid",
                    "Idempotency-Key must be 1 to 255 characters long.", HEADER);
        }
        for (int i = 0; i < header.length(); i++) {
            char c = header.charAt(i);
            if (c < 0x20 || c > 0x7e) {
                throw ApiException.invalidRequest("idempotency_key_invalid",
                        "Idempotency-Key must be printable ASCII.", HEADER);
            }
        }
        if (header.charAt(0) == ' ' || header.charAt(header.length() - 1) == ' ') {
            // HTTP strips spaces around a header value, so a key can neither start nor end with one: refused if a
            // transport ever let one through, rather than made a key that differs from the one the client meant.
            throw ApiException.invalidRequest("idempotency_key_invalid",
                    "Idempotency-Key must not start or end with a space.", HEADER);
        }
        return new IdempotencyKey(header);
    }

    @Override
    public String toString() {
        return "IdempotencyKey[" + Fingerprint.sha256Hex(value).substring(0, 12) + "]";
    }
}

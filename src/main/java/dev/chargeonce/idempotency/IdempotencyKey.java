package dev.chargeonce.idempotency;

import dev.chargeonce.web.ApiException;

/** A client's {@code Idempotency-Key}: 1 to 255 printable ASCII characters, as Stripe accepts them. */
public record IdempotencyKey(String value) {

    public static final String HEADER = "Idempotency-Key";

    public static final int MAX_LENGTH = 255;

    /**
     * The key of a header, in either syntax: Stripe's bare token ({@code abc}), or the IETF draft's Structured Field
     * String ({@code "abc"}, RFC 8941: {@code \"} and {@code \\} the only escapes), which stands for the same key
     * once unquoted. A header that starts with a quote is read as the quoted form, and refused when it is not one.
     */
    public static IdempotencyKey parse(String header) {
        if (header == null) {
            throw ApiException.invalidRequest("idempotency_key_missing",
                    "Send an Idempotency-Key header: a unique value per logical payment, reused on every retry.", HEADER);
        }
        if (header.startsWith("\"")) {
            header = unquote(header);
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

    /** An RFC 8941 sf-string: {@code DQUOTE *( unescaped / "\\" ( DQUOTE / "\\" ) ) DQUOTE}, unescaped printable ASCII. */
    private static String unquote(String quoted) {
        StringBuilder key = new StringBuilder(quoted.length());
        for (int i = 1; i < quoted.length(); i++) {
            char c = quoted.charAt(i);
            if (c == '"') {
                if (i != quoted.length() - 1) {
                    throw malformed("characters follow the closing quote");
                }
                return key.toString();
            }
            if (c == '\\') {
                if (i + 1 >= quoted.length() || (quoted.charAt(i + 1) != '"' && quoted.charAt(i + 1) != '\\')) {
                    throw malformed("a backslash escapes only a quote or a backslash");
                }
                key.append(quoted.charAt(++i));
                continue;
            }
            if (c < 0x20 || c > 0x7e) {
                throw malformed("only printable ASCII may stand between the quotes");
            }
            key.append(c);
        }
        throw malformed("the closing quote is missing");
    }

    private static ApiException malformed(String why) {
        return ApiException.invalidRequest("idempotency_key_invalid",
                "Idempotency-Key starts with a quote but is no Structured Field String (RFC 8941): " + why + ".", HEADER);
    }

    /**
     * Nothing of the key: neither it nor an unkeyed hash of it (which would confirm a guess) may reach a log line
     * through a {@code %s}. A log names a key by {@link KeyIdentities#logTag}.
     */
    @Override
    public String toString() {
        return "IdempotencyKey[hidden]";
    }
}

package dev.chargeonce.sandbox;

import java.security.SecureRandom;
import java.util.Locale;

/** What the sandbox writes as Stripe writes it: JSON strings, Stripe's error object, random ids. */
final class SandboxJson {

    private static final String ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    private static final SecureRandom RANDOM = new SecureRandom();

    private SandboxJson() {
    }

    /** Stripe's error object: {@code {"error":{"type","code","message","param"}}}, without the null ones. */
    static String error(String type, String code, String message, String param) {
        return "{\"error\":{\"type\":" + quote(type) + (code == null ? "" : ",\"code\":" + quote(code))
                + ",\"message\":" + quote(message) + (param == null ? "" : ",\"param\":" + quote(param)) + "}}";
    }

    /** A JSON string ({@code null} for null). */
    static String quote(String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder(value.length() + 2).append('"');
        for (char c : value.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }

    /** {@code length} random letters and digits: the part of a Stripe id after its prefix. */
    static String randomId(int length) {
        StringBuilder id = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            id.append(ID_ALPHABET.charAt(RANDOM.nextInt(ID_ALPHABET.length())));
        }
        return id.toString();
    }
}

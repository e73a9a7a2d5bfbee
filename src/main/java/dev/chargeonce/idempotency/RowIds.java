package dev.chargeonce.idempotency;

import java.security.SecureRandom;

/** The ids clients see for rows: a prefix ({@code chg_}, {@code rfd_}) and 24 random alphanumerics (143 bits). */
public final class RowIds {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final char[] ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".toCharArray();

    private RowIds() {
    }

    /**
     * Whether {@code id} is an id this service could have made with this prefix: anything else is unknown without
     * asking the database (a NUL or any other byte PostgreSQL refuses never reaches it).
     */
    public static boolean wellFormed(String prefix, String id) {
        if (id == null || id.length() != prefix.length() + 24 || !id.startsWith(prefix)) {
            return false;
        }
        for (int i = prefix.length(); i < id.length(); i++) {
            char c = id.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) {
                return false;
            }
        }
        return true;
    }

    /** An id as an answer may echo it: printable ASCII, at most 64 characters. */
    public static String echo(String id) {
        if (id == null) {
            return "";
        }
        StringBuilder shown = new StringBuilder();
        for (int i = 0; i < id.length() && shown.length() < 64; i++) {
            char c = id.charAt(i);
            shown.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return shown.toString();
    }

    public static String next(String prefix) {
        StringBuilder id = new StringBuilder(prefix.length() + 24).append(prefix);
        for (int i = 0; i < 24; i++) {
            id.append(ALPHABET[RANDOM.nextInt(ALPHABET.length)]);
        }
        return id.toString();
    }
}

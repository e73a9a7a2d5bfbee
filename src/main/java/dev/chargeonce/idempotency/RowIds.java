package dev.chargeonce.idempotency;

import java.security.SecureRandom;

/** The ids clients see for rows: a prefix ({@code chg_}, {@code rfd_}) and 24 random alphanumerics (143 bits). */
public final class RowIds {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final char[] ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".toCharArray();

    private RowIds() {
    }

    public static String next(String prefix) {
        StringBuilder id = new StringBuilder(prefix.length() + 24).append(prefix);
        for (int i = 0; i < 24; i++) {
            id.append(ALPHABET[RANDOM.nextInt(ALPHABET.length)]);
        }
        return id.toString();
    }
}

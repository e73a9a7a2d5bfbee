package dev.chargeonce.idempotency;

import java.security.SecureRandom;

/**
 * The ids clients see for rows: a prefix ({@code chg_}, {@code rfd_}) and 24 alphanumerics.
 *
 * <p>A charge's id is a digest of its key's identity ({@link #ofIdentity}): a row the database lost and a retry
 * claimed again keeps the id its first answer gave. A refund's id ({@link #next}) is the creation time (9 base-36
 * digits of epoch milliseconds, lower case) then 15 random ones (89 bits). Time first, so that the primary key grows
 * at its right edge: a new row's index entry lands on the same few hot pages instead of a random page of a B-tree
 * larger than the buffer pool. Digits and lower case only in the time part, so the order is the same under any
 * collation. Charge ids were made that way too before they were their identity's, and ids of the scheme before that
 * (24 random alphanumerics) are still well formed.
 */
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

    /**
     * The id of the row a key's identity claims: {@code prefix} and 24 base-62 digits of a digest of the identity.
     * A function of the identity alone, so that a row the database lost (a failover to an asynchronous standby, a
     * restore) and a retry claimed again gets the very id its first answer gave: the charge id a client stored,
     * a result consumer counted and {@code GET} looks up stays the payment's. The identity is a keyed hash, so the
     * id tells nothing of the key. (Such ids are not time-ordered: the primary key takes them at a random leaf,
     * as the identity's own unique index already does.)
     */
    public static String ofIdentity(String prefix, String identity) {
        byte[] digest = Fingerprint.sha256("chargeonce-row-id\n" + prefix + '\n' + identity);
        java.math.BigInteger value = new java.math.BigInteger(1, digest);
        java.math.BigInteger base = java.math.BigInteger.valueOf(ALPHABET.length);
        char[] id = new char[prefix.length() + 24];
        prefix.getChars(0, prefix.length(), id, 0);
        for (int i = id.length - 1; i >= prefix.length(); i--) {
            java.math.BigInteger[] qr = value.divideAndRemainder(base);
            id[i] = ALPHABET[qr[1].intValue()];
            value = qr[0];
        }
        return new String(id);
    }

    public static String next(String prefix) {
        return next(prefix, System.currentTimeMillis());
    }

    static String next(String prefix, long epochMillis) {
        char[] id = new char[prefix.length() + 24];
        prefix.getChars(0, prefix.length(), id, 0);
        long time = epochMillis;
        for (int i = prefix.length() + TIME_DIGITS - 1; i >= prefix.length(); i--) {
            id[i] = Character.forDigit((int) (time % 36), 36);
            time /= 36;
        }
        // One call to the generator per id; a byte maps to a character only below 248 (4 × 62), so every character
        // is equally likely. 32 bytes leave enough after the rare rejections (a shortfall draws again).
        byte[] random = new byte[32];
        int used = random.length;
        for (int i = prefix.length() + TIME_DIGITS; i < id.length; ) {
            if (used == random.length) {
                RANDOM.nextBytes(random);
                used = 0;
            }
            int b = random[used++] & 0xff;
            if (b < 248) {
                id[i++] = ALPHABET[b % ALPHABET.length];
            }
        }
        return new String(id);
    }

    /** Base-36 digits of the creation time: enough for epoch milliseconds until the year 5188. */
    private static final int TIME_DIGITS = 9;
}

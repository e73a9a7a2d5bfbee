package dev.chargeonce.idempotency;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * What "the same request" means: SHA-256 over the method, the path and the canonical body (object keys
 * sorted, no insignificant whitespace). A key reused with another fingerprint is answered {@code 422}.
 */
public record Fingerprint(String hex) {

    public static Fingerprint of(String method, String path, String canonicalBody) {
        return new Fingerprint(sha256Hex(method + ' ' + path + '\n' + canonicalBody));
    }

    public static String sha256Hex(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is always present", e);
        }
    }
}

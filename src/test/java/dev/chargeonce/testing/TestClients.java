package dev.chargeonce.testing;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** The API clients every test environment configures, with their keys in clear (tests only). */
public final class TestClients {

    public static final String ACME = "acme";
    public static final String ACME_KEY = "sk_acme_0123456789";
    public static final String GLOBEX = "globex";
    public static final String GLOBEX_KEY = "sk_globex_9876543210";

    private TestClients() {
    }

    /** The value of {@code chargeonce.auth.clients} for these clients. */
    public static String config() {
        return ACME + ":" + sha256(ACME_KEY) + "," + GLOBEX + ":" + sha256(GLOBEX_KEY);
    }

    public static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}

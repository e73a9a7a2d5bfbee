package dev.chargeonce.idempotency;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * What "the same request" means: a digest of the method, the path and the canonical body (object keys sorted, no
 * insignificant whitespace). A key reused with another fingerprint is answered {@code 422}.
 *
 * <p>The stored form names its algorithm's version ({@code v2:<hex>}; a bare hex digest is version 1, the form
 * rows had before versions existed), and a request is compared with a row by the row's version. So the algorithm
 * or the canonical form can change (a new version, written once every instance reads it) without turning the
 * retries of requests claimed under the old one into {@code 422}s: the new code still computes the old version for
 * the rows that carry it, until retention has removed them. A version this code does not know (written by a newer
 * release, then rolled back) is never guessed at: {@link UnknownFingerprintVersionException}.
 *
 * <p>Versions: 1 is SHA-256 of {@code METHOD path\nbody}; 2 is SHA-256 of the same three fields under a domain
 * prefix, one per line, so that no digest of one version can be taken for one of another.
 */
public final class Fingerprint {

    /** The newest version this code computes; what new rows are written with unless configured otherwise. */
    public static final int LATEST_VERSION = 2;

    private final String method;
    private final String path;
    private final String canonicalBody;
    /** Each version's stored form, computed at most once: a claim that meets its row compares after it inserted. */
    private final String[] stored = new String[LATEST_VERSION + 1];

    private Fingerprint(String method, String path, String canonicalBody) {
        this.method = method;
        this.path = path;
        this.canonicalBody = canonicalBody;
    }

    public static Fingerprint of(String method, String path, String canonicalBody) {
        return new Fingerprint(method, path, canonicalBody);
    }

    /** The stored form of the latest version. */
    public String stored() {
        return stored(LATEST_VERSION);
    }

    /** The stored form of this request's fingerprint in {@code version}. */
    public String stored(int version) {
        if (version >= 1 && version <= LATEST_VERSION && stored[version] != null) {
            return stored[version];
        }
        String form = switch (version) {
            case 1 -> sha256Hex(method + ' ' + path + '\n' + canonicalBody);
            case 2 -> "v2:" + sha256Hex("chargeonce-fingerprint-v2\n" + method + '\n' + path + '\n' + canonicalBody);
            default -> throw new UnknownFingerprintVersionException(version);
        };
        stored[version] = form;
        return form;
    }

    /** Whether a stored fingerprint, of whichever version it was written in, is this request's. */
    public boolean matches(String stored) {
        return MessageDigest.isEqual(stored(versionOf(stored)).getBytes(StandardCharsets.US_ASCII),
                stored.getBytes(StandardCharsets.US_ASCII));
    }

    /** The version a stored fingerprint was written in: {@code v<n>:} in front, none for version 1. */
    static int versionOf(String stored) {
        int colon = stored.indexOf(':');
        if (colon < 0) {
            return 1;
        }
        try {
            if (stored.charAt(0) == 'v') {
                return Integer.parseInt(stored, 1, colon, 10);
            }
        } catch (NumberFormatException e) {
            // falls through to the refusal below
        }
        throw new UnknownFingerprintVersionException(-1);
    }

    /**
     * The SHA-256 every digest here is cloned from (it is never updated itself): {@code MessageDigest.getInstance}
     * looks the provider and the algorithm's constraints up on every call, about 1% of a replay's CPU in the profile
     * of the cost-of-exactly-once runs (two digests per request: the API key and the request's fingerprint).
     */
    private static final MessageDigest SHA_256;

    static {
        try {
            SHA_256 = MessageDigest.getInstance("SHA-256");
            SHA_256.clone(); // the JDK's is cloneable; fail at start-up, not on the first request, if one is not
        } catch (NoSuchAlgorithmException | CloneNotSupportedException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    public static String sha256Hex(String text) {
        return HexFormat.of().formatHex(sha256(text));
    }

    static byte[] sha256(String text) {
        MessageDigest sha256;
        try {
            sha256 = (MessageDigest) SHA_256.clone();
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException("checked when the class loaded", e);
        }
        return sha256.digest(text.getBytes(StandardCharsets.UTF_8));
    }

    /** A stored fingerprint of a version this code cannot compute: comparing it would guess. */
    public static final class UnknownFingerprintVersionException extends IllegalStateException {
        UnknownFingerprintVersionException(int version) {
            super("a stored fingerprint of unknown version " + (version < 0 ? "(malformed)" : version)
                    + ": a newer release wrote it; roll forward (this release cannot compare it)");
        }
    }

    @Override
    public String toString() {
        return "Fingerprint[" + stored().substring(0, 15) + "…]";
    }
}

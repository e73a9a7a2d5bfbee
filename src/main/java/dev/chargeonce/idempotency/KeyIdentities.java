package dev.chargeonce.idempotency;

import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A key's identity: what its row is found by (unique with the client) and what Stripe sees of it (the
 * {@code chargeonce_key} metadata and, with the attempt, the Stripe idempotency key). The database stores this, never
 * the key: a dump of {@code stripe_intents} tells nothing of the keys clients sent, not even a guessable one
 * ({@code order-1234}), because the identity is a keyed hash and the secret is not in the database.
 *
 * <p>Versions: {@code 0} is the unkeyed SHA-256 of {@code [refund\n]client\nkey} (48 hex digits) that releases
 * before V1.13.0 wrote; {@code n} from 1 to 999 is {@code k<n, three digits>-} followed by 48 hex digits of
 * HMAC-SHA256 under secret {@code n} of the same text ({@code k001-…}). The version is part of the identity, so every
 * row says which secret made it, and the rows of a version are one range of the unique index in any collation (the
 * letters and digits before the first hex digit decide: version 0 sorts before {@code g}, version n from
 * {@code k<n>} to {@code k<n+1>}), which is how {@link Upkeep#identityVersionsInUse} finds them.
 *
 * <p>New rows are written under one version ({@code key-hash-version}); rows written under the others in
 * {@code key-hash-read-versions} are still found (a dual read), so a new secret never turns a retry of an older key
 * into a second charge. A row keeps the identity it was claimed under for life: its Stripe keys are derived from the
 * stored identity, never recomputed. How to move a fleet from one version to another without downtime is in the
 * README ("Keys stored hashed").
 */
@ApplicationScoped
@io.quarkus.runtime.Startup // a configuration without its secret stops the start, not the first claim
public class KeyIdentities {

    /** The version of releases before V1.13.0: no secret. */
    public static final int UNKEYED = 0;
    public static final int MAX_VERSION = 999;
    private static final int SECRET_MIN_BYTES = 32;
    private static final HexFormat HEX = HexFormat.of();

    private final int writeVersion;
    /** Write version first, then each read version: the identities a lookup tries. */
    private final List<Integer> lookupVersions;
    private final Map<Integer, byte[]> secrets;
    /** Each keyed version's MAC, initialized once: a claim clones it (cheaper than a provider lookup and a key setup). */
    private final Map<Integer, Mac> macs = new java.util.HashMap<>();
    private final boolean mixedWriters;

    @jakarta.inject.Inject
    KeyIdentities(IdempotencyConfig config) {
        this(config.keyHashVersion().orElseThrow(() -> new IllegalStateException(
                        "set chargeonce.idempotency.key-hash-version (CHARGEONCE_KEY_HASH_VERSION): 1 for a new installation,"
                        + " 0 for the first rollout over a fleet of a release before V1.13.0 (README, \"Keys stored hashed\")")),
                parseVersions(config.keyHashReadVersions()),
                parseSecrets(config.keyHashSecrets().orElse(List.of())), config.keyHashMixedWriters());
    }

    /** For tests and tools: the identities of a configuration, checked as at start-up. */
    public KeyIdentities(int writeVersion, List<Integer> readVersions, Map<Integer, byte[]> secrets, boolean mixedWriters) {
        List<Integer> lookup = new ArrayList<>();
        lookup.add(writeVersion);
        for (int v : readVersions) {
            if (!lookup.contains(v)) {
                lookup.add(v);
            }
        }
        for (int v : lookup) {
            if (v < 0 || v > MAX_VERSION) {
                throw new IllegalStateException("chargeonce.idempotency.key-hash-version and -read-versions are 0 to "
                        + MAX_VERSION + ": " + v);
            }
            if (v != UNKEYED && !secrets.containsKey(v)) {
                throw new IllegalStateException("no secret for key hash version " + v + ": add " + v
                        + ":<base64 of at least " + SECRET_MIN_BYTES + " random bytes> to chargeonce.idempotency.key-hash-secrets"
                        + " (CHARGEONCE_KEY_HASH_SECRETS; README, \"Keys stored hashed\")");
            }
        }
        for (int v : lookup) {
            if (v != UNKEYED) {
                macs.put(v, newMac(secrets.get(v)));
            }
        }
        this.writeVersion = writeVersion;
        this.lookupVersions = List.copyOf(lookup);
        this.secrets = Map.copyOf(secrets);
        this.mixedWriters = mixedWriters;
    }

    /** The identity new rows of this key get: under the write version. */
    public String of(Operation op, String clientId, IdempotencyKey key) {
        return identity(writeVersion, op, clientId, key.value());
    }

    /** Every identity the key's row may have, the write version's first: one when no other version is read. */
    public List<String> lookup(Operation op, String clientId, IdempotencyKey key) {
        if (lookupVersions.size() == 1) {
            return List.of(of(op, clientId, key));
        }
        List<String> all = new ArrayList<>(lookupVersions.size());
        for (int v : lookupVersions) {
            all.add(identity(v, op, clientId, key.value()));
        }
        return all;
    }

    /**
     * Whether instances writing another version may be claiming now (a rollout of a new version): then a new key's
     * claim first takes a lock named by {@link #lockName}, the same for every version, so that two claims of one key
     * under two versions take turns instead of inserting two rows (their identities differ, so the unique index
     * cannot tell them apart).
     */
    public boolean mixedWriters() {
        return mixedWriters;
    }

    /**
     * The name of a key's claim lock while writers differ: 32 bits of the key's version-0 hash, which needs no secret,
     * so that every instance computes the same name whatever versions it writes and reads (two instances whose
     * read lists differ would otherwise lock under two names and not take turns). It is visible in
     * {@code pg_locks} for the milliseconds a claim holds it; 32 bits confirm a guess no more than they would in a
     * log, and only to whoever may read the database's lock table.
     */
    public int lockName(Operation op, String clientId, IdempotencyKey key) {
        String identity = compute(UNKEYED, null, op, clientId, key.value());
        return (int) Long.parseLong(identity.substring(40, 48), 16);
    }

    /** Every version this instance looks up (the write version first). */
    public List<Integer> lookupVersions() {
        return lookupVersions;
    }

    /**
     * Whether this instance holds the schema at V1.13.0 ({@link KeyVersionsCheck}): the first two steps of the
     * upgrade from a release before it. The tables of later migrations may then be missing, and what needs them is
     * off on this instance: refunds made outside the service are neither recorded nor counted here (the instances of
     * step 3 do both).
     */
    public boolean schemaHeldBeforeKeysErased() {
        return storesKeys() || mixedWriters();
    }

    /**
     * Whether new rows keep the key itself: only while this instance writes version 0, the first step of the upgrade
     * from a release before V1.13.0, when instances of that release still run and may adopt an HTTP row for a Kafka
     * command (they publish its result under the stored key). V1.14.0 erases them once no such instance runs.
     */
    public boolean storesKeys() {
        return writeVersion == UNKEYED;
    }

    /**
     * A short tag of a raw key for the logs (to follow one key's requests), keyed like the identity: never the
     * unkeyed hash of the key, which a log reader could match against a guess.
     */
    public String logTag(String clientId, String rawKey) {
        String identity = identity(writeVersion, Operation.CHARGE, clientId, rawKey);
        return identity.substring(identity.length() - 16);
    }

    private String identity(int version, Operation op, String clientId, String key) {
        if (version == UNKEYED) {
            return compute(version, null, op, clientId, key);
        }
        try {
            return keyed(version, (Mac) macs.get(version).clone(), op, clientId, key);
        } catch (CloneNotSupportedException e) {
            return compute(version, secrets.get(version), op, clientId, key);
        }
    }

    /** The identity of {@code key} under {@code version} (whose secret is {@code secret}; null for version 0). */
    public static String compute(int version, byte[] secret, Operation op, String clientId, String key) {
        if (version == UNKEYED) {
            return Fingerprint.sha256Hex(text(op, clientId, key)).substring(0, 48);
        }
        return keyed(version, newMac(secret), op, clientId, key);
    }

    private static String text(Operation op, String clientId, String key) {
        return (op == Operation.REFUND ? "refund\n" : "") + clientId + '\n' + key;
    }

    private static String keyed(int version, Mac mac, Operation op, String clientId, String key) {
        byte[] digest = mac.doFinal(text(op, clientId, key).getBytes(StandardCharsets.UTF_8));
        return "k" + String.format("%03d", version) + "-" + HEX.formatHex(digest, 0, 24);
    }

    private static Mac newMac(byte[] secret) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
        }
    }

    /** {@code 1:<base64>,2:<base64>}: each version's secret, at least 32 bytes once decoded. */
    public static Map<Integer, byte[]> parseSecrets(List<String> entries) {
        Map<Integer, byte[]> secrets = new LinkedHashMap<>();
        for (String entry : entries) {
            String trimmed = entry.trim();
            if (trimmed.isEmpty()) {
                continue;
            }
            int colon = trimmed.indexOf(':');
            int version;
            byte[] secret;
            try {
                version = Integer.parseInt(trimmed.substring(0, Math.max(colon, 0)));
                secret = Base64.getDecoder().decode(trimmed.substring(colon + 1));
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException("chargeonce.idempotency.key-hash-secrets: each entry is <version>:<base64>"
                        + " (the entry at position " + (secrets.size() + 1) + " is not)");
            }
            if (version < 1) {
                throw new IllegalStateException("chargeonce.idempotency.key-hash-secrets: versions start at 1 (0 has no secret)");
            }
            if (secret.length < SECRET_MIN_BYTES) {
                throw new IllegalStateException("chargeonce.idempotency.key-hash-secrets: version " + version + "'s secret has "
                        + secret.length + " bytes; use at least " + SECRET_MIN_BYTES + " random ones (openssl rand -base64 32)");
            }
            if (secrets.put(version, secret) != null) {
                throw new IllegalStateException("chargeonce.idempotency.key-hash-secrets: version " + version + " twice");
            }
        }
        return secrets;
    }

    /** {@code none}, or versions separated by commas. */
    static List<Integer> parseVersions(String versions) {
        List<Integer> parsed = new ArrayList<>();
        if (versions.isBlank() || versions.trim().equals("none")) {
            return parsed;
        }
        for (String v : versions.split(",")) {
            try {
                parsed.add(Integer.parseInt(v.trim()));
            } catch (NumberFormatException e) {
                throw new IllegalStateException("chargeonce.idempotency.key-hash-read-versions: 'none' or versions separated"
                        + " by commas, not '" + versions + "'");
            }
        }
        return parsed;
    }
}

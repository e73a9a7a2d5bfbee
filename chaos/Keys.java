package chaos;

import dev.chargeonce.testing.TestClients;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The run's API clients and secrets, and the identities keys get. The clients and their API keys are the test
 * suite's ({@link TestClients}): both targets accept them. The identities are computed here, independently of the
 * service's own code (KeyIdentities), so that the audit does not take the word of the code it audits.
 */
final class Keys {

    private Keys() {
    }

    static final String ACME = TestClients.ACME;
    static final String ACME_KEY = TestClients.ACME_KEY;
    static final String GLOBEX = TestClients.GLOBEX;
    static final String GLOBEX_KEY = TestClients.GLOBEX_KEY;
    /**
     * The webhook endpoint's signing secrets: the instances accept both (a rotation in progress), the stand-in signs
     * with the newer one. The naive control has no webhook endpoint: its stand-in delivers no events.
     */
    static final String WEBHOOK_SECRET = "whsec_chaos_current";
    static final String WEBHOOK_SECRETS = "whsec_chaos_previous," + WEBHOOK_SECRET;

    /** {@code chargeonce.auth.clients} of both targets: the clients and the SHA-256 of their API keys. */
    static String clientsConfig() {
        return TestClients.config();
    }

    /** The key-hash secret (version 1) the instances are given: chargeonce.idempotency.key-hash-secrets. */
    static final String KEY_HASH_SECRET = "Y2hhcmdlb25jZSBjaGFvcyBrZXkgaGFzaCBzZWNyZXQsIHYx";
    /** Every key of this run by its identity: the rows keep only the identity (KeyIdentities), the audit needs the key. */
    static final Map<String, String> KEYS_BY_IDENTITY = new ConcurrentHashMap<>();

    /** KeyIdentities, version 1: "k001-" and 48 hex characters of HMAC-SHA256(secret, client + "\n" + Idempotency-Key). */
    static String identity(String client, String key) {
        return remember(hmacIdentity(client + "\n" + key), key);
    }

    /** The same of "refund\n" + client + "\n" + refund key. */
    static String refundIdentity(String client, String key) {
        return remember(hmacIdentity("refund\n" + client + "\n" + key), key);
    }

    private static String remember(String identity, String key) {
        if (key != null) { // a row of no key of this run (the audit reports it) has nothing to remember
            KEYS_BY_IDENTITY.put(identity, key);
        }
        return identity;
    }

    private static String hmacIdentity(String text) {
        try {
            javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
            mac.init(new javax.crypto.spec.SecretKeySpec(java.util.Base64.getDecoder().decode(KEY_HASH_SECRET), "HmacSHA256"));
            return "k001-" + HexFormat.of().formatHex(mac.doFinal(text.getBytes(StandardCharsets.UTF_8))).substring(0, 48);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * What a row's key column holds: this service keeps the identity (the key is looked up among the run's), the
     * naive control the key itself.
     */
    static String keyColumn(Variant variant) {
        return variant == Variant.CHARGEONCE ? "stripe_identity" : "idempotency_key";
    }

    static String keyOf(Variant variant, String column) {
        return variant == Variant.CHARGEONCE ? KEYS_BY_IDENTITY.get(column) : column;
    }
}

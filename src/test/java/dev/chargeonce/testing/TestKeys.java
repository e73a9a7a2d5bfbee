package dev.chargeonce.testing;

import dev.chargeonce.idempotency.KeyIdentities;
import dev.chargeonce.idempotency.Operation;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * The key-hash secrets every test environment configures (application.properties' {@code %test} values, and what
 * {@link ProcessEnvironment} passes the packaged service), and the identities they give a client's key: how a test
 * finds a row, or a PaymentIntent at the sandbox, by the key it sent.
 */
public final class TestKeys {

    /** Version 1's secret: the one rows are written under. */
    public static final String SECRET_1 = "Y2hhcmdlb25jZSB0ZXN0IGtleSBoYXNoIHNlY3JldCwgdjE=";
    /** Version 2's, for the tests of a change of version. */
    public static final String SECRET_2 = "Y2hhcmdlb25jZSB0ZXN0IGtleSBoYXNoIHNlY3JldCwgdjI=";
    /** {@code chargeonce.idempotency.key-hash-secrets} with both. */
    public static final String SECRETS = "1:" + SECRET_1 + ",2:" + SECRET_2;

    private TestKeys() {
    }

    /** The identity of a charge's key as the service writes it (version 1). */
    public static String identity(String clientId, String key) {
        return KeyIdentities.compute(1, Base64.getDecoder().decode(SECRET_1), Operation.CHARGE, clientId, key);
    }

    /** The identity of a refund's key as the service writes it (version 1). */
    public static String refundIdentity(String clientId, String key) {
        return KeyIdentities.compute(1, Base64.getDecoder().decode(SECRET_1), Operation.REFUND, clientId, key);
    }

    /** The identities of a configuration (as {@code chargeonce.idempotency.key-hash-*} would make them). */
    public static KeyIdentities identities(int writeVersion, List<Integer> readVersions, boolean mixedWriters) {
        return new KeyIdentities(writeVersion, readVersions, KeyIdentities.parseSecrets(List.of(SECRETS.split(","))), mixedWriters);
    }

    /** Every identity a key may have under versions 0, 1 and 2. */
    public static List<String> allIdentities(String clientId, String key) {
        KeyIdentities all = identities(1, List.of(0, 2), false);
        return all.lookup(Operation.CHARGE, clientId, new dev.chargeonce.idempotency.IdempotencyKey(key));
    }

    public static Map<String, String> config() {
        return Map.of("chargeonce.idempotency.key-hash-version", "1",
                "chargeonce.idempotency.key-hash-secrets", SECRETS);
    }
}

package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.TestKeys;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The identities of a key under each version, and the configurations the service refuses to start with. */
class KeyIdentitiesTest {

    static final IdempotencyKey KEY = new IdempotencyKey("order-1234");

    @Test
    void versionZeroIsTheUnkeyedHashOfTheReleasesBefore() {
        // The formula of V1.8.0's backfill and of every release before V1.13.0: rows they wrote are found by it.
        assertEquals(Fingerprint.sha256Hex("acme\norder-1234").substring(0, 48),
                KeyIdentities.compute(0, null, Operation.CHARGE, "acme", "order-1234"));
        assertEquals(Fingerprint.sha256Hex("refund\nacme\norder-1234").substring(0, 48),
                KeyIdentities.compute(0, null, Operation.REFUND, "acme", "order-1234"));
    }

    @Test
    void aKeyedIdentityNamesItsVersionAndDependsOnTheSecret() {
        KeyIdentities one = TestKeys.identities(1, List.of(), false);
        KeyIdentities two = TestKeys.identities(2, List.of(), false);
        String underOne = one.of(Operation.CHARGE, "acme", KEY);
        assertTrue(underOne.matches("k001-[0-9a-f]{48}"), underOne);
        assertTrue(two.of(Operation.CHARGE, "acme", KEY).matches("k002-[0-9a-f]{48}"));
        assertNotEquals(underOne.substring(5), two.of(Operation.CHARGE, "acme", KEY).substring(5));
        assertNotEquals(underOne, one.of(Operation.CHARGE, "globex", KEY), "the client is part of it");
        assertNotEquals(underOne, one.of(Operation.REFUND, "acme", KEY), "a refund key has an identity of its own");
        assertEquals(List.of(underOne), one.lookup(Operation.CHARGE, "acme", KEY), "one version: one identity");
    }

    @Test
    void aDualReadLooksUpTheWriteVersionFirst() {
        KeyIdentities stepTwo = TestKeys.identities(1, List.of(0), true);
        assertEquals(List.of(KeyIdentities.compute(1, Base64.getDecoder().decode(TestKeys.SECRET_1), Operation.CHARGE, "acme", "order-1234"),
                KeyIdentities.compute(0, null, Operation.CHARGE, "acme", "order-1234")), stepTwo.lookup(Operation.CHARGE, "acme", KEY));
        // Both steps of a rollout lock a key under the same name, or their claims would not take turns: also when
        // their read lists differ (a change from 1 to 2 while rows of 0 are still kept, one step reading 0 and not
        // the other).
        KeyIdentities stepOne = TestKeys.identities(0, List.of(1), true);
        assertEquals(stepOne.lockName(Operation.CHARGE, "acme", KEY), stepTwo.lockName(Operation.CHARGE, "acme", KEY));
        assertEquals(TestKeys.identities(1, List.of(2, 0), true).lockName(Operation.CHARGE, "acme", KEY),
                TestKeys.identities(2, List.of(1), true).lockName(Operation.CHARGE, "acme", KEY));
        assertNotEquals(stepOne.lockName(Operation.CHARGE, "acme", KEY), stepOne.lockName(Operation.CHARGE, "acme", new IdempotencyKey("order-1235")));
    }

    @Test
    void aVersionWithoutItsSecretOrAWeakSecretIsRefused() {
        IllegalStateException missing = assertThrows(IllegalStateException.class,
                () -> new KeyIdentities(3, List.of(), KeyIdentities.parseSecrets(List.of(TestKeys.SECRETS.split(","))), false));
        assertTrue(missing.getMessage().contains("no secret for key hash version 3"), missing.getMessage());
        assertThrows(IllegalStateException.class,
                () -> new KeyIdentities(1, List.of(2), KeyIdentities.parseSecrets(List.of("1:" + TestKeys.SECRET_1)), false),
                "a read version needs its secret too");
        IllegalStateException weak = assertThrows(IllegalStateException.class,
                () -> KeyIdentities.parseSecrets(List.of("1:" + Base64.getEncoder().encodeToString("short".getBytes()))));
        assertTrue(weak.getMessage().contains("at least 32"), weak.getMessage());
        assertThrows(IllegalStateException.class, () -> KeyIdentities.parseSecrets(List.of("not-base64")));
        assertThrows(IllegalStateException.class, () -> KeyIdentities.parseSecrets(List.of("0:" + TestKeys.SECRET_1)));
        assertEquals(Map.of(), KeyIdentities.parseSecrets(List.of()));
        assertEquals(List.of(0, 2), KeyIdentities.parseVersions("0, 2"));
        assertEquals(List.of(), KeyIdentities.parseVersions("none"));
    }
}

package dev.chargeonce.auth;

import io.quarkus.elytron.security.common.BcryptUtil;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.wildfly.security.password.Password;
import org.wildfly.security.password.PasswordFactory;
import org.wildfly.security.password.WildFlyElytronPasswordProvider;
import org.wildfly.security.password.util.ModularCrypt;

/**
 * Operators' passwords, from {@code chargeonce.auth.operators}: {@code name:bcrypt-hash,...}. A name may appear more
 * than once (a machine credential being rotated: the old and the new password both open until the old entry is
 * removed). Only slow, salted hashes are accepted: whoever reads the configuration must still guess each password at
 * bcrypt's pace. Make a hash with {@code htpasswd -nbBC 12 "" '<password>' | cut -d: -f2} (Debian's
 * apache2-utils) or {@code java -cp '<quarkus-app>/lib/main/*:<quarkus-app>/app/*' dev.chargeonce.auth.OperatorCredentials}.
 *
 * <p>A successful check is remembered for {@link #REMEMBERED_NANOS}, under an HMAC of the credential with a key that
 * never leaves this process: an operator's next requests cost no bcrypt, and are never throttled however busy a
 * guesser of their name is ({@link FailedAuthentications}). Only credentials that passed are remembered, so nobody
 * can fill the map with guesses.
 */
@ApplicationScoped
public class OperatorCredentials {

    private static final long REMEMBERED_NANOS = java.time.Duration.ofMinutes(10).toNanos();
    private static final WildFlyElytronPasswordProvider PROVIDER = new WildFlyElytronPasswordProvider();

    /** A hash no password matches, checked for unknown names so that they cost as much as known ones. */
    private static final Password DECOY = decode(BcryptUtil.bcryptHash(new String(randomBytes(24), StandardCharsets.ISO_8859_1), 10));

    private final Map<String, List<Password>> passwordsByName = new HashMap<>();
    private final Map<String, Long> rememberedUntil = new ConcurrentHashMap<>();
    private final byte[] rememberKey = randomBytes(32);

    OperatorCredentials(@ConfigProperty(name = "chargeonce.auth.operators", defaultValue = " ") String operators) {
        for (String entry : operators.split(",")) {
            String trimmed = entry.trim();
            if (trimmed.isEmpty()) {
                continue;
            }
            int colon = trimmed.indexOf(':');
            String hash = colon <= 0 ? "" : trimmed.substring(colon + 1);
            if (!hash.matches("\\$2[aby]\\$\\d\\d\\$[./A-Za-z0-9]{53}")) {
                throw new IllegalArgumentException("chargeonce.auth.operators: expected name:bcrypt-hash ($2a$, $2b$ or $2y$) per "
                        + "entry; make one with: htpasswd -nbBC 12 \"\" '<password>' | cut -d: -f2");
            }
            passwordsByName.computeIfAbsent(trimmed.substring(0, colon), n -> new ArrayList<>()).add(decode(hash));
        }
    }

    /** Whether any operator is configured (none: the console and the admin API stay closed). */
    boolean any() {
        return !passwordsByName.isEmpty();
    }

    /** Whether this credential passed {@link #check} within the last minutes: cheap, no bcrypt. */
    boolean remembered(String name, String password) {
        Long until = rememberedUntil.get(rememberTag(name, password));
        return until != null && until - System.nanoTime() > 0;
    }

    /** The slow check: bcrypt against each of the name's hashes (an unknown name costs the same). */
    boolean check(String name, String password) {
        List<Password> hashes = passwordsByName.getOrDefault(name, List.of(DECOY));
        boolean matched = false;
        for (Password hash : hashes) {
            matched |= verify(hash, password);
        }
        if (matched) {
            long now = System.nanoTime();
            rememberedUntil.values().removeIf(until -> until - now <= 0);
            rememberedUntil.put(rememberTag(name, password), now + REMEMBERED_NANOS);
        }
        return matched;
    }

    private static boolean verify(Password hash, String password) {
        try {
            PasswordFactory factory = PasswordFactory.getInstance(hash.getAlgorithm(), PROVIDER);
            return factory.verify(factory.translate(hash), password.toCharArray());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("bcrypt is unavailable", e);
        }
    }

    private static Password decode(String hash) {
        try {
            // $2b$ differs from $2a$ only for passwords over 255 bytes, which Elytron's bcrypt treats alike.
            return ModularCrypt.decode(hash.startsWith("$2b$") ? "$2a$" + hash.substring(4) : hash);
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("chargeonce.auth.operators: not a bcrypt hash", e);
        }
    }

    private String rememberTag(String name, String password) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(rememberKey, "HmacSHA256"));
            mac.update(name.getBytes(StandardCharsets.UTF_8));
            mac.update((byte) 0);
            return java.util.HexFormat.of().formatHex(mac.doFinal(password.getBytes(StandardCharsets.UTF_8)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] randomBytes(int n) {
        byte[] bytes = new byte[n];
        new SecureRandom().nextBytes(bytes);
        return bytes;
    }

    /** Prints the bcrypt hash (cost 12) of the password read from standard input, for {@code chargeonce.auth.operators}. */
    public static void main(String[] args) throws java.io.IOException {
        String password = new String(System.in.readAllBytes(), StandardCharsets.UTF_8).strip();
        if (password.length() < 12) {
            System.err.println("a password of at least 12 characters, please");
            System.exit(2);
        }
        System.out.println(BcryptUtil.bcryptHash(password, 12));
    }
}

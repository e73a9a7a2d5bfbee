package dev.chargeonce.console;

import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The console's forms carry a token bound to the operator: a browser sends an operator's Basic credentials to any
 * page that asks, so a form posted from another site must not act in their name (cross-site request forgery).
 * HMAC-SHA256 of the operator's name with {@code chargeonce.console.form-secret} (random per process when unset:
 * every instance behind a load balancer needs the same one).
 */
@ApplicationScoped
public class FormTokens {

    private final byte[] secret;

    FormTokens(@ConfigProperty(name = "chargeonce.console.form-secret") Optional<String> configured) {
        if (configured.isPresent() && !configured.get().isBlank()) {
            secret = configured.get().getBytes(StandardCharsets.UTF_8);
        } else {
            secret = new byte[32];
            new SecureRandom().nextBytes(secret);
        }
    }

    String tokenFor(String operator) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            return HexFormat.of().formatHex(mac.doFinal(("console-form\n" + operator).getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException(e);
        }
    }

    void check(String operator, String token) {
        if (token == null || !MessageDigest.isEqual(tokenFor(operator).getBytes(StandardCharsets.US_ASCII),
                token.getBytes(StandardCharsets.US_ASCII))) {
            throw new ApiException(403, "authentication_error", "form_token_invalid",
                    "This form was not served to you by the console; reload the page and try again.", null, null);
        }
    }
}

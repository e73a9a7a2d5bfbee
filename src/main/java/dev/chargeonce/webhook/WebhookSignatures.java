package dev.chargeonce.webhook;

import com.stripe.exception.SignatureVerificationException;
import com.stripe.net.Webhook;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Clock;
import java.util.List;

/**
 * {@code Stripe-Signature} as Stripe defines it, checked with the SDK over the raw body against every configured
 * secret (a rotation has two). The SDK refuses timestamps older than the tolerance; a timestamp further in the future
 * than it is refused here too (the SDK does not look): a captured request cannot be kept for later either way.
 */
@ApplicationScoped
class WebhookSignatures {

    private final StripeConfig config;
    private final Clock clock;

    @jakarta.inject.Inject
    WebhookSignatures(StripeConfig config) {
        this(config, Clock.systemUTC());
    }

    WebhookSignatures(StripeConfig config, Clock clock) {
        this.config = config;
        this.clock = clock;
    }

    /** Returns normally when one secret signed {@code payload} recently enough; otherwise a 400 in the API's shape. */
    void verify(String payload, String header) {
        if (header == null || header.isBlank()) {
            throw invalid("signature_missing", "The Stripe-Signature header is missing.");
        }
        long timestamp = timestamp(header);
        long tolerance = config.webhookTolerance().toSeconds();
        long now = clock.millis() / 1000;
        if (timestamp > now + tolerance) {
            throw invalid("signature_timestamp_invalid", "The signed timestamp is in the future.");
        }
        List<String> secrets = config.webhookSecret().orElse(List.of());
        boolean signedButTooOld = false;
        for (String secret : secrets) {
            try {
                Webhook.Signature.verifyHeader(payload, header, secret.trim(), tolerance, clock);
                return;
            } catch (SignatureVerificationException e) {
                // The SDK checks the signature first, then the age: "outside the tolerance zone" means it matched.
                signedButTooOld |= e.getMessage() != null && e.getMessage().contains("tolerance");
            }
        }
        if (signedButTooOld) {
            throw invalid("signature_timestamp_invalid", "The signed timestamp is too old.");
        }
        throw invalid("signature_invalid", "The Stripe-Signature does not match the body for any configured secret.");
    }

    private static long timestamp(String header) {
        for (String part : header.split(",")) {
            String[] pair = part.trim().split("=", 2);
            if (pair.length == 2 && pair[0].equals("t")) {
                try {
                    return Long.parseLong(pair[1].trim());
                } catch (NumberFormatException e) {
                    break;
                }
            }
        }
        throw invalid("signature_invalid", "The Stripe-Signature header has no timestamp.");
    }

    private static ApiException invalid(String code, String message) {
        return ApiException.invalidRequest(code, message, "Stripe-Signature");
    }
}

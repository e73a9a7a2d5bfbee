package dev.chargeonce.console;

import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The tokens of the console's forms, against cross-site request forgery: a browser sends an operator's credentials
 * to any page that asks, so a form posted from another site must not act in their name. A token is
 * {@code <issued-at millis>.<HMAC-SHA256>} over the operator, the browser session, the form it was served for (its
 * action path: {@code rows/charge/chg_…/attach}, {@code findings/17/acknowledge}) and its issue time, keyed by
 * {@code chargeonce.console.form-secret}. It is refused from another browser session, on another form or row, once
 * older than {@code chargeonce.console.form-token-ttl}, or altered. The browser session is a random id in a cookie
 * ({@link #SESSION_COOKIE}: {@code __Host-}, so only this origin over HTTPS (or localhost) sets it, for the whole
 * origin; HttpOnly, so no script reads it; SameSite=Lax, so no
 * request another site starts carries it but a link's navigation: an operator who follows an alert's link, or comes
 * back from the OpenID Connect provider, keeps the session, and the forms open in other tabs keep working). Nothing is
 * stored on the server: any instance holding the same secret checks any instance's tokens.
 *
 * <p>Why not Quarkus' {@code quarkus-rest-csrf}: it brings the Qute extension with it ({@code quarkus-rest-qute}),
 * which this service leaves out on purpose (see the pom); its token is a random value in a cookie repeated in the form
 * (double submit), bound to neither the operator nor a form; and its only expiry is the cookie's max-age, which the
 * browser keeps, not the server: a token is not refused for its age, nor for being used on another form.
 *
 * <p>What it does not do: stop a form being sent twice within its lifetime. The action's fencing by the row's lease
 * generation does that: a form for a generation that has moved on changes nothing, however often it comes.
 */
@ApplicationScoped
public class FormTokens {

    /** The console's browser-session cookie. */
    public static final String SESSION_COOKIE = "__Host-chargeonce-console";
    /** Two instances' clocks may disagree by this much: a token issued that far in the future is still taken. */
    static final Duration CLOCK_SKEW = Duration.ofMinutes(1);
    private static final Pattern SESSION = Pattern.compile("[A-Za-z0-9_-]{43}");
    private static final Pattern TOKEN = Pattern.compile("([0-9]{1,15})\\.([A-Za-z0-9_-]{43})");

    private final byte[] secret;
    private final Duration ttl;
    private final SecureRandom random = new SecureRandom();

    FormTokens(@ConfigProperty(name = "chargeonce.console.form-secret") Optional<String> configured,
               @ConfigProperty(name = "chargeonce.console.form-token-ttl", defaultValue = "30m") Duration ttl) {
        if (configured.isPresent() && !configured.get().isBlank()) {
            secret = configured.get().getBytes(StandardCharsets.UTF_8);
        } else {
            secret = new byte[32];
            random.nextBytes(secret);
        }
        if (ttl.isNegative() || ttl.isZero()) {
            throw new IllegalArgumentException("chargeonce.console.form-token-ttl: a form token must live a while (30m is usual)");
        }
        this.ttl = ttl;
    }

    /** A new browser session's id: 32 random bytes. */
    String newSession() {
        byte[] id = new byte[32];
        random.nextBytes(id);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(id);
    }

    /** Whether a cookie's value is a session id this class could have made (anything else starts a new session). */
    static boolean isSession(String value) {
        return value != null && SESSION.matcher(value).matches();
    }

    /** The {@code Set-Cookie} value that opens {@code session} in the browser, until the browser closes. */
    static String sessionCookie(String session) {
        return SESSION_COOKIE + "=" + session + "; Path=/; Secure; HttpOnly; SameSite=Lax";
    }

    /** The token for {@code form}, served now to {@code operator} in browser session {@code session}. */
    String issue(String operator, String session, String form) {
        long now = Instant.now().toEpochMilli();
        return now + "." + Base64.getUrlEncoder().withoutPadding().encodeToString(mac(operator, session, form, now));
    }

    /** Lets a form through, or refuses it with a {@code 403} that says to reload the page. */
    void check(String operator, String session, String form, String token) {
        if (!isSession(session)) {
            throw refused("form_token_invalid", "This form came without the console's session cookie (the console needs HTTPS, or"
                    + " localhost); reload the page and try again.");
        }
        Matcher parts = TOKEN.matcher(token == null ? "" : token);
        if (!parts.matches()) {
            throw invalid();
        }
        long issued = Long.parseLong(parts.group(1));
        byte[] given = Base64.getUrlDecoder().decode(parts.group(2));
        if (!MessageDigest.isEqual(mac(operator, session, form, issued), given)) {
            throw invalid();
        }
        Instant issuedAt = Instant.ofEpochMilli(issued);
        Instant now = Instant.now();
        if (issuedAt.isAfter(now.plus(CLOCK_SKEW))) {
            throw invalid();
        }
        if (issuedAt.plus(ttl).isBefore(now)) {
            throw refused("form_token_expired", "This form was served more than " + (ttl.toSecondsPart() == 0 && ttl.toMinutes() > 0
                    ? ttl.toMinutes() + " min" : ttl.toSeconds() + " s") + " ago; reload the page and try again.");
        }
    }

    private byte[] mac(String operator, String session, String form, long issuedMillis) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            // Each field with its length first: no two different tuples read as the same bytes.
            for (String field : new String[] {"console-form/2", operator, session, form, Long.toString(issuedMillis)}) {
                byte[] bytes = field.getBytes(StandardCharsets.UTF_8);
                mac.update((bytes.length + ":").getBytes(StandardCharsets.US_ASCII));
                mac.update(bytes);
            }
            return mac.doFinal();
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ApiException invalid() {
        return refused("form_token_invalid", "This form was not served to you by the console in this browser session; reload the"
                + " page and try again.");
    }

    private static ApiException refused(String code, String message) {
        return new ApiException(403, "authentication_error", code, message, null, null);
    }
}

package dev.chargeonce.auth;

import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.web.ApiException;
import jakarta.ws.rs.container.ContainerRequestContext;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.MDC;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;

/**
 * Operators, apart from API clients: HTTP Basic on {@code /console} and {@code /admin}, against
 * {@code chargeonce.auth.operators} ({@code name:sha256-hex-of-password,...}). A client's API key opens nothing
 * here, and an operator's password opens nothing under {@code /v1}. No operator configured: both stay closed.
 */
public class OperatorFilter {

    /** The request property holding the authenticated operator's name. */
    public static final String OPERATOR = "chargeonce.operator";

    /** The paths operators use: the console (HTML) and the admin API (JSON). */
    public static boolean isOperatorPath(String path) {
        return path.equals("/console") || path.startsWith("/console/") || path.startsWith("/admin/");
    }

    /** The authenticated operator of a request this filter let through. */
    public static String operator(ContainerRequestContext request) {
        return (String) request.getProperty(OPERATOR);
    }

    private final Map<String, byte[]> passwordHashByName = new HashMap<>();
    private final FailedAuthentications failures;

    OperatorFilter(@ConfigProperty(name = "chargeonce.auth.operators", defaultValue = " ") String operators,
                   FailedAuthentications failures) {
        this.failures = failures;
        for (String entry : operators.split(",")) {
            String trimmed = entry.trim();
            if (trimmed.isEmpty()) {
                continue;
            }
            int colon = trimmed.indexOf(':');
            String hash = colon <= 0 ? "" : trimmed.substring(colon + 1).toLowerCase();
            if (!hash.matches("[0-9a-f]{64}")) {
                throw new IllegalArgumentException("chargeonce.auth.operators: expected name:sha256-hex (64 hex digits) per entry");
            }
            passwordHashByName.put(trimmed.substring(0, colon), java.util.HexFormat.of().parseHex(hash));
        }
    }

    @ServerRequestFilter(preMatching = true, priority = jakarta.ws.rs.Priorities.AUTHENTICATION)
    public void authenticate(ContainerRequestContext request, io.vertx.core.http.HttpServerRequest connection) {
        String path = request.getUriInfo().getPath();
        if (!isOperatorPath(path)) {
            return;
        }
        String address = connection.remoteAddress() == null ? "unknown" : connection.remoteAddress().hostAddress();
        failures.blocked(address).ifPresent(wait -> {
            throw FailedAuthentications.tooMany(wait);
        });
        Optional<String> signedIn = operatorOf(request.getHeaderString("Authorization"));
        if (signedIn.isEmpty()) {
            failures.failed(address);
        }
        String operator = signedIn.orElseThrow(() -> new ApiException(401,
                "authentication_error", "operator_credentials_required",
                "Operators sign in with HTTP Basic (chargeonce.auth.operators); API keys do not open the console.", null, null));
        request.setProperty(OPERATOR, operator);
        MDC.put("operator", operator);
    }

    private Optional<String> operatorOf(String header) {
        if (header == null || !header.regionMatches(true, 0, "Basic ", 0, 6)) {
            return Optional.empty();
        }
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(header.substring(6).trim()), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        int colon = decoded.indexOf(':');
        if (colon <= 0) {
            return Optional.empty();
        }
        String name = decoded.substring(0, colon);
        byte[] expected = passwordHashByName.get(name);
        byte[] given = java.util.HexFormat.of().parseHex(Fingerprint.sha256Hex(decoded.substring(colon + 1)));
        // Constant time in the password; an unknown name still costs the same hash.
        return expected != null && MessageDigest.isEqual(expected, given) ? Optional.of(name) : Optional.empty();
    }
}

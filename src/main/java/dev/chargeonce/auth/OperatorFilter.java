package dev.chargeonce.auth;

import dev.chargeonce.web.ApiException;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.vertx.http.runtime.security.QuarkusHttpUser;
import io.smallrye.mutiny.Uni;
import io.vertx.ext.web.RoutingContext;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import jakarta.ws.rs.container.ContainerRequestContext;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.MDC;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;

/**
 * Operators, apart from API clients: HTTP Basic on {@code /console} and {@code /admin}, against the bcrypt hashes of
 * {@link OperatorCredentials}. A client's API key opens nothing here, and an operator's password opens nothing under
 * {@code /v1}. No operator configured: both stay closed.
 *
 * <p>With {@code chargeonce.console.oidc=true}, the console signs operators in with OpenID Connect instead (the
 * production option): Quarkus' OIDC code flow has already sent the browser to the identity provider and checked the
 * operator role before this filter runs ({@code quarkus.http.auth.permission.console-oidc}), and the session ends when
 * the provider's ID token does. Basic opens the console no more; the admin API keeps it, for scripts, whose machine
 * credentials rotate by listing a name twice.
 *
 * <p>A password is checked by bcrypt, which is slow on purpose (a tenth of a second of CPU), so never on the event loop:
 * on one thread of its own with a short queue, which also bounds what a flood of wrong passwords can cost the service
 * to one core. A credential that passed recently is recognised without bcrypt ({@link OperatorCredentials#remembered}).
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

    /** The checks waiting for the bcrypt thread at most; past it, an attempt is answered 429 unchecked. */
    private static final int CHECKS_QUEUED = 32;
    private static final Executor BCRYPT = new ThreadPoolExecutor(1, 1, 1, TimeUnit.MINUTES,
            new ArrayBlockingQueue<>(CHECKS_QUEUED), runnable -> {
                Thread thread = new Thread(runnable, "operator-password-check");
                thread.setDaemon(true);
                return thread;
            });

    private final OperatorCredentials credentials;
    private final FailedAuthentications failures;
    private final boolean consoleByOidc;

    OperatorFilter(OperatorCredentials credentials, FailedAuthentications failures,
                   @ConfigProperty(name = "chargeonce.console.oidc", defaultValue = "false") boolean consoleByOidc) {
        this.credentials = credentials;
        this.failures = failures;
        this.consoleByOidc = consoleByOidc;
    }

    private static boolean isConsolePath(String path) {
        return path.equals("/console") || path.startsWith("/console/");
    }

    private record Basic(String name, String password) {
    }

    @ServerRequestFilter(preMatching = true, priority = jakarta.ws.rs.Priorities.AUTHENTICATION)
    public Uni<Void> authenticate(ContainerRequestContext request, io.vertx.core.http.HttpServerRequest connection,
                                  RoutingContext routing) {
        String path = request.getUriInfo().getPath();
        if (!isOperatorPath(path)) {
            return Uni.createFrom().voidItem();
        }
        if (consoleByOidc && isConsolePath(path)) {
            SecurityIdentity identity = routing.user() instanceof QuarkusHttpUser user ? user.getSecurityIdentity() : null;
            if (identity == null || identity.isAnonymous()) {
                // Not reached while the console's permission is on: Quarkus redirects to the provider first.
                return Uni.createFrom().failure(new ApiException(401, "authentication_error", "operator_sign_in_required",
                        "Operators sign in to the console with OpenID Connect.", null, null));
            }
            signedIn(request, identity.getPrincipal().getName());
            return Uni.createFrom().voidItem();
        }
        String address = FailedAuthentications.address(ApiKeyFilter.clientAddress(connection));
        Basic basic = basic(request.getHeaderString("Authorization"));
        if (basic == null) {
            return Uni.createFrom().failure(refused(List.of(address)));
        }
        if (credentials.remembered(basic.name(), basic.password())) {
            signedIn(request, basic.name());
            return Uni.createFrom().voidItem();
        }
        List<String> subjects = List.of(address, "operator " + basic.name());
        if (!failures.mayCheck(subjects)) {
            return Uni.createFrom().failure(FailedAuthentications.tooMany(failures.overLimit(subjects).orElse(Duration.ofSeconds(1))));
        }
        Context context = Vertx.currentContext();
        Uni<Boolean> check = Uni.createFrom().item(() -> credentials.check(basic.name(), basic.password()))
                .runSubscriptionOn(BCRYPT)
                .onFailure(RejectedExecutionException.class).transform(e -> FailedAuthentications.tooMany(Duration.ofSeconds(1)));
        if (context != null) {
            // Back on the request's own context: its log context (MDC) lives there.
            check = check.emitOn(task -> context.runOnContext(ignored -> task.run()));
        }
        return check.map(passed -> {
            if (!passed) {
                throw refused(subjects);
            }
            signedIn(request, basic.name());
            return null;
        });
    }

    private ApiException refused(List<String> subjects) {
        // Whether it was over the limit before this failure: the limit-th failure is still a 401.
        Optional<Duration> wait = failures.overLimit(subjects);
        failures.failed(subjects);
        return wait.<ApiException>map(FailedAuthentications::tooMany).orElseGet(() -> new ApiException(401,
                "authentication_error", "operator_credentials_required",
                "Operators sign in with HTTP Basic (chargeonce.auth.operators); API keys do not open the console.", null, null));
    }

    private static void signedIn(ContainerRequestContext request, String operator) {
        request.setProperty(OPERATOR, operator);
        MDC.put("operator", operator);
    }

    private static Basic basic(String header) {
        if (header == null || !header.regionMatches(true, 0, "Basic ", 0, 6)) {
            return null;
        }
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(header.substring(6).trim()), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return null;
        }
        int colon = decoded.indexOf(':');
        return colon <= 0 ? null : new Basic(decoded.substring(0, colon), decoded.substring(colon + 1));
    }
}

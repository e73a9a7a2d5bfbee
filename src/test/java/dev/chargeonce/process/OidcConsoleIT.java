package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.FreePorts;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestOperators;
import java.io.IOException;
import java.net.CookieManager;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import no.nav.security.mock.oauth2.MockOAuth2Server;
import no.nav.security.mock.oauth2.token.DefaultOAuth2TokenCallback;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The console's production sign-in: OpenID Connect's code flow against a real provider (mock-oauth2-server in this
 * JVM), through the packaged service. A browser is sent to the provider and back with a session; only the operator
 * role opens the console; the session ends with the provider's ID token; HTTP Basic opens the console no more, and
 * keeps opening the admin API for scripts.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OidcConsoleIT {

    private static final String ISSUER = "corp";
    private static final String CLIENT_ID = "chargeonce-console";
    /** The ID token's life, hence the session's: short, so that the test sees it end. */
    private static final long TOKEN_SECONDS = 6;

    MockOAuth2Server provider;
    ProcessEnvironment env;
    ServiceProcess service;

    @BeforeAll
    void start() {
        provider = new MockOAuth2Server();
        provider.start(FreePorts.freePort());
        env = new ProcessEnvironment("oidc");
        Map<String, String> config = env.serviceConfig();
        config.put("chargeonce.auth.operators", TestOperators.config());
        config.put("chargeonce.console.oidc", "true");
        config.put("quarkus.oidc.auth-server-url", provider.issuerUrl(ISSUER).toString());
        config.put("quarkus.oidc.client-id", CLIENT_ID);
        config.put("quarkus.oidc.credentials.secret", "a-client-secret-of-at-least-32-characters");
        service = ServiceProcess.start("oidc", config);
    }

    @AfterAll
    void stop() throws IOException {
        if (service != null) {
            service.close();
        }
        if (env != null) {
            env.close();
        }
        if (provider != null) {
            provider.shutdown();
        }
    }

    @Test
    void anOperatorSignsInAtTheProviderAndTheSessionEndsWithItsToken() throws Exception {
        signsInAs("alice", List.of("chargeonce-operator"));
        CookieManager cookies = new CookieManager();
        HttpResponse<String> page = browser(cookies).send(get("/console"), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, page.statusCode(), page.body());
        assertTrue(page.body().contains("alice"), "the console names the operator the provider signed in");
        assertEquals(200, noRedirects(cookies).send(get("/console"), HttpResponse.BodyHandlers.ofString()).statusCode(),
                "the session opens the console without the provider");

        Thread.sleep(Duration.ofSeconds(TOKEN_SECONDS + 2).toMillis());
        HttpResponse<String> expired = noRedirects(cookies).send(get("/console"), HttpResponse.BodyHandlers.ofString());
        assertEquals(302, expired.statusCode(), "an expired session is sent back to the provider: " + expired.body());
        assertTrue(expired.headers().firstValue("Location").orElse("").startsWith(provider.issuerUrl(ISSUER).toString()),
                expired.headers().toString());
    }

    @Test
    void someoneWithoutTheOperatorRoleIsRefused() throws Exception {
        signsInAs("mallory", List.of("finance"));
        HttpResponse<String> page = browser(new CookieManager()).send(get("/console"), HttpResponse.BodyHandlers.ofString());
        assertEquals(403, page.statusCode(), page.body());
    }

    @Test
    void basicOpensTheAdminApiButNotTheConsole() throws Exception {
        HttpRequest console = HttpRequest.newBuilder(service.uri("/console")).header("Authorization", TestOperators.basic()).build();
        HttpResponse<String> refused = noRedirects(new CookieManager()).send(console, HttpResponse.BodyHandlers.ofString());
        assertEquals(302, refused.statusCode(), "Basic credentials are not a console session: " + refused.body());
        HttpRequest admin = HttpRequest.newBuilder(service.uri("/admin/v1/findings")).header("Authorization", TestOperators.basic()).build();
        HttpResponse<String> findings = noRedirects(new CookieManager()).send(admin, HttpResponse.BodyHandlers.ofString());
        assertEquals(200, findings.statusCode(), findings.body());
        HttpRequest anonymous = HttpRequest.newBuilder(service.uri("/admin/v1/findings")).build();
        assertEquals(401, noRedirects(new CookieManager()).send(anonymous, HttpResponse.BodyHandlers.ofString()).statusCode());
    }

    private void signsInAs(String name, List<String> groups) {
        provider.enqueueCallback(new DefaultOAuth2TokenCallback(ISSUER, name, "JWT", List.of(CLIENT_ID),
                Map.of("preferred_username", name, "groups", groups), TOKEN_SECONDS));
    }

    private HttpRequest get(String path) {
        return HttpRequest.newBuilder(service.uri(path)).timeout(Duration.ofSeconds(20)).build();
    }

    /** A browser: it follows the redirects to the provider and back, and keeps the cookies it is given. */
    private static HttpClient browser(CookieManager cookies) {
        return HttpClient.newBuilder().cookieHandler(cookies).followRedirects(HttpClient.Redirect.ALWAYS).build();
    }

    private static HttpClient noRedirects(CookieManager cookies) {
        return HttpClient.newBuilder().cookieHandler(cookies).followRedirects(HttpClient.Redirect.NEVER).build();
    }
}

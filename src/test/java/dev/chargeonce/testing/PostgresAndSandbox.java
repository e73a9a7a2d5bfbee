package dev.chargeonce.testing;

import dev.chargeonce.sandbox.StripeSandbox;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.Map;

/**
 * What every {@code @QuarkusTest} runs against: a real PostgreSQL the suite started (a fresh database), and the
 * Stripe sandbox over real HTTP on its own port. Tests reach the sandbox through its HTTP control plane
 * ({@link SandboxControl}), which works whatever class loader the test runs in.
 */
public class PostgresAndSandbox implements QuarkusTestResourceLifecycleManager {

    /** The sandbox signs its events with this one (its default); the service also accepts the next one (a rotation). */
    public static final String WEBHOOK_SECRET = "whsec_sandbox";
    public static final String WEBHOOK_SECRET_ROTATED = "whsec_sandbox_next";

    private StripeSandbox sandbox;

    @Override
    public Map<String, String> start() {
        String database = TestPostgres.newDatabase("chargeonce_test");
        try {
            sandbox = StripeSandbox.start(0);
        } catch (java.io.IOException e) {
            throw new IllegalStateException("could not start the Stripe sandbox", e);
        }
        return Map.of(
                "quarkus.datasource.jdbc.url", TestPostgres.jdbcUrl(TestPostgres.port(), database),
                "quarkus.datasource.username", "postgres",
                "quarkus.datasource.password", "postgres",
                "chargeonce.stripe.api-base", sandbox.baseUrl(),
                "chargeonce.auth.clients", TestClients.config(),
                "chargeonce.stripe.webhook-secret", WEBHOOK_SECRET + "," + WEBHOOK_SECRET_ROTATED);
    }

    @Override
    public void stop() {
        try {
            if (sandbox != null) {
                sandbox.close();
            }
        } catch (java.io.IOException ignored) {
            // the JVM is ending
        }
    }
}

package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * The incident of the dedup SELECT that failed silently when the pool was exhausted: here a claim that cannot
 * be committed is a 503, and Stripe is never called.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class PoolExhaustedTest {

    @Inject
    AgroalDataSource primary;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Test
    void noConnectionMeans503AndNoStripeCall() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String key = UUID.randomUUID().toString();
        List<Connection> held = new ArrayList<>();
        try {
            // Take every connection the service's pool can hand out.
            while (true) {
                try {
                    held.add(primary.getConnection());
                } catch (SQLException exhausted) {
                    break;
                }
            }
            assertTrue(held.size() >= 1, "the test holds the pool");
            long stripeRequests = stripe.apiRequests();

            ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(503)
                    .header("Retry-After", notNullValue())
                    .body("error.code", equalTo("database_unavailable"));

            assertEquals(stripeRequests, stripe.apiRequests(), "no claim, no Stripe call");
        } finally {
            for (Connection c : held) {
                c.close();
            }
        }
        // The same key, once the pool is back, charges exactly once.
        String id = ChargeApiTest.post(ACME_KEY, key, ChargeApiTest.VISA).then().statusCode(201).extract().path("id");
        assertEquals(1, stripe.intentsFor(dev.chargeonce.testing.TestClients.ACME, key).size());
    }
}

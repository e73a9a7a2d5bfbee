package dev.chargeonce.stripe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * A holder sends only inside its lease. Past its send deadline another driver may hold the row and send the key
 * itself, or have proven that the key made nothing and moved on to the next one: a try started then could charge
 * behind that driver's back. The call refuses it before anything reaches Stripe, and says it was not sent.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class SendWithinLeaseTest {

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Inject
    StripeGateway gateway;

    @Test
    void aTryPastTheHoldersSendDeadlineNeverReachesStripe() {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        String key = "send-within-lease-" + UUID.randomUUID();
        long creates = stripe.createRequests();

        StripeCall spent = gateway.createAndConfirm(order(key, System.nanoTime() - 1));
        assertInstanceOf(StripeOutcome.NotSent.class, spent.outcome(), "a try past the deadline is not sent: " + spent.outcome());
        assertEquals(creates, stripe.createRequests(), "nothing reached Stripe");

        StripeCall inLease = gateway.createAndConfirm(order(key, System.nanoTime() + Duration.ofSeconds(30).toNanos()));
        assertInstanceOf(StripeOutcome.Succeeded.class, inLease.outcome(), "inside the deadline the same order is sent: " + inLease.outcome());
        assertEquals(creates + 1, stripe.createRequests());
    }

    private static PaymentOrder order(String key, long sendBefore) {
        return new PaymentOrder(key, "acme", 1, "chargeonce-" + key + "-a1", 1000, "usd", "pm_card_visa", null, null,
                Map.of(), null, sendBefore);
    }
}

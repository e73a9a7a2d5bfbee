package dev.chargeonce.charge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.stripe.StripeCallBudget;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.List;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.Test;

/** The start-up refusals of settings that would break exactly-once (the process test starts the real thing). */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class GuaranteeChecksTest {

    static final Duration LEASE = Duration.ofSeconds(30);
    /** Three tries of 9 s (each up to one look of the try watchdog, 50 ms, later) and two pauses of up to 350 ms. */
    static final Duration BUDGET = Duration.ofMillis(27_850);
    static final Duration PER_TRY = Duration.ofSeconds(9);
    static final Duration MAX_DURATION = Duration.ofSeconds(60);

    @Inject
    StripeConfig stripe;

    @Test
    void theCallBudgetOfTheDefaultsIsThreeTriesAndTheirDelays() {
        // min(9 s timeout, 2 s connect + 8 s read) per try, 3 tries, 2 × (200 ms + 150 ms jitter) between them.
        assertEquals(BUDGET, StripeCallBudget.of(stripe, ConfigProvider.getConfig()));
    }

    @Test
    void theDefaultsPass() {
        assertEquals(List.of(), GuaranteeChecks.problems(LEASE, BUDGET, PER_TRY, MAX_DURATION, Duration.ofHours(23)));
    }

    @Test
    void aLeaseNotLongerThanTheCallBudgetIsRefused() {
        List<String> problems = GuaranteeChecks.problems(Duration.ofSeconds(27), BUDGET, PER_TRY, MAX_DURATION, Duration.ofHours(23));
        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("chargeonce.idempotency.lease=PT27S"), problems.get(0));
    }

    @Test
    void aHorizonThatWithLeaseAndRequestTimeReachesStripesDayIsRefused() {
        // 23 h 58 min + 30 s + 60 s = 23 h 59 min 30 s: allowed; 23 h 59 min + 30 s + 60 s: 24 h 0 min 30 s, refused.
        assertEquals(List.of(), GuaranteeChecks.problems(LEASE, BUDGET, PER_TRY, MAX_DURATION, Duration.ofMinutes(23 * 60 + 58)));
        List<String> problems = GuaranteeChecks.problems(LEASE, BUDGET, PER_TRY, MAX_DURATION, Duration.ofMinutes(23 * 60 + 59));
        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("chargeonce.stripe.key-horizon="), problems.get(0));
    }

    @Test
    void aRequestMaxDurationNotLongerThanOneTryIsRefused() {
        List<String> problems = GuaranteeChecks.problems(LEASE, BUDGET, PER_TRY, Duration.ofSeconds(9), Duration.ofHours(23));
        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("chargeonce.stripe.request-max-duration="), problems.get(0));
    }
}

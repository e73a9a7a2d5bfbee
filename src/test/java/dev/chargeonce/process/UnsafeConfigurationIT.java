package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Settings that would quietly break exactly-once are refused when the packaged service starts, naming the setting
 * and the reason: an operator finds out at deploy time, not from a double charge.
 */
class UnsafeConfigurationIT {

    @Test
    void aKeyHorizonThatReachesStripesDayIsRefused() throws Exception {
        String log = refused("unsafe-horizon", "chargeonce.stripe.key-horizon", "23h59m");
        assertTrue(log.contains("chargeonce.stripe.key-horizon"), "the log names the setting:\n" + tail(log));
        assertTrue(log.contains("24"), "and says why (Stripe's 24 h):\n" + tail(log));
    }

    @Test
    void aLeaseShorterThanTheStripeCallBudgetIsRefused() throws Exception {
        String log = refused("unsafe-lease", "chargeonce.idempotency.lease", "5s");
        assertTrue(log.contains("chargeonce.idempotency.lease"), "the log names the setting:\n" + tail(log));
    }

    @Test
    void theKafkaIngressWithoutTheRecoveryWorkerOrWithAutoCommitIsRefused() throws Exception {
        // No broker is needed: the refusal comes before any connection.
        String log = refused("unsafe-kafka", Map.of("chargeonce.kafka.enabled", "true", "chargeonce.recovery.enabled", "false",
                "chargeonce.kafka.client.\"enable.auto.commit\"", "true"));
        assertTrue(log.contains("chargeonce.recovery.enabled=true"), "the recovery worker finishes what commands leave unknown:\n" + tail(log));
        assertTrue(log.contains("enable.auto.commit"), "offsets are committed after the rows, never on a timer:\n" + tail(log));
    }

    /**
     * The packaged service (prod profile) has no key-hash version of its own: 1 on a new installation, 0 for the
     * first step of an upgrade. Left unset, it must not guess (README, "Keys stored hashed").
     */
    @Test
    void withoutAKeyHashVersionTheServiceDoesNotStart() throws Exception {
        String log = refused("unsafe-key-hash", "chargeonce.idempotency.key-hash-version", "");
        assertTrue(log.contains("CHARGEONCE_KEY_HASH_VERSION"), "the log names the setting:\n" + tail(log));
        assertTrue(log.contains("Keys stored hashed"), "and where to read about it:\n" + tail(log));
    }

    private static String refused(String name, String property, String value) throws Exception {
        return refused(name, Map.of(property, value));
    }

    private static String refused(String name, Map<String, String> settings) throws Exception {
        try (ProcessEnvironment env = new ProcessEnvironment(name.replace('-', '_'))) {
            Map<String, String> config = env.serviceConfig();
            config.putAll(settings);
            return ServiceProcess.startExpectingRefusal(name, config, Duration.ofSeconds(60));
        }
    }

    private static String tail(String log) {
        return log.length() > 4000 ? log.substring(log.length() - 4000) : log;
    }
}

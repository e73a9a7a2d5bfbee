package dev.chargeonce.keys;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.idempotency.KeyIdentities;
import dev.chargeonce.testing.LogCapture;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.util.List;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * The logs never carry an Idempotency-Key, nor anything a reader could recompute from a guess of one (an unkeyed hash
 * of it, whole or in part, hex or base64): a key shows in a log line only as its keyed tag
 * ({@link KeyIdentities#logTag}, the MDC's {@code idempotency_key_hash}). Keys of this test's own go through a path
 * that logs (a charge whose outcome is unknown) and through those that only answer (a charge, its replay, a conflict,
 * a refused body, a refund, the key's status), and every record logged meanwhile is searched for them
 * ({@link LogCapture}). The Kafka ingress' line: CommandHandlerTest.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class KeysNeverLoggedTest {

    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    @Inject
    KeyIdentities identities;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Test
    void noLogLineCarriesAKeyOrAnUnkeyedHashOfIt() {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        String run = UUID.randomUUID().toString().substring(0, 8);
        String charged = "logprobe-charge-" + run;
        String unknown = "logprobe-unknown-" + run;
        String refused = "logprobe-refused-" + run;
        String refund = "logprobe-refund-" + run;
        List<String> lines;
        try (LogCapture capture = LogCapture.start()) {
            Response first = charge(charged, VISA);
            assertEquals(201, first.statusCode(), first.asString());
            assertEquals("true", charge(charged, VISA).header("Idempotent-Replayed"));
            assertEquals(422, charge(charged, VISA.replace("1000", "1001")).statusCode(), "the key reused with another body");
            assertEquals(400, charge(refused, "{\"amount\": 10.5}").statusCode(), "a body refused before any claim");
            assertEquals(201, given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", refund)
                    .contentType(ContentType.JSON).body("{\"amount\": 100}")
                    .post("/v1/charges/" + first.jsonPath().getString("id") + "/refunds").statusCode());
            assertEquals(200, IdempotencyKeysTest.status(charged).statusCode());
            // Stripe executes the create and its answer is lost: the outcome is unknown, which the service logs.
            stripe.plan("fail_after");
            assertEquals(503, charge(unknown, VISA).statusCode());
            lines = capture.lines();
        } finally {
            stripe.clearFaults();
        }

        for (String key : List.of(charged, unknown, refused, refund)) {
            for (String line : lines) {
                assertNull(LogCapture.leak(ACME, key, line), "a log line gives away key " + key + ": " + line);
            }
        }
        // The search saw the line about the unknown outcome, with its key's tag where the key would have been.
        String tag = identities.logTag(ACME, unknown);
        assertTrue(lines.stream().anyMatch(l -> l.contains("outcome unknown") && l.contains("idempotency_key_hash=" + tag)),
                "the unknown outcome was logged, under its key's tag " + tag + ":\n" + String.join("\n", lines));
    }

    private static Response charge(String key, String body) {
        return given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(body).post("/v1/charges");
    }
}

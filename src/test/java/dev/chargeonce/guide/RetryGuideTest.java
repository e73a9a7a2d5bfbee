package dev.chargeonce.guide;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/** The README's retry guide works: its example client charges once through faults, and the README shows it as it is. */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class RetryGuideTest {

    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    @TestHTTPResource("/v1/charges")
    URI charges;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Test
    void theExampleClientChargesOnceThroughStripe500sAndDuplicates() throws Exception {
        SandboxControl stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        RetryingClient client = new RetryingClient(charges, ACME_KEY);
        String key = UUID.randomUUID().toString();
        stripe.plan("fail_before", "fail_after");
        RetryingClient.Result result = client.send(key, VISA, Duration.ofSeconds(60));
        assertEquals(201, result.status(), result.body());
        assertTrue(result.attempts() >= 2, "the 503s were retried: " + result.attempts());
        assertEquals(1, stripe.intentsFor(ACME, key).size(), "charged once");

        // Two copies of the client with one key at once (a double click): one charge, both told it.
        String twice = UUID.randomUUID().toString();
        stripe.faults("latency_ms=1500");
        try {
            CompletableFuture<RetryingClient.Result> a = CompletableFuture.supplyAsync(() -> sendQuietly(client, twice));
            CompletableFuture<RetryingClient.Result> b = CompletableFuture.supplyAsync(() -> sendQuietly(client, twice));
            assertEquals(201, a.get(60, TimeUnit.SECONDS).status());
            assertEquals(201, b.get(60, TimeUnit.SECONDS).status());
            assertEquals(a.get().body(), b.get().body());
        } finally {
            stripe.clearFaults();
        }
        assertEquals(1, stripe.intentsFor(ACME, twice).size());
    }

    static RetryingClient.Result sendQuietly(RetryingClient client, String key) {
        try {
            return client.send(key, VISA, Duration.ofSeconds(60));
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void theReadmeShowsTheTestedClientAsItIs() throws Exception {
        String example = Files.readString(Path.of("src/test/java/dev/chargeonce/guide/RetryingClient.java"));
        String body = example.substring(example.indexOf("    public Result send("), example.lastIndexOf("}")).stripTrailing();
        String readme = Files.readString(Path.of("README.md"));
        assertTrue(readme.contains(body), "README.md's retry guide must show RetryingClient.send as it is (copy it again)");
    }
}

package dev.chargeonce.guide;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.Test;

/**
 * The retry guide for clients (docs/contract.md, "Retrying: a guide for clients") works: its example client charges once
 * through faults, and the guide shows it as it is.
 */
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

    static final Path GUIDE = Path.of("docs", "contract.md");
    static final String GUIDE_HEADING = "## Retrying: a guide for clients";

    @Test
    void theRetryGuideShowsTheTestedClientAsItIs() throws Exception {
        assertTrue(retryGuide(Files.readString(GUIDE)).contains(clientLoop()),
                GUIDE + "'s section \"" + GUIDE_HEADING.substring(3) + "\" must show RetryingClient.send as it is (copy it again)");
    }

    @Test
    void onlyTheGuidesOwnSectionCounts() throws Exception {
        String guide = Files.readString(GUIDE);
        String section = retryGuide(guide);
        String elsewhere = guide.replace(section, section.replace(clientLoop(), "")) + "\n## Elsewhere\n\n" + clientLoop() + "\n";
        assertFalse(retryGuide(elsewhere).contains(clientLoop()), "the client shown under another heading is not the guide's");
        assertThrows(AssertionError.class, () -> retryGuide(guide.replace(GUIDE_HEADING, "## Retries")), "a guide without its heading");
    }

    /** RetryingClient.send, as the guide must show it. */
    static String clientLoop() throws Exception {
        String example = Files.readString(Path.of("src/test/java/dev/chargeonce/guide/RetryingClient.java"));
        return example.substring(example.indexOf("    public Result send("), example.lastIndexOf("}")).stripTrailing();
    }

    /** The text of the guide's section: from its heading to the next heading of the same level or above. */
    static String retryGuide(String page) {
        int start = page.indexOf("\n" + GUIDE_HEADING + "\n");
        assertTrue(start >= 0, GUIDE + " has no section \"" + GUIDE_HEADING + "\"");
        Matcher next = Pattern.compile("\n#{1,2} ").matcher(page);
        int end = next.find(start + GUIDE_HEADING.length() + 1) ? next.start() : page.length();
        return page.substring(start, end);
    }
}

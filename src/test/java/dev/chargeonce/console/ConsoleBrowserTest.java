package dev.chargeonce.console;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.charge.ChargeRequestParser;
import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.idempotency.RowIds;
import dev.chargeonce.reconcile.ReconciliationJob;
import dev.chargeonce.stripe.StripeKeys;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.io.File;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The operator's console in a real browser (Debian's headless Chromium): the page shows a parked row and its
 * finding, an operator attaches the PaymentIntent reconciliation found (the form's token bound to the browser's
 * session cookie), and the row and the audit trail are checked in PostgreSQL; the client's retry then replays the
 * charge. Screenshots land in {@code target/console/}. Chromium
 * and its driver are required (installed by {@code .ci/run}): without them this test fails, it never skips.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ConsoleBrowserTest {

    static final String CHROMIUM = "/usr/bin/chromium";
    static final String CHROMEDRIVER = "/usr/bin/chromedriver";
    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";
    static final Path SCREENSHOTS = Path.of("target", "console");

    @TestHTTPResource("/")
    URL root;

    @Inject
    AgroalDataSource primary;

    @Inject
    ReconciliationJob job;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    ChromeDriver browser;
    SandboxControl stripe;

    @BeforeEach
    void openBrowser() throws Exception {
        assertTrue(new File(CHROMIUM).canExecute() && new File(CHROMEDRIVER).canExecute(),
                "the console test needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; .ci/run does)");
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM);
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                "--user-data-dir=" + Files.createTempDirectory("chargeonce-chromium"));
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(CHROMEDRIVER))
                .usingAnyFreePort().build();
        browser = new ChromeDriver(service, options);
        browser.manage().timeouts().pageLoadTimeout(Duration.ofSeconds(30));
        Files.createDirectories(SCREENSHOTS);
    }

    @AfterEach
    void closeBrowser() {
        if (browser != null) {
            browser.quit();
        }
        stripe.forgetSeeded();
    }

    @Test
    void anOperatorResolvesAParkedRowFromTheConsole() throws Exception {
        String key = UUID.randomUUID().toString();
        String chargeId = dev.chargeonce.testing.TestRows.parkedCharge(primary, ACME, ACME_KEY, key, VISA);
        long now = Instant.now().getEpochSecond();
        stripe.seed("count=1&created_from=" + now + "&created_to=" + now + "&status=succeeded&metadata[chargeonce_key]="
                + dev.chargeonce.testing.TestKeys.identity(ACME, key) + "&metadata[chargeonce_client_id]=" + ACME);
        String paymentIntent = stripe.ledger().stream()
                .filter(pi -> dev.chargeonce.testing.TestKeys.identity(ACME, key).equals(pi.path("metadata").path("chargeonce_key").asText()))
                .findFirst().orElseThrow().get("id").asText();
        reconcileLastHour();

        // Basic credentials in the URL: the browser signs in for the whole origin, forms and redirects included.
        String base = "http://ops:ops-test-password@" + root.getHost() + ":" + root.getPort();
        browser.get(base + "/console");
        assertEquals("chargeonce · operator console", browser.getTitle());
        // The shared Stripe rate budget, each endpoint and class with its rate (the test profile's: 5000 a second).
        WebElement budget = browser.findElement(By.cssSelector("#budget tr.budget[data-endpoint='payment_intents.create'][data-class='foreground']"));
        assertTrue(budget.getText().contains("4000.0"), budget.getText());
        assertEquals("ops", browser.findElement(By.id("operator")).getText());
        // Styled by the console's stylesheet, which the page's Content-Security-Policy lets in (an inline one it refuses).
        assertEquals("rgba(244, 244, 244, 1)", browser.findElement(By.cssSelector("th")).getCssValue("background-color"));
        // The browser keeps the console's session cookie, which its forms' tokens are bound to; no script can read it.
        org.openqa.selenium.Cookie session = browser.manage().getCookieNamed(FormTokens.SESSION_COOKIE);
        assertTrue(session != null && session.isSecure() && session.isHttpOnly() && "Lax".equals(session.getSameSite()),
                String.valueOf(session));
        WebElement rowLink = browser.findElement(By.cssSelector("a.row-link[href='/console/rows/charge/" + chargeId + "']"));
        assertTrue(browser.findElement(By.id("findings")).getText().contains(chargeId), "the parked row's findings are listed");
        screenshot("1-console.png");

        follow(rowLink, "/console/rows/charge/" + chargeId);
        assertEquals(chargeId, browser.findElement(By.id("row-id")).getText());
        assertTrue(browser.findElement(By.id("status")).getText().contains("parked"));
        screenshot("2-parked-row.png");
        WebElement attach = browser.findElement(By.id("attach"));
        attach.findElement(By.name("object")).sendKeys(paymentIntent);
        attach.findElement(By.name("reason")).sendKeys("reconciliation found the payment (ticket OPS-42)");
        follow(attach.findElement(By.cssSelector("button[type=submit]")), "?message=attached");

        String message = browser.findElement(By.id("message")).getText();
        assertTrue(message.startsWith("Attached: "), message);
        assertTrue(browser.getCurrentUrl().endsWith("/console/rows/charge/" + chargeId + "?message=attached"), browser.getCurrentUrl());
        assertEquals("completed", browser.findElement(By.id("status")).getText());
        assertEquals(paymentIntent, browser.findElement(By.id("object")).getText());
        String audit = browser.findElement(By.id("audit")).getText();
        assertTrue(audit.contains("OPS-42") && audit.contains("now answers 201"), audit);
        screenshot("3-attached.png");

        try (Connection c = primary.getConnection()) {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT status, payment_intent_id, needs_reconciliation FROM stripe_intents WHERE id = ?")) {
                ps.setString(1, chargeId);
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    assertEquals("completed", rs.getString(1));
                    assertEquals(paymentIntent, rs.getString(2));
                    assertEquals(false, rs.getBoolean(3));
                }
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT operator, outcome, reason FROM operator_actions WHERE row_id = ? AND action = 'attach'")) {
                ps.setString(1, chargeId);
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next(), "the action is in the audit trail");
                    assertEquals("ops", rs.getString(1));
                    assertEquals("done", rs.getString(2));
                    assertTrue(rs.getString(3).contains("OPS-42"));
                }
            }
        }
        Response replay = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(VISA).post("/v1/charges");
        assertEquals(201, replay.statusCode(), replay.asString());
        assertEquals(paymentIntent, replay.jsonPath().getString("payment_intent"));
    }

    @Test
    void anOperatorFindsAChargeByItsIdempotencyKeyInTheSearchBox() throws Exception {
        String key = "order-" + UUID.randomUUID();
        Response charged = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body("{\"amount\": 7232, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}")
                .post("/v1/charges");
        assertEquals(201, charged.statusCode(), charged.asString());
        String chargeId = charged.jsonPath().getString("id");

        String base = "http://ops:ops-test-password@" + root.getHost() + ":" + root.getPort();
        browser.get(base + "/console");
        WebElement search = browser.findElement(By.id("search"));
        search.findElement(By.id("q")).sendKeys(key);
        follow(search.findElement(By.cssSelector("button[type=submit]")), "/console/search?q=");
        WebElement match = browser.findElement(By.cssSelector("#matches a.match-link[href='/console/rows/charge/" + chargeId + "']"));
        String results = browser.findElement(By.id("matches")).getText();
        assertTrue(results.contains("Idempotency-Key") && results.contains("$72.32"), results);
        screenshot("4-search.png");

        follow(match, "/console/rows/charge/" + chargeId);
        assertEquals(chargeId, browser.findElement(By.id("row-id")).getText());
        assertEquals("$72.32", browser.findElement(By.id("amount")).getText());
        String timeline = browser.findElement(By.id("timeline")).getText();
        assertTrue(timeline.contains("charge claimed") && timeline.contains("answered 201"), timeline);
        assertTrue(java.util.regex.Pattern.compile("\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d").matcher(timeline).find(), timeline);
        screenshot("5-found-charge.png");
    }

    /**
     * An operator's day with Stripe's Dashboard: a payment made there and a partial refund there of a charge made
     * through the API. Reconciliation finds both; the operator finds the refunded charge by its Idempotency-Key in the
     * search box and reads what was refunded; the client's API says the same, and a refund through the API for more
     * than what is left is refused before Stripe.
     */
    @Test
    void anOperatorSeesWhatWasDoneInStripesDashboardAndFindsTheRefundedCharge() throws Exception {
        String key = "order-" + UUID.randomUUID();
        Response charged = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(VISA).post("/v1/charges");
        assertEquals(201, charged.statusCode(), charged.asString());
        String chargeId = charged.jsonPath().getString("id");
        String dashboardPayment = stripe.dashboardPayment(2000, "usd", null).get("id").asText();
        stripe.dashboardRefund(charged.jsonPath().getString("payment_intent"), 600L);

        reconcileLastHour();

        String base = "http://ops:ops-test-password@" + root.getHost() + ":" + root.getPort();
        browser.get(base + "/console");
        String findings = browser.findElement(By.id("findings")).getText();
        assertTrue(browser.findElements(By.cssSelector("tr.finding[data-kind='made_outside']")).stream()
                .anyMatch(row -> row.getText().contains(dashboardPayment)), "the Dashboard payment is a finding: " + findings);
        assertTrue(browser.findElements(By.cssSelector("tr.finding[data-kind='refunded_outside']")).stream()
                .anyMatch(row -> row.getText().contains(chargeId)), "the Dashboard refund is a finding: " + findings);
        screenshot("6-dashboard-findings.png");

        WebElement search = browser.findElement(By.id("search"));
        search.findElement(By.id("q")).sendKeys(key);
        follow(search.findElement(By.cssSelector("button[type=submit]")), "/console/search?q=");
        follow(browser.findElement(By.cssSelector("#matches a.match-link[href='/console/rows/charge/" + chargeId + "']")),
                "/console/rows/charge/" + chargeId);
        assertEquals(chargeId, browser.findElement(By.id("row-id")).getText());
        String refunded = browser.findElement(By.id("refunded")).getText();
        assertTrue(refunded.startsWith("$6.00") && refunded.contains("outside the service"), refunded);
        screenshot("7-refunded-outside.png");

        Response read = given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + chargeId);
        assertEquals(600, read.jsonPath().getLong("amount_refunded"), read.asString());
        assertEquals(false, read.jsonPath().getBoolean("refunded"));
        Response tooMuch = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body("{\"amount\": 500}").post("/v1/charges/" + chargeId + "/refunds");
        assertEquals(400, tooMuch.statusCode(), tooMuch.asString());
        assertEquals("amount_too_large", tooMuch.jsonPath().getString("error.code"));
    }

    /**
     * Clicks a link or a form's button and waits until the browser is on the page it leads to. A click returns
     * before a form's submission has begun to navigate, so reading the page at once may still read the old one.
     */
    private void follow(WebElement target, String urlPart) throws InterruptedException {
        target.click();
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!browser.getCurrentUrl().contains(urlPart) && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        String url = browser.getCurrentUrl();
        assertTrue(url.contains(urlPart), "the click leads to " + urlPart + ", the browser is on " + url);
    }

    /** Queues a reconciliation run over the last hour and passes until it has ended. */
    private void reconcileLastHour() {
        long run = job.request(Instant.now().minus(Duration.ofHours(1)), Instant.now().plusSeconds(5), "test").id();
        for (int i = 0; i < 20; i++) {
            ReconciliationJob.PassResult pass = job.pass();
            if (pass.runId() != null && pass.runId() == run && !"running".equals(pass.status())) {
                return;
            }
        }
    }

    private void screenshot(String name) throws Exception {
        Files.write(SCREENSHOTS.resolve(name), browser.getScreenshotAs(OutputType.BYTES));
    }

}

package dev.chargeonce.console;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import jakarta.inject.Inject;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The console's defences in a browser's stead: every answer under {@code /console} forbids framing, caching and
 * type sniffing and carries a Content-Security-Policy; a form's token belongs to the browser session, the form and
 * the row it was served for; a banner says only what the code chose.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ConsoleSecurityTest {

    static final String OPERATOR = "ops";
    static final String PASSWORD = "ops-test-password";
    static final String SESSION_COOKIE = "__Host-chargeonce-console";
    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";

    @Inject
    AgroalDataSource primary;

    static RequestSpecification operator() {
        return given().auth().preemptive().basic(OPERATOR, PASSWORD).redirects().follow(false);
    }

    /** A page as one browser session sees it: its session cookie and the token of each of its forms. */
    record Page(Response response, String session) {
        String token(String formId) {
            Matcher m = Pattern.compile("<form id=\"" + Pattern.quote(formId)
                    + "\"[^>]*>\\s*<input type=\"hidden\" name=\"token\" value=\"([^\"]*)\"").matcher(response.asString());
            assertTrue(m.find(), "the page has form " + formId + ": " + response.asString());
            return m.group(1);
        }
    }

    /** GETs a page in a browser session: {@code session} null is a browser that has none yet. */
    static Page get(String path, String session) {
        RequestSpecification request = operator();
        if (session != null) {
            request.cookie(SESSION_COOKIE, session);
        }
        Response response = request.get(path);
        assertEquals(200, response.statusCode(), response.asString());
        String set = response.getCookie(SESSION_COOKIE);
        return new Page(response, set != null ? set : session);
    }

    static Response post(String path, String session, String token, int leaseGeneration) {
        RequestSpecification request = operator().formParam("lease_gen", leaseGeneration).formParam("reason", "console security test");
        if (session != null) {
            request.cookie(SESSION_COOKIE, session);
        }
        if (token != null) {
            request.formParam("token", token);
        }
        return request.post(path);
    }

    String parkedRow() throws Exception {
        return dev.chargeonce.testing.TestRows.parkedCharge(primary, ACME, ACME_KEY, UUID.randomUUID().toString(), VISA);
    }

    static void assertBrowserDefences(Response response, String what) {
        String csp = response.header("Content-Security-Policy");
        assertNotNull(csp, what + ": Content-Security-Policy");
        for (String directive : List.of("default-src 'self'", "frame-ancestors 'none'", "form-action 'self'", "base-uri 'none'",
                "object-src 'none'")) {
            assertTrue(csp.contains(directive), what + ": " + directive + " in " + csp);
        }
        assertFalse(csp.contains("unsafe-inline"), what + ": " + csp);
        assertEquals("DENY", response.header("X-Frame-Options"), what);
        assertEquals("no-store", response.header("Cache-Control"), what);
        assertEquals("nosniff", response.header("X-Content-Type-Options"), what);
        assertEquals("no-referrer", response.header("Referrer-Policy"), what);
    }

    @Test
    void everyConsoleAnswerForbidsFramingCachingAndSniffing() throws Exception {
        String row = parkedRow();
        Page index = get("/console", null);
        assertBrowserDefences(index.response(), "the console");
        Page page = get("/console/rows/charge/" + row, index.session());
        assertBrowserDefences(page.response(), "a row's page");
        for (Page p : List.of(index, page)) {
            String html = p.response().asString();
            assertFalse(html.contains("<style") || html.contains("style=") || html.contains("<script"),
                    "nothing inline for the policy to refuse: " + html);
        }
        Response stylesheet = operator().get("/console/console.css");
        assertEquals(200, stylesheet.statusCode());
        assertTrue(stylesheet.contentType().startsWith("text/css"), stylesheet.contentType());
        assertBrowserDefences(stylesheet, "the stylesheet");

        assertBrowserDefences(given().get("/console").then().statusCode(401).extract().response(), "a 401");
        assertBrowserDefences(given().auth().preemptive().basic(OPERATOR, "wrong").get("/console/rows/charge/" + row)
                .then().statusCode(401).extract().response(), "a 401 on a row");
        assertBrowserDefences(operator().get("/console/rows/charge/chg_nothing_here").then().statusCode(404).extract().response(),
                "a 404");
        assertBrowserDefences(operator().get("/console/no/such/page").then().statusCode(404).extract().response(), "an unknown page");
        assertBrowserDefences(post("/console/rows/charge/" + row + "/requeue", null, null, 1).then().statusCode(403)
                .extract().response(), "a refused form");
        Response redirect = post("/console/rows/charge/" + row + "/requeue", page.session(), page.token("requeue"), 0);
        assertEquals(303, redirect.statusCode(), redirect.asString());
        assertBrowserDefences(redirect, "a redirect");

        for (Response admin : List.of(operator().get("/admin/v1/findings"), given().get("/admin/v1/findings"))) {
            assertEquals("no-store", admin.header("Cache-Control"), "the admin API: " + admin.statusCode());
            assertEquals("nosniff", admin.header("X-Content-Type-Options"), "the admin API: " + admin.statusCode());
        }
    }

    @Test
    void aBannerSaysOnlyWhatTheCodeChose() throws Exception {
        String row = parkedRow();
        for (String path : List.of("/console", "/console/rows/charge/" + row)) {
            for (String text : List.of("<script>alert(1)</script>", "Your session expired, call +1 555 0100 and give your password",
                    "attached ")) {
                String html = operator().queryParam("message", text).queryParam("done", true).get(path).then().statusCode(200)
                        .extract().asString();
                assertFalse(html.contains("id=\"message\""), path + " renders no banner for " + text + ": " + html);
                assertFalse(html.contains("alert(1)") || html.contains("555 0100"), html);
            }
        }
        String attached = operator().queryParam("message", "attached").get("/console/rows/charge/" + row).then().statusCode(200)
                .extract().asString();
        assertTrue(attached.contains("<p class=\"message\" id=\"message\">Attached: "), attached);
        String acknowledged = operator().queryParam("message", "acknowledged").get("/console").then().statusCode(200)
                .extract().asString();
        assertTrue(acknowledged.contains("id=\"message\">Finding acknowledged."), acknowledged);
        String refused = operator().queryParam("message", "not-processing").get("/console/rows/charge/" + row).then().statusCode(200)
                .extract().asString();
        assertTrue(refused.contains("<p class=\"message refused\" id=\"message\">Refused: "), refused);
    }
}

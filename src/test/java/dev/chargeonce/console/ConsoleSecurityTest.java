package dev.chargeonce.console;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
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
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.eclipse.microprofile.config.ConfigProvider;
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
    void aFormTokenWorksOnlyInTheBrowserSessionAndForTheFormItWasServedFor() throws Exception {
        String row = parkedRow();
        String rowPage = "/console/rows/charge/" + row;
        Page a = get(rowPage, null);
        Page b = get(rowPage, null);
        assertNotNull(a.session(), "the console opens a browser session");
        assertNotEquals(a.session(), b.session(), "each browser session has its own id");
        assertNotEquals(a.token("requeue"), b.token("requeue"), "and its own tokens");
        String cookie = a.response().header("Set-Cookie");
        for (String attribute : List.of("Path=/", "Secure", "HttpOnly", "SameSite=Lax")) {
            assertTrue(cookie.contains(attribute), attribute + " in " + cookie);
        }

        // Session A's token, sent from session B or with no session at all: refused, nothing recorded.
        Response fromB = post(rowPage + "/requeue", b.session(), a.token("requeue"), 0);
        assertEquals(403, fromB.statusCode(), fromB.asString());
        assertEquals("form_token_invalid", fromB.jsonPath().getString("error.code"));
        assertEquals(403, post(rowPage + "/requeue", null, a.token("requeue"), 0).statusCode());
        // A's requeue token on another form of the same row, or on a form of another row: refused.
        assertEquals(403, post(rowPage + "/mark-failed", a.session(), a.token("requeue"), 0).statusCode());
        String other = parkedRow();
        assertEquals(403, post("/console/rows/charge/" + other + "/requeue", a.session(), a.token("requeue"), 0).statusCode());
        // A tampered token (its signature, or its issue time) or a made-up one: refused.
        String token = a.token("requeue");
        int dot = token.indexOf('.');
        assertTrue(dot > 0, token);
        String signature = (token.charAt(dot + 1) == 'A' ? "B" : "A") + token.substring(dot + 2);
        assertEquals(403, post(rowPage + "/requeue", a.session(), token.substring(0, dot + 1) + signature, 0).statusCode());
        assertEquals(403, post(rowPage + "/requeue", a.session(), (Long.parseLong(token.substring(0, dot)) + 1000)
                + token.substring(dot), 0).statusCode());
        assertEquals(403, post(rowPage + "/requeue", a.session(), "x", 0).statusCode());

        // In its own session the token is accepted; a stale generation is still refused by the fencing and changes
        // nothing, as often as it is sent again.
        for (int i = 0; i < 2; i++) {
            Response stale = post(rowPage + "/requeue", a.session(), a.token("requeue"), 0);
            assertEquals(303, stale.statusCode(), stale.asString());
            assertTrue(stale.header("Location").endsWith("/console/rows/charge/" + row + "?message=moved"), stale.header("Location"));
        }
        Page after = get(rowPage + "?message=moved", a.session());
        assertTrue(after.response().asString().contains("Refused: the row moved since you looked"), after.response().asString());
        assertTrue(after.response().asString().contains("(parked"), "the row is untouched");

        // Same session, a second page: the session stays, and the token it serves works.
        assertEquals(a.session(), after.session());
        assertEquals(303, post(rowPage + "/requeue", a.session(), after.token("requeue"), 0).statusCode());

        // The default lifetime of a token: long enough to fill a form in, not forever.
        Duration ttl = ConfigProvider.getConfig().getValue("chargeonce.console.form-token-ttl", Duration.class);
        assertTrue(ttl.compareTo(Duration.ofMinutes(5)) >= 0 && ttl.compareTo(Duration.ofHours(8)) <= 0, ttl.toString());
    }

    @Test
    void aFindingsTokenWorksOnlyForThatFindingInItsSession() throws Exception {
        long finding = finding();
        long other = finding();
        Page a = get("/console", null);
        Page b = get("/console", null);
        String token = acknowledgeToken(a, finding);
        assertNotEquals(token, acknowledgeToken(a, other), "each finding's form has a token of its own");

        assertEquals(403, acknowledge(finding, b.session(), token).statusCode(), "from another browser session");
        assertEquals(403, acknowledge(finding, null, token).statusCode(), "from no browser session");
        assertEquals(403, acknowledge(other, a.session(), token).statusCode(), "on another finding");
        Response done = acknowledge(finding, a.session(), token);
        assertEquals(303, done.statusCode(), done.asString());
        assertTrue(done.header("Location").endsWith("/console?message=acknowledged"), done.header("Location"));
        // Sent again: the finding is resolved already; that is all the second time does.
        Response again = acknowledge(finding, a.session(), token);
        assertEquals(303, again.statusCode(), again.asString());
        assertTrue(again.header("Location").endsWith("/console?message=already-resolved"), again.header("Location"));
        assertEquals(303, acknowledge(other, b.session(), acknowledgeToken(b, other)).statusCode());
    }

    long finding() throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(
                "INSERT INTO reconciliation_findings (kind, subject, detail) VALUES ('unknown_payment_intent', ?, 'console security test')"
                        + " RETURNING id")) {
            ps.setString(1, "pi_" + UUID.randomUUID());
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return rs.getLong(1);
            }
        }
    }

    static String acknowledgeToken(Page page, long finding) {
        Matcher m = Pattern.compile("action=\"/console/findings/" + finding
                + "/acknowledge\"><input type=\"hidden\" name=\"token\" value=\"([^\"]*)\"").matcher(page.response().asString());
        assertTrue(m.find(), "the console lists finding " + finding + ": " + page.response().asString());
        return m.group(1);
    }

    static Response acknowledge(long finding, String session, String token) {
        RequestSpecification request = operator().formParam("note", "console security test").formParam("token", token);
        if (session != null) {
            request.cookie(SESSION_COOKIE, session);
        }
        return request.post("/console/findings/" + finding + "/acknowledge");
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

package dev.chargeonce.web;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.Management;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.RestAssured;
import io.restassured.http.ContentType;
import io.restassured.specification.RequestSpecification;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Requests that match no route (refused by the authentication filters before routing, unknown paths, methods a path
 * does not have, malformed requests the HTTP server refuses itself) cannot flood the HTTP metrics: Micrometer keeps at most 100 {@code uri} tag values
 * ({@code quarkus.micrometer.binder.http-server.max-uri-tags}) and drops every meter of a value past that, so 150
 * junk paths under their own names would leave a route used afterwards without any metric. They all share one label.
 */
@QuarkusTest
@TestProfile(UnmatchedRequestMetricsTest.OwnRegistry.class)
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class UnmatchedRequestMetricsTest {

    /**
     * An application (and a meter registry) of this test's own: in the one the other tests share, their requests
     * may have filled the 100 values already, or used the route this test uses last, and then the test could not
     * tell a flood from no flood.
     */
    public static class OwnRegistry implements QuarkusTestProfile {
    }

    static final String JUNK = "junk" + UUID.randomUUID().toString().substring(0, 8);
    static final Pattern URI_TAG = Pattern.compile("^http_server_requests_seconds_count\\{[^}]*uri=\"([^\"]*)\"", Pattern.MULTILINE);
    static final String REFUNDS = "/v1/charges/{id}/refunds";
    /** The one label of every request that matched no route. */
    static final String UNMATCHED = UnmatchedRequests.LABEL;

    @Test
    void junkPathsShareOneLabelAndARouteUsedAfterThemStillHasItsMetric() {
        String key = UUID.randomUUID().toString();
        String chargeId = given().header("Authorization", "Bearer " + ACME_KEY).header("Idempotency-Key", key)
                .contentType(ContentType.JSON).body(HostileInputTest.VISA).post("/v1/charges")
                .then().statusCode(201).extract().path("id");
        assertFalse(uriTags().contains(REFUNDS), "the route is first used after the flood");

        String operator = "Basic " + Base64.getEncoder().encodeToString("ops:wrong".getBytes(StandardCharsets.UTF_8));
        for (int i = 0; i < 150; i++) {
            String junk = JUNK + "-" + i;
            // From addresses of their own (X-Forwarded-For is trusted in tests): the 401s must not be answered 429.
            RequestSpecification request = given().header("X-Forwarded-For", "10.77.0." + (i + 1));
            switch (i % 7) {
                case 0 -> request.get("/v1/" + junk).then().statusCode(401);
                case 1 -> request.header("Authorization", "Bearer " + ACME_KEY).get("/v1/" + junk).then().statusCode(404);
                case 2 -> request.header("Authorization", "Bearer " + ACME_KEY).delete("/v1/charges/" + junk).then().statusCode(405);
                case 3 -> request.get("/" + junk).then().statusCode(404);
                case 4 -> request.header("Authorization", operator).get("/admin/v1/" + junk).then().statusCode(401);
                case 5 -> request.header("Authorization", "Bearer sk_nobody").post("/v1/charges/" + junk + "/refunds")
                        .then().statusCode(401);
                // A header line without a colon, a target that is not a URI: refused before any route.
                default -> assertEquals("HTTP/1.1 400 Bad Request", raw(i % 2 == 0
                        ? "GET /v1/" + junk + " HTTP/1.1\r\nHost: a\r\nNo colon\r\n\r\n"
                        : "GET /v1/" + junk + "/%zz HTTP/1.1\r\nHost: a\r\n\r\n"));
            }
        }

        given().header("Authorization", "Bearer " + ACME_KEY).get("/v1/charges/" + chargeId + "/refunds").then().statusCode(200);

        String metrics = Management.given().get("/q/metrics").then().statusCode(200).extract().asString();
        Set<String> uris = uriTags(metrics);
        assertTrue(Pattern.compile("^http_server_requests_seconds_count\\{method=\"GET\",[^}]*status=\"200\",uri=\""
                + Pattern.quote(REFUNDS) + "\"} 1\\.0$", Pattern.MULTILINE).matcher(metrics).find(),
                "GET " + REFUNDS + " has its metric: " + uris);
        for (String uri : uris) {
            assertFalse(uri.contains(JUNK), "no junk path is a label of its own: " + uris);
        }
        assertEquals(Set.of(UNMATCHED, "/v1/charges", REFUNDS), uris,
                "the templates of the routes used, and one label for all the requests that matched none");
    }

    /** The status line of the answer to an HTTP/1.1 request sent as these bytes. */
    private static String raw(String request) {
        try (Socket socket = new Socket(URI.create(RestAssured.baseURI).getHost(), RestAssured.port)) {
            socket.setSoTimeout(5_000);
            socket.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            String answer = new String(socket.getInputStream().readNBytes(64), StandardCharsets.ISO_8859_1);
            return answer.split("\r\n")[0];
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Set<String> uriTags() {
        return uriTags(Management.given().get("/q/metrics").then().statusCode(200).extract().asString());
    }

    private static Set<String> uriTags(String metrics) {
        Set<String> uris = new TreeSet<>();
        Matcher m = URI_TAG.matcher(metrics);
        while (m.find()) {
            uris.add(m.group(1));
        }
        return uris;
    }
}

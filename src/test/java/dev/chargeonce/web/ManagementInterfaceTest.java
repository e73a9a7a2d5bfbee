package dev.chargeonce.web;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.chargeonce.testing.Management;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.net.URL;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Health and metrics are on the management interface, a port of its own that the NetworkPolicy opens to the
 * monitoring namespace and the kubelet only; the API port, which clients reach, does not serve them (a 404 in the
 * API's error shape, like any path it does not have). The contract stays on the API port, for the clients.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ManagementInterfaceTest {

    static final List<String> MANAGEMENT_PATHS = List.of("/q/metrics", "/q/health", "/q/health/ready", "/q/health/live",
            "/q/health/started");

    @TestHTTPResource("/")
    URL api;

    @Test
    void theManagementInterfaceHasAPortOfItsOwn() {
        assertNotEquals(api.getPort(), Management.uri().getPort());
    }

    @Test
    void theApiPortDoesNotServeHealthOrMetrics() {
        for (String path : MANAGEMENT_PATHS) {
            given().get(path).then().statusCode(404).contentType(ContentType.JSON)
                    .body("error.type", equalTo("invalid_request_error"))
                    .body("error.code", equalTo("resource_missing"));
        }
    }

    @Test
    void theManagementPortServesThem() {
        Management.given().get("/q/metrics").then().statusCode(200).body(containsString("chargeonce_charges_total"));
        Management.given().get("/q/health/ready").then().statusCode(200).body(containsString("Database connections health check"));
        for (String path : List.of("/q/health", "/q/health/live", "/q/health/started")) {
            Management.given().get(path).then().statusCode(200).body("status", equalTo("UP"));
        }
    }

    @Test
    void theContractStaysOnTheApiPortAndOffTheManagementPort() {
        given().queryParam("format", "json").get("/q/openapi").then().statusCode(200).body("openapi", equalTo("3.0.3"));
        Management.given().get("/q/openapi").then().statusCode(404);
        // and the API on the API port only
        Management.given().get("/v1/charges").then().statusCode(404);
    }
}

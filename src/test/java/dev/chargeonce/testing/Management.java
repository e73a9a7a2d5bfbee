package dev.chargeonce.testing;

import io.restassured.RestAssured;
import io.restassured.specification.RequestSpecification;
import java.net.URI;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * The management interface of the {@code @QuarkusTest} application: health and metrics live on a port of their own
 * ({@code quarkus.management.*}; in tests a free one, {@code quarkus.management.test-port=0}), and RestAssured's
 * default port is the API's. {@code Management.given().get("/q/metrics")}.
 */
public final class Management {

    private Management() {
    }

    /** A RestAssured request to the management port (paths as the operator sees them: {@code /q/health/ready}). */
    public static RequestSpecification given() {
        URI uri = uri();
        return RestAssured.given().baseUri(uri.getScheme() + "://" + uri.getHost()).port(uri.getPort()).basePath("");
    }

    /**
     * The management interface's base URI, e.g. {@code http://localhost:41234/q}: {@code test.management.url}, which
     * Quarkus' test support sets to the port the interface listens on (as {@code test.url} for the API's).
     */
    public static URI uri() {
        return URI.create(ConfigProvider.getConfig().getValue("test.management.url", String.class));
    }
}

package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.FreePorts;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import dev.chargeonce.testing.TestKeys;
import dev.chargeonce.testing.TestPostgres;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * The packaged (prod) build cannot start the Stripe sandbox, even when told to: the bean is not in it (nor its
 * classes: DockerfileIT). It serves health and metrics on the management port only. And it does not start under the
 * dev or test profile, whose public demo credentials would otherwise win over the deployment's own.
 */
class ProdProfileIT {

    @Test
    void theSandboxNeverRunsInTheProdBuild() throws Exception {
        try (ProcessEnvironment env = new ProcessEnvironment("prod")) {
            int sandboxPort = FreePorts.freePort();
            Map<String, String> config = env.serviceConfig();
            config.put("chargeonce.sandbox.enabled", "true");
            config.put("chargeonce.sandbox.port", Integer.toString(sandboxPort));
            try (ServiceProcess service = ServiceProcess.start("prod", config)) {
                assertThrows(IOException.class, () -> {
                    try (Socket s = new Socket()) {
                        s.connect(new InetSocketAddress("127.0.0.1", sandboxPort), 1_000);
                    }
                }, "nothing listens on the sandbox port of a prod build");
                // and the service itself works against the real Stripe API base it was given
                ChargeClient.Answer answer = new ChargeClient(TestClients.ACME_KEY)
                        .post(service.uri("/v1/charges"), UUID.randomUUID().toString(), ChargeClient.VISA, Duration.ofSeconds(30));
                assertEquals(201, answer.status(), answer.body());
            }
        }
    }

    /**
     * Configured as k8s/ configures it (environment variables: the configmap's and the secrets'), with only the profile
     * wrong: QUARKUS_PROFILE=dev, -Dquarkus.profile=test, or a profile of one's own whose parent is dev. Each would
     * take application.properties' %dev. or %test. values over the environment's (sk_demo_key let in, the real
     * API key refused), so the service refuses to start, and says why and what to do.
     */
    @Test
    void theProdBuildRefusesToRunUnderTheDevOrTestProfile() throws Exception {
        try (ProcessEnvironment env = new ProcessEnvironment("prod_refuses_dev")) {
            Map<String, String> k8s = new java.util.LinkedHashMap<>();
            k8s.put("QUARKUS_DATASOURCE_JDBC_URL", TestPostgres.jdbcUrl(env.databaseProxy.port(), env.database));
            k8s.put("QUARKUS_DATASOURCE_USERNAME", "postgres");
            k8s.put("QUARKUS_DATASOURCE_PASSWORD", "postgres");
            k8s.put("CHARGEONCE_STRIPE_API_BASE", env.stripe.baseUrl());
            k8s.put("CHARGEONCE_KEY_HASH_VERSION", "1");
            k8s.put("CHARGEONCE_KEY_HASH_SECRETS", TestKeys.SECRETS);
            k8s.put("CHARGEONCE_CLIENTS", TestClients.config());
            k8s.put("STRIPE_API_KEY", "sk_test_the_real_one");
            k8s.put("STRIPE_WEBHOOK_SECRET", "whsec_the_real_one");

            Map<String, String> dev = new java.util.LinkedHashMap<>(k8s);
            dev.put("QUARKUS_PROFILE", "dev");
            assertRefused(ServiceProcess.startExpectingRefusal("prod-as-dev", Map.of(), dev, Duration.ofSeconds(60)), "dev");

            assertRefused(ServiceProcess.startExpectingRefusal("prod-as-test", Map.of("quarkus.profile", "test"), k8s,
                    Duration.ofSeconds(60)), "test");

            Map<String, String> child = new java.util.LinkedHashMap<>(k8s);
            child.put("QUARKUS_PROFILE", "staging");
            child.put("QUARKUS_CONFIG_PROFILE_PARENT", "dev");
            assertRefused(ServiceProcess.startExpectingRefusal("prod-as-child-of-dev", Map.of(), child, Duration.ofSeconds(60)),
                    "dev");
        }
    }

    private static void assertRefused(String log, String profile) {
        String tail = log.length() > 4000 ? log.substring(log.length() - 4000) : log;
        assertTrue(log.contains("refusing to start: the packaged service runs under the profile(s)"),
                "the log says why the start was refused:\n" + tail);
        assertTrue(log.contains("[" + profile + "] is for ./mvnw quarkus:dev and the tests only"), "naming " + profile + ":\n" + tail);
        assertTrue(log.contains("QUARKUS_PROFILE=prod"), "and what to do:\n" + tail);
        assertFalse(log.contains("Listening on"), "no port was opened:\n" + tail);
    }

    @Test
    void healthAndMetricsAreOnTheManagementPortOnly() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        try (ProcessEnvironment env = new ProcessEnvironment("prod_management");
             ServiceProcess service = ServiceProcess.start("prod-management", env.serviceConfig())) {
            for (String path : List.of("/q/metrics", "/q/health/ready", "/q/health/live", "/q/health/started")) {
                HttpResponse<String> api = http.send(HttpRequest.newBuilder(service.uri(path)).build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(404, api.statusCode(), path + " on the API port: " + api.body());
                assertTrue(api.body().contains("\"code\":\"resource_missing\""), path + " on the API port: " + api.body());
                HttpResponse<String> management = http.send(HttpRequest.newBuilder(service.managementUri(path)).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, management.statusCode(), path + " on the management port: " + management.body());
            }
            HttpResponse<String> contract = http.send(HttpRequest.newBuilder(service.uri("/q/openapi")).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, contract.statusCode(), "the contract is served to clients on the API port");
        }
    }
}

package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
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
 * classes: DockerfileIT). And it serves health and metrics on the management port only.
 */
class ProdProfileIT {

    @Test
    void theSandboxNeverRunsInTheProdBuild() throws Exception {
        try (ProcessEnvironment env = new ProcessEnvironment("prod")) {
            int sandboxPort = ServiceProcess.freePort();
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

package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The packaged (prod) build cannot start the Stripe sandbox, even when told to: the bean is not in it. */
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
}

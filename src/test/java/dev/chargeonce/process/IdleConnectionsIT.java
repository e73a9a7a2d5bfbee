package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Half a request, then silence (slowloris): the service closes the connection after its idle timeout instead of
 * holding it for ever (Quarkus' default would be 30 minutes). The packaged service, with a short timeout.
 */
class IdleConnectionsIT {

    @Test
    void aConnectionThatStopsSendingIsClosedAfterTheIdleTimeout() throws Exception {
        try (ProcessEnvironment env = new ProcessEnvironment("idle")) {
            Map<String, String> config = env.serviceConfig();
            config.put("quarkus.http.idle-timeout", "3s");
            try (ServiceProcess service = ServiceProcess.start("idle", config);
                 Socket socket = new Socket("127.0.0.1", service.port())) {
                socket.setSoTimeout(30_000);
                socket.getOutputStream().write("GET /v1/charges HTTP/1.1\r\nHost: x\r\nX-Slow: a".getBytes(StandardCharsets.US_ASCII));
                socket.getOutputStream().flush();
                long start = System.nanoTime();
                int read = socket.getInputStream().read();
                long millis = (System.nanoTime() - start) / 1_000_000L;
                assertEquals(-1, read, "closed without an answer");
                assertTrue(millis >= 2_000 && millis <= 15_000, "closed after the idle timeout, not held: " + millis + " ms");
            }
        }
    }
}

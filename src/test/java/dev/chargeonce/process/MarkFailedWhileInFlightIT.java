package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The protocol model's counterexample to NothingMadeIsTrue (spec/README.md, "Found by the model"), against the
 * packaged service: an operator asks to mark a charge failed while its holder's try is still on its way to Stripe.
 * Before the fix the list found nothing, the row answered "nothing was made, use a new key", and then the try
 * charged: a client that followed the answer paid twice. Now the operator is refused until no try can still land.
 */
class MarkFailedWhileInFlightIT {

    @Test
    void anOperatorCannotMarkFailedAChargeWhoseTryIsOnItsWayToStripe() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        ChargeClient client = new ChargeClient(TestClients.ACME_KEY);
        try (ProcessEnvironment env = new ProcessEnvironment("markfailed")) {
            Map<String, String> config = env.serviceConfig();
            config.put("chargeonce.auth.operators", dev.chargeonce.testing.TestOperators.config());
            try (ServiceProcess service = ServiceProcess.start("markfailed", config)) {
                String key = UUID.randomUUID().toString();
                env.stripe.plan("slow:6000"); // the holder's try stays on its way (not yet executed) for 6 s
                CompletableFuture<ChargeClient.Answer> holder = CompletableFuture.supplyAsync(
                        () -> client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(60)));
                String chargeId = awaitRow(env, key);

                String story = http.send(HttpRequest.newBuilder(service.uri("/admin/v1/rows/charge/" + chargeId))
                        .header("Authorization", ReconciliationIT.basic()).build(), HttpResponse.BodyHandlers.ofString()).body();
                int generation = Integer.parseInt(story.replaceAll("(?s).*\"leaseGeneration\"\\s*:\\s*(\\d+).*", "$1"));
                HttpResponse<String> markFailed = http.send(HttpRequest.newBuilder(service.uri("/admin/v1/rows/charge/" + chargeId + "/mark-failed"))
                        .header("Authorization", ReconciliationIT.basic()).header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"lease_gen\": " + generation + ", \"reason\": \"looks stuck\"}"))
                        .build(), HttpResponse.BodyHandlers.ofString());

                ChargeClient.Answer answer = holder.get(60, TimeUnit.SECONDS);
                assertEquals(409, markFailed.statusCode(), "mark-failed while a try may still reach Stripe: " + markFailed.body());
                assertTrue(markFailed.body().contains("may still reach Stripe"), markFailed.body());
                assertEquals(201, answer.status(), "the try charged and its answer says so: " + answer);
                assertEquals(1, env.stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(TestClients.ACME, key)).size());
                ChargeClient.Answer retry = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30));
                assertEquals(201, retry.status(), "a retry is told the payment was made, never to use a new key: " + retry);
                assertTrue(retry.replayed());
            }
        }
    }

    static String awaitRow(ProcessEnvironment env, String key) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < until) {
            try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                    "SELECT id FROM stripe_intents WHERE client_id = ? AND stripe_identity = ?")) {
                ps.setString(1, TestClients.ACME);
                ps.setString(2, dev.chargeonce.testing.TestKeys.identity(TestClients.ACME, key));
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        return rs.getString(1);
                    }
                }
            }
            Thread.sleep(20);
        }
        throw new AssertionError("the charge was never claimed");
    }
}

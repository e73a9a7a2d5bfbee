package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import dev.chargeonce.testing.TestOperators;
import java.io.IOException;
import java.net.InetAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The failed-authentication throttle as an attacker meets it, on two packaged instances behind one "ingress". Each
 * test speaks from loopback addresses of its own (Linux routes all of 127/8 to loopback), so the instances see real,
 * distinct peers: 127.0.0.3 is the ingress they trust with {@code X-Forwarded-For}; every other peer is untrusted.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AuthenticationThrottleIT {

    /** The instances' limit: failures per subject and window (the shipped default). */
    private static final int LIMIT = 20;
    private static final String INGRESS = "127.0.0.3";

    ProcessEnvironment env;
    List<ServiceProcess> instances;

    @BeforeAll
    void startTwoInstances() {
        env = new ProcessEnvironment("throttle");
        Map<String, String> config = env.serviceConfig();
        config.put("chargeonce.auth.operators", TestOperators.config());
        config.put("chargeonce.auth.throttle.failures", Integer.toString(LIMIT));
        config.put("chargeonce.auth.throttle.window", "1m");
        // As k8s/ configures it: forwarded addresses are believed from the ingress only.
        config.put("quarkus.http.proxy.proxy-address-forwarding", "true");
        config.put("quarkus.http.proxy.allow-x-forwarded", "true");
        config.put("quarkus.http.proxy.trusted-proxies", INGRESS);
        instances = List.of(ServiceProcess.start("throttle-a", config), ServiceProcess.start("throttle-b", config));
    }

    @AfterAll
    void stop() throws IOException {
        if (instances != null) {
            instances.forEach(ServiceProcess::close);
        }
        if (env != null) {
            env.close();
        }
    }

    @Test
    void fortyFailuresFromOneAddressLockOutNeitherAValidClientNorAValidOperator() {
        // Every client behind an ingress that forwards nothing arrives from the same address: the attacker's too.
        HttpClient shared = from("127.0.0.1");
        for (ServiceProcess instance : instances) {
            int refused = 0;
            for (int i = 0; i < 2 * LIMIT; i++) {
                int status = get(shared, instance, "/v1/charges", "Bearer sk_guess_" + i, null).statusCode();
                assertTrue(status == 401 || status == 429, "a wrong key is refused: " + status);
                refused += status == 429 ? 1 : 0;
            }
            assertTrue(refused >= LIMIT - 1, instance.name() + ": the guesser was slowed down (" + refused + " x 429)");
            for (int i = 0; i < 3; i++) {
                HttpResponse<String> client = get(shared, instance, "/v1/charges", "Bearer " + TestClients.ACME_KEY, null);
                assertEquals(200, client.statusCode(), instance.name() + ": a valid client key from the same address: " + client.body());
                HttpResponse<String> operator = get(shared, instance, "/console", TestOperators.basic(), null);
                assertEquals(200, operator.statusCode(), instance.name() + ": a valid operator from the same address: " + operator.body());
                HttpResponse<String> admin = get(shared, instance, "/admin/v1/findings", TestOperators.basic(), null);
                assertEquals(200, admin.statusCode(), instance.name() + ": the admin API for a valid operator: " + admin.body());
            }
            // The guesser itself is still refused.
            assertEquals(429, get(shared, instance, "/v1/charges", "Bearer sk_guess_more", null).statusCode());
        }
    }

    @Test
    void failedOperatorPasswordsLockOutNeitherTheOperatorNorTheClients() {
        HttpClient shared = from("127.0.0.2");
        for (ServiceProcess instance : instances) {
            for (int i = 0; i < 2 * LIMIT; i++) {
                int status = get(shared, instance, "/console", TestOperators.basic(TestOperators.NAME, "guess-" + i), null).statusCode();
                assertTrue(status == 401 || status == 429, "a wrong password is refused: " + status);
            }
            assertEquals(200, get(shared, instance, "/v1/charges", "Bearer " + TestClients.ACME_KEY, null).statusCode());
            HttpResponse<String> operator = get(shared, instance, "/console", TestOperators.basic(), null);
            assertEquals(200, operator.statusCode(), instance.name() + ": the real operator, whose name was guessed at: " + operator.body());
        }
    }

    @Test
    void aForgedForwardedForFromAnUntrustedPeerNeitherEvadesTheThrottleNorBlamesAVictim() {
        HttpClient attacker = from("127.0.0.4");
        HttpClient victim = from("127.0.0.6");
        for (ServiceProcess instance : instances) {
            // 100 wrong keys, each claiming another address: all counted against the peer that sent them.
            int refused = 0;
            for (int i = 0; i < 100; i++) {
                refused += get(attacker, instance, "/v1/charges", "Bearer sk_guess_" + i, "198.51.100." + (i + 1)).statusCode() == 429 ? 1 : 0;
            }
            assertTrue(refused >= 100 - LIMIT, instance.name() + ": forged addresses did not evade the throttle (" + refused + " x 429)");
            // Failures claiming to come from the victim's address are not the victim's.
            for (int i = 0; i < 2 * LIMIT; i++) {
                get(attacker, instance, "/v1/charges", "Bearer sk_guess_" + i, "127.0.0.6");
            }
            HttpResponse<String> typo = get(victim, instance, "/v1/charges", "Bearer sk_acme_typo", null);
            assertEquals(401, typo.statusCode(), instance.name() + ": the victim's own first failure is a plain 401: " + typo.body());
            assertEquals(200, get(victim, instance, "/v1/charges", "Bearer " + TestClients.ACME_KEY, null).statusCode());
        }
    }

    @Test
    void behindTheTrustedIngressEachClientIsCountedByItsOwnAddress() {
        HttpClient ingress = from(INGRESS);
        for (ServiceProcess instance : instances) {
            int refused = 0;
            for (int i = 0; i < 2 * LIMIT; i++) {
                refused += get(ingress, instance, "/v1/charges", "Bearer sk_guess_" + i, "203.0.113.7").statusCode() == 429 ? 1 : 0;
            }
            assertTrue(refused >= LIMIT - 1, instance.name() + ": the client behind the ingress was slowed (" + refused + " x 429)");
            HttpResponse<String> other = get(ingress, instance, "/v1/charges", "Bearer sk_acme_typo", "203.0.113.8");
            assertEquals(401, other.statusCode(), instance.name() + ": another client behind the same ingress is not blamed: " + other.body());
            assertEquals(200, get(ingress, instance, "/v1/charges", "Bearer " + TestClients.ACME_KEY, "203.0.113.7").statusCode(),
                    "even from the guessing address, a valid key passes");
        }
    }

    /** A client whose connections leave from {@code source}, a loopback address. */
    private static HttpClient from(String source) {
        try {
            return HttpClient.newBuilder().localAddress(InetAddress.getByName(source)).connectTimeout(Duration.ofSeconds(2)).build();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static HttpResponse<String> get(HttpClient http, ServiceProcess instance, String path, String authorization,
                                            String forwardedFor) {
        HttpRequest.Builder request = HttpRequest.newBuilder(instance.uri(path)).timeout(Duration.ofSeconds(20))
                .header("Authorization", authorization);
        if (forwardedFor != null) {
            request.header("X-Forwarded-For", forwardedFor);
        }
        try {
            return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

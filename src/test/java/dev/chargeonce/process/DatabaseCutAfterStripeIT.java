package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The database becomes unreachable after Stripe charged and before the row is updated: the test cuts the TCP
 * proxy between the service and PostgreSQL (it never stops a server it did not start) while the sandbox holds the
 * create, then restores it. Or the database falls silent instead: nothing is closed, nothing answers, and only the
 * service's own bound on a read (dev.chargeonce.jdbc.WatchedSocketFactory) ends the wait.
 */
class DatabaseCutAfterStripeIT {

    ProcessEnvironment env;
    ServiceProcess service;
    final ChargeClient client = new ChargeClient(TestClients.ACME_KEY);

    @BeforeEach
    void setUp() {
        env = new ProcessEnvironment("dbcut");
        Map<String, String> config = env.serviceConfig();
        // Stripe holds the create 1.5 s while the database is cut: the read timeout must outlast it.
        ProcessEnvironment.shortLease(config, java.time.Duration.ofSeconds(4), java.time.Duration.ofSeconds(2));
        config.put("chargeonce.recovery.interval", "1s");
        // A read of a database that fell silent fails after 3 s (10 s in production).
        config.put("quarkus.datasource.jdbc.additional-jdbc-properties.watchedReadLimit", "3");
        service = ServiceProcess.start("dbcut", config);
    }

    @AfterEach
    void tearDown() throws Exception {
        service.close();
        env.close();
    }

    @Test
    void noSecondChargeAndTheRowCompletesOnceTheDatabaseIsBack() throws Exception {
        String key = UUID.randomUUID().toString();
        env.stripe.setLatencyMillis(1_500);
        CompletableFuture<ChargeClient.Answer> first = CompletableFuture.supplyAsync(
                () -> client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(30)));
        env.awaitCreateRequests(1, Duration.ofSeconds(10));
        env.databaseProxy.cut();
        ChargeClient.Answer during = first.get();
        env.stripe.setLatencyMillis(0);
        // On a busy machine the service's try may time out before Stripe's answer: Stripe still charges, a moment later.
        env.awaitStripeCharged(TestClients.ACME, key, Duration.ofSeconds(30));
        assertEquals(1, env.stripe.ledger().size(), "Stripe charged");
        assertEquals(503, during.status(), "the outcome could not be recorded: not final, retry: " + during.body());
        assertTrue(during.retryAfter() != null);

        retryIsRefusedBeforeStripeWhileTheDatabaseIsAway(key);
        env.databaseProxy.restore();
        theRowCompletesWithTheOneChargeAndIsReplayed(key);
    }

    @Test
    void aDatabaseThatFallsSilentAfterStripeIsNoticedWithinTheReadLimitAndTheRowCompletesOnceItAnswersAgain() throws Exception {
        String key = UUID.randomUUID().toString();
        env.stripe.setLatencyMillis(1_500);
        CompletableFuture<ChargeClient.Answer> first = CompletableFuture.supplyAsync(
                () -> client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(60)));
        env.awaitCreateRequests(1, Duration.ofSeconds(10));
        env.databaseProxy.silence();
        long silentSince = System.nanoTime();
        ChargeClient.Answer during = first.get();
        Duration answeredAfter = Duration.ofNanos(System.nanoTime() - silentSince);
        env.stripe.setLatencyMillis(0);
        // On a busy machine the service's try may time out before Stripe's answer: Stripe still charges, a moment later.
        env.awaitStripeCharged(TestClients.ACME, key, Duration.ofSeconds(30));
        assertEquals(1, env.stripe.ledger().size(), "Stripe charged");
        assertEquals(503, during.status(), "the outcome could not be recorded: not final, retry: " + during.body());
        // The finish was sent into the silence about 1.5 s after it began and is given up 3 s later; without a bound
        // on the read the request would wait for the client's 60 s (generous for a loaded machine).
        assertTrue(answeredAfter.compareTo(Duration.ofSeconds(40)) < 0, "answered after " + answeredAfter);

        retryIsRefusedBeforeStripeWhileTheDatabaseIsAway(key);
        env.databaseProxy.restore();
        theRowCompletesWithTheOneChargeAndIsReplayed(key);
    }

    /** While the database is cut or silent, a retry is refused (503) before any Stripe call. */
    private void retryIsRefusedBeforeStripeWhileTheDatabaseIsAway(String key) throws Exception {
        long creates = env.stripe.createRequests();
        ChargeClient.Answer whileAway = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(60));
        assertEquals(503, whileAway.status(), whileAway.body());
        assertEquals(creates, env.stripe.createRequests(), "no claim, no Stripe call");
        assertEquals("processing", env.rowStatus(key));
    }

    /** Once it is back, the recovery worker (or a retry) re-sends the same Stripe key and records Stripe's answer. */
    private void theRowCompletesWithTheOneChargeAndIsReplayed(String key) throws Exception {
        assertEquals("completed", env.awaitRowStatus(key, "completed", Duration.ofSeconds(30)));
        assertEquals(1, env.stripe.ledger().size(), "no second charge");
        ChargeClient.Answer after = client.post(service.uri("/v1/charges"), key, ChargeClient.VISA, Duration.ofSeconds(10));
        assertEquals(201, after.status(), after.body());
        assertTrue(after.body().contains(env.stripe.ledger().get(0).id()));
    }

}

package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The store's fencing, statement by statement, against the real database. */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class TakeoverFencingTest {

    static final Duration HORIZON = Duration.ofHours(23);

    @Inject
    IdempotencyStore store;

    @Inject
    AgroalDataSource primary;

    @Test
    void concurrentRecoveryPassesNeverTakeOverTheSameRow() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        int rows = 60;
        for (int i = 0; i < rows; i++) {
            insertExpired(client, "k" + i);
        }
        int workers = 4;
        CountDownLatch start = new CountDownLatch(1);
        List<Future<List<ClaimedIntent>>> passes = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(workers)) {
            for (int w = 0; w < workers; w++) {
                Callable<List<ClaimedIntent>> pass = () -> {
                    start.await();
                    List<ClaimedIntent> mine = new ArrayList<>();
                    List<ClaimedIntent> batch;
                    do {
                        batch = store.takeOverExpired(7, HORIZON).stream().filter(i -> i.clientId().equals(client)).toList();
                        mine.addAll(batch);
                    } while (!batch.isEmpty());
                    return mine;
                };
                passes.add(pool.submit(pass));
            }
            start.countDown();
        }
        Set<String> seen = new HashSet<>();
        int total = 0;
        for (Future<List<ClaimedIntent>> f : passes) {
            for (ClaimedIntent intent : f.get()) {
                total++;
                assertTrue(seen.add(intent.id()), "row " + intent.id() + " taken over twice");
                assertEquals(2, intent.leaseGeneration());
                assertTrue(store.finish(intent, IntentStatus.FAILED, new StoredAnswer(400, "{}"), null));
            }
        }
        assertEquals(rows, total, "every expired row was taken over exactly once");
    }

    @Test
    void aHolderThatLostItsLeaseCannotFinishOrRelease() throws Exception {
        String client = "fencing-" + UUID.randomUUID();
        IdempotencyKey key = new IdempotencyKey("k");
        NewIntent intent = new NewIntent("chg_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24), client, key,
                new Fingerprint("fp"), "{\"amount\":1,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}", 1, "usd");
        ClaimedIntent original = assertInstanceOf(Claim.Fresh.class, store.claim(intent, HORIZON)).intent();
        assertInstanceOf(Claim.InFlight.class, store.claim(intent, HORIZON), "a live lease answers in flight");

        expireLease(original.id());
        ClaimedIntent successor = assertInstanceOf(Claim.TakenOver.class, store.claim(intent, HORIZON)).intent();
        assertEquals(original.leaseGeneration() + 1, successor.leaseGeneration());
        assertEquals(original.stripeAttempt(), successor.stripeAttempt(), "a takeover never changes the Stripe key");

        assertFalse(store.finish(original, IntentStatus.COMPLETED, new StoredAnswer(201, "{\"stale\":true}"), "pi_stale"),
                "the stale holder's finish changes nothing");
        assertTrue(store.nextStripeAttempt(original, HORIZON).isEmpty(), "nor can it move the Stripe attempt");
        assertTrue(store.finish(successor, IntentStatus.COMPLETED, new StoredAnswer(201, "{\"winner\":true}"), "pi_w"));
        assertFalse(store.finish(successor, IntentStatus.FAILED, new StoredAnswer(402, "{}"), null), "final is final");
        assertEquals("{\"winner\":true}", store.answerOf(original.id()).orElseThrow().body());
        Claim replay = store.claim(intent, HORIZON);
        assertEquals(new StoredAnswer(201, "{\"winner\":true}"), assertInstanceOf(Claim.Replay.class, replay).answer());
        assertInstanceOf(Claim.Mismatch.class, store.claim(new NewIntent("chg_other", client, key, new Fingerprint("other"),
                "{}", 1, "usd"), HORIZON));
    }

    private void insertExpired(String client, String key) throws Exception {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status, lease_until)
                VALUES (?, ?, ?, 'f', '{}', 1, 'usd', 'processing', now() - interval '1 second')""")) {
            ps.setString(1, "chg_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24));
            ps.setString(2, client);
            ps.setString(3, key);
            ps.executeUpdate();
        }
    }

    private void expireLease(String id) throws Exception {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("UPDATE stripe_intents SET lease_until = now() - interval '1 second' WHERE id = ?")) {
            ps.setString(1, id);
            ps.executeUpdate();
        }
    }
}

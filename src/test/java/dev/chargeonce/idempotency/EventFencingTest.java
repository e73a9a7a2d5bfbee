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
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What Stripe's word (an event, the sync worker) may change in a row, statement by statement, against the real
 * database. The event's transaction locks the row and reads it before it runs these; each statement still refuses
 * on its own what it must never do, whatever its caller read.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class EventFencingTest {

    @Inject
    Claims claims;

    @Inject
    Finishes finishes;

    @Inject
    AgroalDataSource primary;

    /**
     * What Stripe says finishes a row only while it is processing: an answered row keeps the answer its client may
     * have already.
     */
    @Test
    void stripesWordNeverRewritesAnAnsweredRow() throws Exception {
        String client = "events-" + UUID.randomUUID();
        NewIntent intent = TakeoverFencingTest.newIntent(client, "k");
        ClaimedIntent holder = assertInstanceOf(Claim.Fresh.class, claims.claim(intent, TakeoverFencingTest.HORIZON)).intent();
        assertTrue(finishes.finish(holder, IntentStatus.COMPLETED, new StoredAnswer(201, "{\"answered\":true}"), "pi_a"));

        try (Connection tx = primary.getConnection()) {
            assertFalse(finishes.finishFromStripe(tx, Operation.CHARGE, holder.id(), client,
                    new Finishes.Final(IntentStatus.FAILED, new StoredAnswer(402, "{\"later\":true}"), "pi_a", "canceled", null)),
                    "Stripe's later word does not finish an answered row");
        }
        assertEquals(new StoredAnswer(201, "{\"answered\":true}"),
                assertInstanceOf(Claim.Replay.class, claims.claim(intent, TakeoverFencingTest.HORIZON)).answer(), "the answer stands");
    }

    /**
     * An event finds its row by the object's id, else by the key's identity (metadata): by identity only a row that
     * names no object yet, or names this one. An object of the identity that the row does not name (another
     * attempt's, made by a try the row never heard back from) must not move the row that names its own.
     */
    @Test
    void anObjectOfTheKeysIdentityFindsOnlyARowThatNamesNoOtherObject() throws Exception {
        String client = "events-" + UUID.randomUUID();
        ClaimedIntent holder = assertInstanceOf(Claim.Fresh.class,
                claims.claim(TakeoverFencingTest.newIntent(client, "k"), TakeoverFencingTest.HORIZON)).intent();
        String identity = holder.stripeIdentity();
        try (Connection tx = primary.getConnection()) {
            assertEquals(holder.id(), finishes.lockOwner(tx, Operation.CHARGE, "pi_first", identity, client).orElseThrow().id(),
                    "a row that names no object yet is found by identity");
        }
        assertTrue(finishes.finish(holder, IntentStatus.COMPLETED, new StoredAnswer(201, "{}"), "pi_first"));

        try (Connection tx = primary.getConnection()) {
            assertEquals(holder.id(), finishes.lockOwner(tx, Operation.CHARGE, "pi_first", identity, client).orElseThrow().id(),
                    "the object the row names finds it");
            assertTrue(finishes.lockOwner(tx, Operation.CHARGE, "pi_other", identity, client).isEmpty(),
                    "another object of the identity does not");
            assertTrue(finishes.lockOwner(tx, Operation.CHARGE, "pi_other", identity, null).isEmpty(),
                    "nor when the object names no client");
        }
    }

    /**
     * A refund answered failed without a Stripe object (Stripe refused it) gave its amount back to the charge when
     * it was answered. Stripe's later word about a refund of its identity moves it no more: moving it would give
     * the amount back a second time, and the charge could be refunded beyond what was paid.
     */
    @Test
    void aRefundAnsweredFailedIsNotMovedByStripesLaterWord() throws Exception {
        String client = "events-" + UUID.randomUUID();
        String chargeId = "chg_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
        String refundId = "rfd_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24);
        try (Connection c = primary.getConnection(); PreparedStatement charge = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, fingerprint, request, amount, currency, status, response_status,
                                            response_body, finished_at, charge_status, payment_intent_id, amount_reserved,
                                            stripe_identity)
                VALUES (?, ?, 'f', '{}', 1000, 'usd', 'completed', 201, '{}', now(), 'succeeded', ?, 400, ?)""");
             PreparedStatement refund = c.prepareStatement("""
                INSERT INTO stripe_refunds (id, charge_id, client_id, fingerprint, request, amount, currency, status,
                                            response_status, response_body, finished_at, stripe_identity)
                VALUES (?, ?, ?, 'f', '{}', 300, 'usd', 'failed', 400, '{}', now(), ?)""")) {
            charge.setString(1, chargeId);
            charge.setString(2, client);
            charge.setString(3, "pi_" + chargeId.substring(4));
            charge.setString(4, UUID.randomUUID().toString());
            charge.executeUpdate();
            refund.setString(1, refundId);
            refund.setString(2, chargeId);
            refund.setString(3, client);
            refund.setString(4, UUID.randomUUID().toString());
            refund.executeUpdate();
        }

        for (String state : new String[] {"pending", "succeeded", "failed"}) {
            try (Connection tx = primary.getConnection()) {
                assertFalse(finishes.advanceState(tx, Operation.REFUND, refundId, client, state, "re_late"),
                        "a refund answered failed stays as it was, whatever Stripe says later: " + state);
            }
        }
        assertEquals(400, reserved(chargeId), "the charge's other refunds stay reserved: the amount is not given back twice");
    }

    private long reserved(String chargeId) throws SQLException {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT amount_reserved FROM stripe_intents WHERE id = ?")) {
            ps.setString(1, chargeId);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return rs.getLong(1);
            }
        }
    }
}

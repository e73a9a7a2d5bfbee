package dev.chargeonce.idempotency;

import static dev.chargeonce.idempotency.StatementCatalog.sql;

import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A refund's claim, with its amount reserved on the charge: a new refund key is claimed in one transaction that
 * locks the charge, checks what is left of it, inserts the refund's row and adds the amount to the charge's
 * {@code amount_reserved}; the row and the reservation commit together, or neither does. What is left also leaves
 * out what refunds made outside the service hold ({@link OutsideRefundRows}). The reservation is given
 * back by the statement that ends a refund without refunding ({@code REFUND_RELEASE} in {@link StatementCatalog}),
 * so that {@code amount_reserved} is always the charge's pending and succeeded refunds, and never more than the
 * charge. A key that exists is answered as any claim ({@link Claims}); everything after the claim is the same
 * protocol as a charge's, on {@code stripe_refunds}.
 */
@ApplicationScoped
public class RefundReservations {

    /** The charge a refund is claimed on, locked: refund claims of one charge take turns (the reservation). */
    static final String LOCK_CHARGE_FOR_REFUND = """
            SELECT status, charge_status, payment_intent_id, amount, amount_reserved, currency
              FROM stripe_intents WHERE id = ? AND client_id = ?
               FOR UPDATE
            """;

    static final String KEY_CLAIMED = "SELECT 1 FROM stripe_refunds WHERE stripe_identity = ANY (?) AND client_id = ?";

    static final String RESERVE = """
            UPDATE stripe_intents SET amount_reserved = amount_reserved + ?, updated_at = statement_timestamp()
             WHERE id = ? AND client_id = ?
            """;

    private final AgroalDataSource primary;
    private final IdempotencyConfig config;
    private final KeyIdentities identities;
    private final Claims claims;
    private final Timer claimLatency;

    RefundReservations(@Default AgroalDataSource primary, IdempotencyConfig config, KeyIdentities identities,
                       MeterRegistry metrics, Claims claims) {
        this.primary = primary;
        this.config = config;
        this.identities = identities;
        this.claims = claims;
        this.claimLatency = Claims.claimLatency(metrics);
    }

    /**
     * Claims a refund key on a charge. A key that exists is answered as any claim (one indexed read for a replay;
     * the charge is not locked). A new key is claimed in one transaction on the primary that locks the charge,
     * checks that it succeeded and that the amount is at most what is left (the charge's amount minus its pending
     * and succeeded refunds, those made outside the service too), inserts the refund's row and reserves its amount:
     * so no interleaving of refunds, from any number of instances, can promise back more than was paid. Nothing is
     * stored for a refusal.
     */
    public RefundClaim claimRefund(NewRefund refund, Duration keyHorizon) {
        Timer.Sample sample = Timer.start();
        try {
            List<String> lookup = identities.lookup(Operation.REFUND, refund.clientId(), refund.key());
            for (int round = 0; round < 3; round++) {
                Optional<Row> existing = Jdbc.onConnection(primary,
                        c -> Row.ofKey(c, Operation.REFUND, refund.clientId(), lookup, keyHorizon));
                if (existing.isPresent()) {
                    Optional<Claim> claim = claims.answerOrTakeOver(Operation.REFUND, existing.get(), refund.fingerprint(), keyHorizon);
                    if (claim.isPresent()) {
                        return new RefundClaim.Claimed(claim.get());
                    }
                    continue;
                }
                Optional<RefundClaim> claimed = claimNewRefund(refund, keyHorizon);
                if (claimed.isPresent()) {
                    return claimed.get();
                }
                // The key was claimed by a concurrent request (on another charge, or after our look): answer it.
            }
            return new RefundClaim.Claimed(new Claim.InFlight(Duration.ofSeconds(1), null));
        } finally {
            sample.stop(claimLatency);
        }
    }

    private Optional<RefundClaim> claimNewRefund(NewRefund refund, Duration keyHorizon) {
        long acquired = System.nanoTime();
        try (Connection tx = primary.getConnection()) {
            tx.setAutoCommit(false);
            try {
                if (identities.mixedWriters()) {
                    // Before the charge's lock, as every claim takes the two: in one order, never a deadlock.
                    Jdbc.lockKey(tx, identities.lockName(Operation.REFUND, refund.clientId(), refund.key()));
                }
                Optional<RefundClaim> claimed = claimNewRefund(tx, refund, keyHorizon, acquired);
                if (claimed.isPresent() && claimed.get() instanceof RefundClaim.Claimed) {
                    tx.commit();
                } else {
                    tx.rollback();
                }
                return claimed;
            } catch (SQLException | RuntimeException e) {
                tx.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    private Optional<RefundClaim> claimNewRefund(Connection tx, NewRefund refund, Duration keyHorizon, long acquired)
            throws SQLException {
        String status;
        String chargeState;
        String paymentIntentId;
        long amount;
        long reserved;
        String currency;
        try (PreparedStatement ps = tx.prepareStatement(LOCK_CHARGE_FOR_REFUND)) {
            ps.setString(1, refund.chargeId());
            ps.setString(2, refund.clientId());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.of(new RefundClaim.ChargeMissing());
                }
                status = rs.getString("status");
                chargeState = rs.getString("charge_status");
                paymentIntentId = rs.getString("payment_intent_id");
                amount = rs.getLong("amount");
                reserved = rs.getLong("amount_reserved");
                currency = rs.getString("currency");
            }
        }
        // The key may have been claimed while this request waited for the charge's lock (the same key sent twice at
        // once: the other claim held the lock until it committed): the reservation read above then holds this key's
        // own amount, and refusing it as too large would be a final answer for a refund that is being made. Look
        // again under the lock, and answer the key as claimed.
        try (PreparedStatement ps = tx.prepareStatement(KEY_CLAIMED)) {
            ps.setArray(1, tx.createArrayOf("text", identities.lookup(Operation.REFUND, refund.clientId(), refund.key()).toArray()));
            ps.setString(2, refund.clientId());
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return Optional.empty();
                }
            }
        }
        // Succeeded: its PaymentIntent did (rows answered before charge_status existed: by their answer).
        boolean succeeded = chargeState != null ? chargeState.equals("succeeded") : status.equals("completed");
        if (!succeeded || paymentIntentId == null) {
            return Optional.of(new RefundClaim.ChargeNotRefundable(chargeState != null ? chargeState
                    : status.equals("completed") ? "succeeded" : status.equals("failed") ? "failed" : "processing"));
        }
        // Refunds made outside this service (Stripe's Dashboard) count too: read after the lock, in a statement of its
        // own, so that one recorded while this claim waited for the lock is seen.
        long outside = identities.schemaHeldBeforeKeysErased() ? 0 // their table may not exist yet (KeyIdentities)
                : OutsideRefundRows.refundedOutside(tx, refund.clientId(), refund.chargeId());
        long left = Math.max(0, amount - reserved - outside);
        long refundAmount = refund.requestedAmount() == null ? left : refund.requestedAmount();
        if (refundAmount <= 0 || refundAmount > left) {
            return Optional.of(new RefundClaim.AmountTooLarge(refundAmount, left));
        }
        String terms = refund.terms().apply(new RefundableCharge(refund.chargeId(), paymentIntentId, currency, refundAmount));
        Optional<Row> inserted;
        try (PreparedStatement ps = tx.prepareStatement(sql(Operation.REFUND).claim())) {
            int i = 1;
            ps.setString(i++, refund.id());
            ps.setString(i++, refund.chargeId());
            ps.setString(i++, refund.clientId());
            ps.setString(i++, null); // the key itself is not stored
            ps.setString(i++, refund.fingerprint().stored(config.fingerprintVersion()));
            ps.setString(i++, terms);
            ps.setLong(i++, refundAmount);
            ps.setString(i++, currency);
            ps.setLong(i++, config.lease().toMillis());
            ps.setLong(i++, config.lease().toMillis());
            ps.setString(i, identities.of(Operation.REFUND, refund.clientId(), refund.key()));
            try (ResultSet rs = ps.executeQuery()) {
                inserted = rs.next() ? Optional.of(Row.held(rs, acquired, config.lease(), keyHorizon)) : Optional.empty();
            }
        }
        if (inserted.isEmpty()) {
            return Optional.empty();
        }
        try (PreparedStatement ps = tx.prepareStatement(RESERVE)) {
            ps.setLong(1, refundAmount);
            ps.setString(2, refund.chargeId());
            ps.setString(3, refund.clientId());
            if (ps.executeUpdate() != 1) {
                // the charge was locked by this transaction above: a reservation that found nothing is a bug, and
                // the refund's row must not commit without it (it would promise back money nothing accounts for)
                throw new IllegalStateException("the reservation of refund " + refund.id() + " found no charge " + refund.chargeId());
            }
        }
        return Optional.of(new RefundClaim.Claimed(new Claim.Fresh(inserted.get().intent(Operation.REFUND))));
    }
}

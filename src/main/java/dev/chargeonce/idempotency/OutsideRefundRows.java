package dev.chargeonce.idempotency;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Optional;
import java.util.Set;

/**
 * Refunds made outside this service (in Stripe's Dashboard, by another integration) on charges it made: every
 * statement on {@code outside_refunds}. Stripe's word, recorded once per Stripe refund, whoever sees it first (an
 * event, reconciliation's list), and moved forward only, in a transaction that locks the refund's charge as a refund
 * claim does ({@link RefundReservations}): a claim that locks the charge after an outside refund was recorded reads
 * it, so what a refund through the API may reserve counts it ({@link #REFUNDED_OUTSIDE}). Pending and succeeded
 * outside refunds count against the charge; failed and canceled ones give their amount back.
 */
@ApplicationScoped
public class OutsideRefundRows {

    /** The states in which an outside refund counts against its charge (its money is or may still be gone). */
    static final Set<String> COUNTED = Set.of("pending", "requires_action", "succeeded");

    /**
     * The charge whose PaymentIntent a refund names: a refund made outside names no client, so it is read over every
     * client without locks (a charge's client and PaymentIntent never change), then locked among its client's rows
     * ({@link #LOCK_CHARGE_OF_OUTSIDE_REFUND}).
     */
    static final String CHARGE_OF_PAYMENT_INTENT = """
            SELECT client_id, id FROM stripe_intents WHERE payment_intent_id = ? ORDER BY created_at, id LIMIT 1
            """;

    /** The charge, locked for the record's transaction: outside refunds of a charge and its refund claims take turns. */
    static final String LOCK_CHARGE_OF_OUTSIDE_REFUND = """
            SELECT id, amount, currency FROM stripe_intents WHERE id = ? AND client_id = ? FOR UPDATE
            """;

    static final String OUTSIDE_REFUND_STATUS = """
            SELECT status FROM outside_refunds WHERE stripe_refund_id = ? AND client_id = ?
            """;

    static final String INSERT_OUTSIDE_REFUND = """
            INSERT INTO outside_refunds (client_id, stripe_refund_id, charge_id, payment_intent_id, amount, status, first_seen_by)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """;

    static final String ADVANCE_OUTSIDE_REFUND = """
            UPDATE outside_refunds SET status = ?, amount = ?, updated_at = statement_timestamp()
             WHERE stripe_refund_id = ? AND client_id = ?
            """;

    /**
     * What a charge's outside refunds hold against it (pending and succeeded): read by a refund claim after it locked
     * the charge, in a statement of its own (its snapshot then includes an outside refund recorded while it waited).
     */
    static final String REFUNDED_OUTSIDE = """
            SELECT coalesce(sum(amount), 0) FROM outside_refunds
             WHERE charge_id = ? AND client_id = ? AND status IN ('pending', 'requires_action', 'succeeded')
            """;

    private final AgroalDataSource primary;
    private final KeyIdentities identities;

    OutsideRefundRows(@Default AgroalDataSource primary, KeyIdentities identities) {
        this.primary = primary;
        this.identities = identities;
    }

    /** A refund at Stripe that names none of this service's keys, as read (an event's object, a list's record). */
    public record OutsideRefund(String stripeRefundId, String paymentIntentId, long amount, String status) {
    }

    /**
     * What recording it did: the charge it is on, whether this was its first sighting, its status before (null the
     * first time) and now, and whether it counts against the charge now.
     */
    public record Recorded(String chargeId, String clientId, long chargeAmount, String currency, boolean first,
                           String statusBefore, String status) {

        public boolean counts() {
            return COUNTED.contains(status);
        }
    }

    /**
     * Records an outside refund in the caller's transaction: locks its charge, inserts it the first time, moves its
     * status forward after (never back, never out of failed or canceled). Empty when no charge of this service has
     * its PaymentIntent (a refund of a payment made outside too): nothing here is concerned.
     */
    public Optional<Recorded> record(Connection tx, OutsideRefund refund, String seenBy) throws SQLException {
        if (identities.schemaHeldBeforeKeysErased()) {
            return Optional.empty(); // the table may not exist yet: the instances of the upgrade's step 3 record it
        }
        if (refund.paymentIntentId() == null || refund.amount() <= 0 || Operation.REFUND.rank(refund.status()) == 0) {
            return Optional.empty(); // not a refund as Stripe describes one: nothing to count
        }
        String clientId;
        String chargeId;
        try (PreparedStatement ps = tx.prepareStatement(CHARGE_OF_PAYMENT_INTENT)) {
            ps.setString(1, refund.paymentIntentId());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                clientId = rs.getString("client_id");
                chargeId = rs.getString("id");
            }
        }
        long chargeAmount;
        String currency;
        try (PreparedStatement ps = tx.prepareStatement(LOCK_CHARGE_OF_OUTSIDE_REFUND)) {
            ps.setString(1, chargeId);
            ps.setString(2, clientId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty(); // deleted by retention meanwhile
                }
                chargeAmount = rs.getLong("amount");
                currency = rs.getString("currency");
            }
        }
        String before = null;
        try (PreparedStatement ps = tx.prepareStatement(OUTSIDE_REFUND_STATUS)) {
            ps.setString(1, refund.stripeRefundId());
            ps.setString(2, clientId);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    before = rs.getString(1);
                }
            }
        }
        if (before == null) {
            try (PreparedStatement ps = tx.prepareStatement(INSERT_OUTSIDE_REFUND)) {
                ps.setString(1, clientId);
                ps.setString(2, refund.stripeRefundId());
                ps.setString(3, chargeId);
                ps.setString(4, refund.paymentIntentId());
                ps.setLong(5, refund.amount());
                ps.setString(6, refund.status());
                ps.setString(7, seenBy);
                ps.executeUpdate();
            }
            return Optional.of(new Recorded(chargeId, clientId, chargeAmount, currency, true, null, refund.status()));
        }
        // Events come late, twice, out of order, and a list may be older than an event: forward only.
        boolean forward = !Operation.REFUND.isFinalState(before) && Operation.REFUND.rank(refund.status()) > Operation.REFUND.rank(before);
        if (!forward) {
            return Optional.of(new Recorded(chargeId, clientId, chargeAmount, currency, false, before, before));
        }
        try (PreparedStatement ps = tx.prepareStatement(ADVANCE_OUTSIDE_REFUND)) {
            ps.setString(1, refund.status());
            ps.setLong(2, refund.amount());
            ps.setString(3, refund.stripeRefundId());
            ps.setString(4, clientId);
            ps.executeUpdate();
        }
        return Optional.of(new Recorded(chargeId, clientId, chargeAmount, currency, false, before, refund.status()));
    }

    /** {@link #record} in a transaction of its own (reconciliation's). */
    public Optional<Recorded> record(OutsideRefund refund, String seenBy) {
        return Transactions.inTransaction(primary, tx -> record(tx, refund, seenBy));
    }

    /** What a charge's outside refunds hold against it now (pending and succeeded), in the caller's transaction. */
    static long refundedOutside(Connection tx, String clientId, String chargeId) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(REFUNDED_OUTSIDE)) {
            ps.setString(1, chargeId);
            ps.setString(2, clientId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** {@link #refundedOutside(Connection, String, String)} on its own (reconciliation's total of a charge's refunds). */
    public long refundedOutside(String clientId, String chargeId) {
        if (identities.schemaHeldBeforeKeysErased()) {
            return 0; // the table may not exist yet (KeyIdentities#schemaHeldBeforeKeysErased)
        }
        return Jdbc.onConnection(primary, c -> refundedOutside(c, clientId, chargeId));
    }
}

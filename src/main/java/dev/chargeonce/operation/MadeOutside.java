package dev.chargeonce.operation;

import dev.chargeonce.idempotency.Operation;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Optional;

/**
 * What a Stripe object made outside this service (it carries none of its metadata: Stripe's Dashboard, another
 * integration) means here, applied inside the caller's transaction (an event's). A refund made in the Dashboard on a
 * charge of this service counts against that charge. Implemented where such objects are reconciled
 * ({@code dev.chargeonce.reconcile.OutsideRefunds}); {@link Settlement} asks it about objects no row has.
 */
public interface MadeOutside {

    /** What applying it did: the row it concerned and what changed; empty when it concerns nothing here. */
    Optional<Settlement.Result> apply(Connection tx, Operation op, StripeSide.ObjectState object) throws SQLException;
}

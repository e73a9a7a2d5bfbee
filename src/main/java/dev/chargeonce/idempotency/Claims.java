package dev.chargeonce.idempotency;

import static dev.chargeonce.idempotency.StatementCatalog.byOperation;
import static dev.chargeonce.idempotency.StatementCatalog.sql;

import dev.chargeonce.jdbc.WatchedSocketFactory;
import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Default;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A key's claim and its lease: the claim (a retry's indexed read, or the insert that decides the key is new), the
 * takeover of an expired lease (by a retry, or by the recovery worker), and what a holder writes while it holds the
 * row short of its answer: its lease given back ({@link #release}), renewed, the next Stripe attempt, the row parked
 * for an operator. Every write a holder makes here carries its lease generation, so a holder that lost its lease
 * changes nothing; every takeover moves the generation on. The answer itself is written by {@link Finishes}.
 *
 * <p>Each method is one statement in its own committed transaction (autocommit): no connection is held between
 * statements, so none is held while Stripe is called, and the claim has committed before Stripe is called. Rows are
 * found by the key's identity (a hash of client and key, unique with the client), never by the raw key. Only on the
 * primary: the data source is the default one, which is the primary by configuration.
 *
 * <p>Created at start-up: a fingerprint version it cannot write refuses the start, and the claim's meters exist from
 * the start.
 */
@Startup
@ApplicationScoped
public class Claims {

    private final AgroalDataSource primary;
    private final IdempotencyConfig config;
    private final KeyIdentities identities;
    private final Timer claimLatency;

    Claims(@Default AgroalDataSource primary, IdempotencyConfig config, KeyIdentities identities, MeterRegistry metrics) {
        this.primary = primary;
        this.config = config;
        this.identities = identities;
        if (config.fingerprintVersion() < 1 || config.fingerprintVersion() > Fingerprint.LATEST_VERSION) {
            throw new IllegalStateException("chargeonce.idempotency.fingerprint-version must be 1 to " + Fingerprint.LATEST_VERSION);
        }
        this.claimLatency = claimLatency(metrics);
        // Reads the watchdog gave up on (a database that did not answer within watchedReadLimit): each one a statement
        // that failed as unavailable and a connection the pool dropped.
        FunctionCounter.builder("chargeonce.db.reads.closed", WatchedSocketFactory.class,
                        type -> WatchedSocketFactory.readsClosed())
                .description("database reads closed by the read watchdog after watchedReadLimit").register(metrics);
    }

    /** The time a claim takes, a charge's or a refund's ({@link RefundReservations} records into it too). */
    static Timer claimLatency(MeterRegistry metrics) {
        return Timer.builder("chargeonce.db.statement").tag("statement", "claim")
                .publishPercentileHistogram().register(metrics);
    }

    /**
     * Claims the key, or tells what holds it. A retry is one indexed read; a new key adds the insert that decides it
     * is new; a third statement runs only to take over an expired lease. A claim that cannot be committed throws
     * {@link DatabaseUnavailableException}, before anything is sent to Stripe.
     */
    public Claim claim(NewIntent intent, Duration keyHorizon) {
        Timer.Sample sample = Timer.start();
        try {
            return claimUntimed(intent, keyHorizon);
        } finally {
            sample.stop(claimLatency);
        }
    }

    private Claim claimUntimed(NewIntent intent, Duration keyHorizon) {
        // Three rounds at most: a round whose read found nothing and whose insert did nothing lost a race with a
        // concurrent claim of the key (see CLAIM); the next one reads its row.
        List<String> lookup = identities.lookup(intent.operation(), intent.clientId(), intent.key());
        for (int round = 0; round < 3; round++) {
            Optional<Row> found = identities.mixedWriters()
                    ? underKeyLock(identities.lockName(intent.operation(), intent.clientId(), intent.key()),
                            tx -> readOrInsert(tx, intent, lookup, keyHorizon))
                    : Jdbc.onConnection(primary, c -> readOrInsert(c, intent, lookup, keyHorizon));
            if (found.isEmpty()) {
                continue;
            }
            Row row = found.get();
            if (row.fresh()) {
                return new Claim.Fresh(row.intent(intent.operation()));
            }
            Optional<Claim> existing = answerOrTakeOver(intent.operation(), row, intent.fingerprint(), keyHorizon);
            if (existing.isPresent()) {
                return existing.get();
            }
            // Someone else took it over or finished it between the two statements: look again.
        }
        return new Claim.InFlight(Duration.ofSeconds(1), null);
    }

    /**
     * The key's row if it has one (a retry: one indexed read, and nothing else runs), else the new row if the insert
     * made it; empty when a concurrent claim of the key inserted it between the two statements.
     */
    private Optional<Row> readOrInsert(Connection c, NewIntent intent, List<String> lookup, Duration keyHorizon)
            throws SQLException {
        Optional<Row> existing = Row.ofKey(c, intent.operation(), intent.clientId(), lookup, keyHorizon);
        if (existing.isPresent()) {
            return existing;
        }
        String identity = lookup.get(0); // the write version's: what a new row gets
        String id = RowIds.ofIdentity(intent.idPrefix(), identity);
        long acquired = System.nanoTime();
        try (PreparedStatement ps = c.prepareStatement(sql(intent.operation()).claim())) {
            int i = 1;
            ps.setString(i++, id);
            ps.setString(i++, intent.clientId());
            // The key itself is not stored: only a Kafka command's event id, the key of its result records (and
            // every key in the first step of the upgrade from a release before V1.13.0: KeyIdentities#storesKeys).
            ps.setString(i++, intent.origin() != null || identities.storesKeys() ? intent.key().value() : null);
            ps.setString(i++, intent.fingerprint().stored(config.fingerprintVersion()));
            ps.setString(i++, intent.requestJson());
            ps.setLong(i++, intent.amount());
            ps.setString(i++, intent.currency());
            ps.setLong(i++, config.lease().toMillis());
            ps.setLong(i++, config.lease().toMillis());
            ps.setString(i++, identity);
            ps.setString(i, intent.origin());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(Row.inserted(rs, id, intent, identity, acquired)) : Optional.empty();
            }
        }
    }

    /**
     * What an existing row answers a request with this fingerprint, or its lease taken over when it expired; empty
     * when another driver took it over or finished it first (the caller looks again).
     */
    Optional<Claim> answerOrTakeOver(Operation op, Row row, Fingerprint fingerprint, Duration keyHorizon) {
        Optional<Claim> settled = classifyExisting(row, fingerprint);
        if (settled.isPresent()) {
            return settled;
        }
        long acquired = System.nanoTime();
        return Jdbc.first(primary, sql(op).takeOver(), ps -> {
            ps.setLong(1, config.lease().toMillis());
            ps.setLong(2, config.lease().toMillis());
            ps.setString(3, row.id());
            ps.setInt(4, row.leaseGeneration());
            ps.setString(5, row.clientId());
        }, rs -> Row.held(rs, acquired, config.lease(), keyHorizon)).map(taken -> new Claim.TakenOver(taken.intent(op)));
    }

    /**
     * What the key holds, without claiming anything: for when Stripe is known to be unavailable (circuit open),
     * so that replays are still answered and no lease is taken for a call that will not be made. Empty when the
     * key is new; {@link Claim.Unheld} when it is processing with an expired lease (a claim would take it over).
     */
    public Optional<Claim> peek(Operation op, String clientId, IdempotencyKey key, Fingerprint fingerprint, Duration keyHorizon) {
        return peekRow(op, clientId, key, keyHorizon).map(row -> classifyExisting(row, fingerprint).orElseGet(Claim.Unheld::new));
    }

    /** The answer an existing row gives a request with this fingerprint; empty when its lease can be taken over. */
    private static Optional<Claim> classifyExisting(Row row, Fingerprint fingerprint) {
        if (!fingerprint.matches(row.fingerprint())) {
            return Optional.of(new Claim.Mismatch());
        }
        if (row.status() != IntentStatus.PROCESSING) {
            return Optional.of(new Claim.Replay(new StoredAnswer(row.responseStatus(), row.responseBody()), row.createdAt().toInstant(),
                    row.finishedAt() == null ? row.createdAt().toInstant() : row.finishedAt().toInstant()));
        }
        if (row.needsReconciliation()) {
            return Optional.of(new Claim.UnderReconciliation(row.id()));
        }
        if (row.leaseLeftMillis() > 0) {
            return Optional.of(new Claim.InFlight(Duration.ofMillis(row.leaseLeftMillis()), row.id()));
        }
        return Optional.empty();
    }

    /**
     * Takes over up to {@code limit} rows whose lease expired: candidates read without locks, each then taken over
     * by a statement fenced by the generation read, so that another instance never gets the same row (the one that
     * comes second matches nothing). A database failure after some takeovers returns those (their driver drives
     * them); before any, it is thrown.
     */
    public List<ClaimedIntent> takeOverExpired(Operation op, int limit, Duration keyHorizon) {
        return Jdbc.takeEach(primary, sql(op).expiredCandidates(), limit, rs -> rs.getInt("lease_gen"), candidate -> {
            long acquired = System.nanoTime();
            return Jdbc.first(primary, sql(op).takeOverExpired(), ps -> {
                ps.setLong(1, config.lease().toMillis());
                ps.setLong(2, config.lease().toMillis());
                ps.setString(3, candidate.id());
                ps.setString(4, candidate.clientId());
                ps.setInt(5, candidate.leaseGeneration());
            }, rs -> Row.held(rs, acquired, config.lease(), keyHorizon)).map(row -> row.intent(op));
        });
    }

    /**
     * Gives the lease up, leaving the row {@code processing} for the next driver, and records what the holder
     * did at Stripe (see {@link LeaseRelease}). Returns false when the lease was lost: nothing was written.
     */
    public boolean release(ClaimedIntent holder, LeaseRelease release) {
        Long sentAgo = release.sinceLastSend() == null ? null : release.sinceLastSend().toMillis();
        Long recheck = release.recheckAfter() == null ? null : release.recheckAfter().toMillis();
        return Jdbc.update(primary, sql(holder.operation()).release(), ps -> {
            ps.setString(1, release.stripeError());
            // null when nothing was sent: greatest() ignores it, and the last send stays as it was
            ps.setObject(2, sentAgo, java.sql.Types.BIGINT);
            ps.setObject(3, recheck, java.sql.Types.BIGINT);
            ps.setString(4, release.pendingPaymentIntentId());
            ps.setBoolean(5, release.pendingPaymentIntentId() != null);
            ps.setString(6, holder.id());
            ps.setInt(7, holder.leaseGeneration());
            ps.setString(8, holder.clientId());
        }) == 1;
    }

    /**
     * Moves to the next Stripe idempotency key, with a renewed lease for sending it. Only for a holder that has
     * proven at Stripe that the current key created no PaymentIntent and that no request with it still runs there.
     */
    public Optional<ClaimedIntent> nextStripeAttempt(ClaimedIntent holder, Duration keyHorizon) {
        long acquired = System.nanoTime();
        return Jdbc.first(primary, sql(holder.operation()).nextAttempt(), ps -> {
            ps.setLong(1, config.lease().toMillis());
            ps.setLong(2, config.lease().toMillis());
            ps.setString(3, holder.id());
            ps.setInt(4, holder.leaseGeneration());
            ps.setInt(5, holder.stripeAttempt());
            ps.setString(6, holder.clientId());
        }, rs -> Row.held(rs, acquired, config.lease(), keyHorizon)).map(row -> row.intent(holder.operation()));
    }

    /**
     * Extends the holder's lease while it works without sending (a lookup that pages longer than a lease), so that
     * no other driver takes the row over and starts the same work again. False when the lease was already lost.
     */
    public boolean renewLease(ClaimedIntent holder) {
        return Jdbc.update(primary, sql(holder.operation()).renewLease(), ps -> {
            ps.setLong(1, config.lease().toMillis());
            ps.setString(2, holder.id());
            ps.setInt(3, holder.leaseGeneration());
            ps.setString(4, holder.clientId());
        }) == 1;
    }

    /**
     * A charge's row takes on the request that first used its key (its stored fingerprint, its request rebuilt from
     * the Stripe object): that request's row was lost by the database, and this row was claimed by another one.
     * False when the holder lost its lease.
     */
    public boolean takeOnEarlierRequest(ClaimedIntent holder, String fingerprint, String requestJson, long amount, String currency) {
        return Jdbc.update(primary, sql(holder.operation()).takeOnEarlierRequest(), ps -> {
            ps.setString(1, fingerprint);
            ps.setString(2, requestJson);
            ps.setLong(3, amount);
            ps.setString(4, currency);
            ps.setString(5, holder.id());
            ps.setInt(6, holder.leaseGeneration());
            ps.setString(7, holder.clientId());
        }) == 1;
    }

    /**
     * Parks a row for an operator: the service cannot prove what Stripe did with it and will never send its key
     * again by itself. {@code reason} says why, for whoever resolves it.
     */
    public boolean markForReconciliation(ClaimedIntent holder, String reason) {
        return Jdbc.update(primary, sql(holder.operation()).park(), ps -> {
            ps.setString(1, reason);
            ps.setString(2, holder.id());
            ps.setInt(3, holder.leaseGeneration());
            ps.setString(4, holder.clientId());
        }) == 1;
    }

    /**
     * Marks a row in flight as awaited ({@code Prefer: wait}): from now on its next move (finished, parked, lease
     * released or taken over) notifies channel {@code chargeonce_key_changed} (the trigger of V1.7.0). False when
     * the row is no longer in flight: look again instead of waiting. Writes only the first time.
     */
    public boolean awaitRow(Operation op, String rowId, String clientId) {
        boolean[] inFlight = {false};
        Jdbc.run(primary, AWAIT_ROW.get(op), ps -> {
                    ps.setString(1, rowId);
                    ps.setString(2, clientId);
                    ps.setString(3, rowId);
                    ps.setString(4, clientId);
                }, rs -> inFlight[0] = rs.next() && rs.getBoolean(1));
        return inFlight[0];
    }

    private static final Map<Operation, String> AWAIT_ROW = byOperation(op -> "WITH marked AS (UPDATE " + op.table()
            + " SET awaited = true WHERE id = ? AND client_id = ? AND status = 'processing' AND NOT needs_reconciliation"
            + " AND NOT awaited RETURNING 1) SELECT EXISTS (SELECT 1 FROM marked) OR EXISTS (SELECT 1 FROM " + op.table()
            + " WHERE id = ? AND client_id = ? AND status = 'processing' AND NOT needs_reconciliation AND awaited)");

    /**
     * A claim while instances writing different identity versions run side by side: in a transaction that first
     * takes the key's lock (the same name under every version), so that a claim of the key under another version
     * either committed before the read's snapshot (and is read) or waits for this transaction (and then reads its
     * row). The lock is taken by a statement of its own: one statement's snapshot is older than a lock it waited for.
     */
    private Optional<Row> underKeyLock(int lockName, Transactions.Work<Optional<Row>> claim) {
        return Transactions.inTransaction(primary, tx -> {
            Jdbc.lockKey(tx, lockName);
            return claim.run(tx);
        });
    }

    /** The key's row, read by the unique index under every identity it may have (see {@link KeyIdentities}). */
    private Optional<Row> peekRow(Operation op, String clientId, IdempotencyKey key, Duration keyHorizon) {
        List<String> lookup = identities.lookup(op, clientId, key);
        return Jdbc.onConnection(primary, c -> Row.ofKey(c, op, clientId, lookup, keyHorizon));
    }
}

package dev.chargeonce.idempotency;

import io.agroal.api.AgroalDataSource;
import jakarta.enterprise.inject.Default;
import io.micrometer.core.instrument.MeterRegistry;
import dev.chargeonce.jdbc.WatchedSocketFactory;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Timer;
import jakarta.enterprise.context.ApplicationScoped;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Every statement on {@code stripe_intents}, and only on the primary.
 *
 * <p>Each method is one statement in its own committed transaction (autocommit): no connection is held between
 * statements, so none is held while Stripe is called. The claim is one statement: it reads the key's row, and
 * only when there is none inserts one {@code ON CONFLICT DO NOTHING}; the insert, never the read, decides that a key
 * is new. Rows are found by the key's identity (a hash of client and key, unique with the client), never by the raw
 * key. Every write a lease holder makes carries its lease generation, so a holder that lost its lease changes nothing.
 *
 * <p>The data source is the default one, which is the primary by configuration; the optional read replica is a
 * different, named data source that this class never sees.
 */
@ApplicationScoped
public class IdempotencyStore {

    /** The row as its holder, or a retry, needs it; {@link #READ_COLUMNS} or {@link #HELD_COLUMNS} add the clock's part. */
    private static final String ROW_COLUMNS = """
            x.id, x.client_id, x.fingerprint, x.request, x.amount, x.currency, x.status, x.lease_gen, x.stripe_attempt,
            x.last_stripe_error, x.needs_reconciliation, x.response_status, x.response_body, x.created_at, x.finished_at,
            x.stripe_key_first_sent, x.stripe_key_last_sent, x.{o} AS object_id, x.pending_checks, x.stripe_identity""";

    /**
     * Columns a read hands to a retry (the claim's look at an existing row, a peek): with what the clock says about
     * the row, the lease left and the key's age, by the one clock (see {@link #HELD_COLUMNS}).
     */
    private static final String READ_COLUMNS = ROW_COLUMNS + """
            , statement_timestamp() AS db_now,
            (statement_timestamp() - x.stripe_key_first_sent) > ? * interval '1 millisecond' AS beyond_horizon,
            ceil(extract(epoch FROM (x.lease_until - statement_timestamp())) * 1000)::bigint AS lease_left_ms""";

    /**
     * Columns a statement that grants a lease returns to its new holder: the lease's end and no clock at all. One
     * clock decides every lease, the database's {@code statement_timestamp()}: on Citus, the coordinator evaluates it
     * before it routes a write to a worker (it refuses a volatile {@code clock_timestamp()} in an {@code UPDATE}, and
     * any clock in {@code RETURNING}), on plain PostgreSQL it is the primary's. Such a statement sets {@code lease_until}
     * to that clock plus the lease it binds, so the clock when the lease was granted is {@code lease_until} minus
     * that lease ({@link Row#held}), and the key's age follows from it: the same numbers, read without a clock.
     * The holder's own deadline never comes from the database: {@link System#nanoTime()} taken before it sent the
     * statement, plus the lease (the statement started after that, so its lease ends no earlier).
     */
    private static final String HELD_COLUMNS = ROW_COLUMNS + ", x.lease_until";

    /**
     * A new holder's lease: whatever an earlier holder may have sent is bounded by its lease (it never sends past
     * it) unless it reported its sends when it let go; that bound joins the key's last send.
     */
    private static final String NEW_HOLDER = """
            lease_gen = x.lease_gen + 1, lease_until = statement_timestamp() + ? * interval '1 millisecond',
            stripe_key_last_sent = greatest(x.stripe_key_last_sent, x.stripe_sending_until),
            stripe_sending_until = statement_timestamp() + ? * interval '1 millisecond',
            updated_at = statement_timestamp()""";

    /**
     * The claim of a key the read before it ({@link #PEEK}) found no row for: a plain insert {@code ON CONFLICT DO
     * NOTHING}, its own committed statement. The insert, never the read, decides that the key is new: a claim of the
     * key committed after the read makes it do nothing, and the claim reads again. It reads back only what the
     * database chose (the lease generation and the clock); the rest is what was inserted. {@code ON CONFLICT} names
     * no index: every unique one decides, so that a schema with the raw key's unique constraint too (V1.8.0, while a
     * rolling deploy still runs the release before it) answers a racing duplicate like any other, never with a
     * unique violation.
     *
     * <p>Why a read first, and not the insert first or both in one statement: a retry is then one indexed read and
     * nothing else, the fastest replay on plain PostgreSQL and on Citus; a new key pays that read beside its insert.
     * One statement reading and inserting (a CTE) was slower for replays on plain PostgreSQL and runs in steps on
     * Citus; the insert first makes every replay a refused insert and a read (README, "The claim's form").
     */
    private static final String CLAIM = """
            INSERT INTO stripe_intents AS x
                (id, client_id, idempotency_key, fingerprint, request, amount, currency, status, lease_until,
                 stripe_sending_until, stripe_identity, origin, created_at, updated_at, stripe_key_first_sent)
            VALUES (?, ?, ?, ?, ?, ?, ?, 'processing', statement_timestamp() + ? * interval '1 millisecond',
                    statement_timestamp() + ? * interval '1 millisecond', ?, ?,
                    statement_timestamp(), statement_timestamp(), statement_timestamp())
            ON CONFLICT DO NOTHING
            RETURNING x.lease_gen, x.created_at, x.stripe_key_first_sent
            """;

    private static final String TAKE_OVER = """
            UPDATE {t} x
               SET %s
             WHERE id = ? AND status = 'processing' AND lease_gen = ? AND lease_until <= statement_timestamp()
               AND NOT needs_reconciliation AND client_id = ?
            RETURNING true AS fresh, %s
            """.formatted(NEW_HOLDER, HELD_COLUMNS);

    /**
     * A refund's claim, inside the transaction that locked its charge and checked the amount: the row and the
     * charge's reservation commit together, or neither does.
     */
    private static final String CLAIM_REFUND = """
            INSERT INTO stripe_refunds AS x
                (id, charge_id, client_id, idempotency_key, fingerprint, request, amount, currency, status, lease_until,
                 stripe_sending_until, stripe_identity, created_at, updated_at, stripe_key_first_sent)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'processing', statement_timestamp() + ? * interval '1 millisecond',
                    statement_timestamp() + ? * interval '1 millisecond', ?,
                    statement_timestamp(), statement_timestamp(), statement_timestamp())
            ON CONFLICT DO NOTHING
            RETURNING true AS fresh, %s
            """.formatted(HELD_COLUMNS);

    /** The charge a refund is claimed on, locked: refund claims of one charge take turns (the reservation). */
    private static final String LOCK_CHARGE_FOR_REFUND = """
            SELECT status, charge_status, payment_intent_id, amount, amount_reserved, currency
              FROM stripe_intents WHERE id = ? AND client_id = ?
               FOR UPDATE
            """;

    private static final String KEY_CLAIMED = "SELECT 1 FROM stripe_refunds WHERE stripe_identity = ANY (?) AND client_id = ?";

    private static final String RESERVE = """
            UPDATE stripe_intents SET amount_reserved = amount_reserved + ?, updated_at = statement_timestamp()
             WHERE id = ? AND client_id = ?
            """;

    /**
     * The recovery worker's candidates: rows whose lease expired, not parked, whose re-check time has come. A read
     * without locks over every client (on Citus, every shard), so it decides nothing: each candidate is then taken
     * over by {@link #TAKE_OVER_EXPIRED}, which the lease generation read here fences. Two workers that read the same
     * candidate both try; the first moves the generation on and the other's statement matches nothing.
     */
    private static final String EXPIRED_CANDIDATES = """
            SELECT id, client_id, lease_gen FROM {t}
             WHERE status = 'processing' AND lease_until <= statement_timestamp() AND NOT needs_reconciliation
               AND (recheck_at IS NULL OR recheck_at <= statement_timestamp())
             ORDER BY lease_until
             LIMIT ?
            """;

    /**
     * The recovery worker's takeover of one candidate: {@link #TAKE_OVER} that also leaves alone a row whose re-check
     * time has not come (its holder let it go with one after the candidate was read).
     */
    private static final String TAKE_OVER_EXPIRED = """
            UPDATE {t} x
               SET %s
             WHERE id = ? AND client_id = ? AND status = 'processing' AND lease_gen = ? AND lease_until <= statement_timestamp()
               AND NOT needs_reconciliation AND (recheck_at IS NULL OR recheck_at <= statement_timestamp())
            RETURNING true AS fresh, %s
            """.formatted(NEW_HOLDER, HELD_COLUMNS);

    private static final String FINISH = """
            WITH done AS (
                UPDATE {t}
                   SET status = ?, response_status = ?, response_body = ?, {o} = coalesce(?, {o}),
                       {s} = ?, recheck_at = statement_timestamp() + ?::bigint * interval '1 millisecond',
                       finished_at = statement_timestamp(), updated_at = statement_timestamp(), lease_until = NULL,
                       last_stripe_error = NULL, stripe_sending_until = NULL
                 WHERE id = ? AND lease_gen = ? AND status = 'processing' AND client_id = ?
                RETURNING {returning})
            {release}{outbox}
            SELECT count(*) FROM done
            """;

    /**
     * {@link #FINISH} of a charge no Kafka command waits for (no origin): the same fenced {@code UPDATE} alone, without
     * the outbox's CTE and without reading the row back. A row that a command adopted meanwhile (origin set, under
     * the row's lock: see {@link #ADOPT_FOR_RESULTS}) is not matched, and the caller runs {@link #FINISH}, which queues
     * its result; so is a row whose lease was lost, which {@link #FINISH} then does not match either.
     */
    private static final String FINISH_UNQUEUED = """
            UPDATE {t}
               SET status = ?, response_status = ?, response_body = ?, {o} = coalesce(?, {o}),
                   {s} = ?, recheck_at = statement_timestamp() + ?::bigint * interval '1 millisecond',
                   finished_at = statement_timestamp(), updated_at = statement_timestamp(), lease_until = NULL,
                   last_stripe_error = NULL, stripe_sending_until = NULL
             WHERE id = ? AND lease_gen = ? AND status = 'processing' AND origin IS NULL AND client_id = ?
            """;

    /**
     * A charge whose key already has its answer follows its PaymentIntent: forward only (a higher rank), never out
     * of a final state. {@code recheck_at} is the sync worker's next look, cleared once final.
     */
    private static final String ADVANCE_STATE = """
            WITH done AS (
                UPDATE {t}
                   SET {s} = ?, {o} = coalesce({o}, ?),
                       recheck_at = CASE WHEN ? IN {settled} THEN NULL ELSE recheck_at END,
                       updated_at = statement_timestamp()
                 WHERE id = ? AND client_id = ? AND status <> 'processing' {advance_guard}
                   AND coalesce({s}, '') NOT IN {finals}
                   AND {rank_now} < {rank_next}
                RETURNING {returning})
            {release}
            SELECT count(*) FROM done
            """;

    /**
     * The row an event about a PaymentIntent concerns, locked for the event's transaction: by the PaymentIntent id
     * the row stored, or by the charge's identity (metadata) for a row that never heard of that PaymentIntent; among
     * the rows of the client the object names ({@code chargeonce_client_id} metadata, else {@link #OBJECT_CLIENT}).
     */
    private static final String LOCK_FOR_OBJECT = """
            SELECT id, client_id, status, {s} AS state, request, created_at, {o} AS object_id
              FROM {t}
             WHERE client_id = ?
               AND ({o} = ? OR (stripe_identity = ? AND ({o} IS NULL OR {o} = ?)))
             ORDER BY ({o} IS NOT NULL) DESC
             LIMIT 1
               FOR UPDATE
            """;

    /**
     * The client of the row a Stripe object belongs to, for an object that does not name it (made outside this
     * service, or by hand): a read without locks over every client (a row's client never changes), before
     * {@link #LOCK_FOR_OBJECT} locks the row among that client's.
     */
    private static final String OBJECT_CLIENT = """
            SELECT client_id FROM {t}
             WHERE {o} = ? OR (stripe_identity = ? AND ({o} IS NULL OR {o} = ?))
             ORDER BY ({o} IS NOT NULL) DESC
             LIMIT 1
            """;

    /**
     * An event (or the sync worker) finishes a row still processing, with the answer a driver would have given: a
     * new lease generation fences out whoever holds the row (its own finish then answers what this one wrote).
     */
    private static final String FINISH_FROM_STRIPE = """
            WITH done AS (
                UPDATE {t}
                   SET lease_gen = lease_gen + 1, status = ?, response_status = ?, response_body = ?,
                       {o} = coalesce(?, {o}), {s} = ?,
                       recheck_at = statement_timestamp() + ?::bigint * interval '1 millisecond',
                       finished_at = statement_timestamp(), updated_at = statement_timestamp(), lease_until = NULL,
                       last_stripe_error = NULL, stripe_sending_until = NULL
                 WHERE id = ? AND client_id = ? AND status = 'processing'
                RETURNING {returning})
            {release}{outbox}
            SELECT count(*) FROM done
            """;

    /** {@link #FINISH_FROM_STRIPE}, fenced by the generation an operator saw, and out of reconciliation. */
    private static final String FINISH_BY_OPERATOR = FINISH_FROM_STRIPE
            .replace("SET lease_gen = lease_gen + 1,", "SET lease_gen = lease_gen + 1, needs_reconciliation = false,")
            .replace("WHERE id = ? AND client_id = ? AND status = 'processing'",
                    "WHERE id = ? AND client_id = ? AND lease_gen = ? AND status = 'processing'");

    /**
     * {@link #FINISH_BY_OPERATOR} as "nothing was made": only once no try of the key can still reach Stripe, by the
     * database's clock: the latest a try may have been sent (the last report, or a holder's send bound,
     * stripe_sending_until, while it may still send) plus the longest a Stripe request runs; and not before a lease
     * and that duration have passed since the row was created, which bounds the tries of a row of the same key the
     * database lost (its holders claimed before this row and send only within their leases). A try still on its way
     * would otherwise charge after the operator's list found nothing (spec/, NothingMadeIsTrue).
     */
    private static final String ABANDON_BY_OPERATOR = FINISH_BY_OPERATOR
            .replace("WHERE id = ? AND client_id = ? AND lease_gen = ? AND status = 'processing'",
                    "WHERE id = ? AND client_id = ? AND lease_gen = ? AND status = 'processing'"
                    + " AND statement_timestamp() >= coalesce(greatest(stripe_key_last_sent, stripe_sending_until), '-infinity')"
                    + " + ? * interval '1 millisecond' AND statement_timestamp() >= created_at + ? * interval '1 millisecond'");

    /**
     * Accepted operations whose outcome has not arrived and whose next look is due: candidates read without locks
     * over every client, each then taken for one look by {@link #TAKE_DUE_ACCEPTED}.
     */
    private static final String DUE_ACCEPTED_CANDIDATES = """
            SELECT id, client_id FROM {t}
             WHERE status = 'accepted' AND recheck_at <= statement_timestamp()
             ORDER BY recheck_at
             LIMIT ?
            """;

    /**
     * One due accepted operation taken for one look: its next look moves {@code hold} away, so that the statement
     * of another worker that read the same candidate finds it no longer due and matches nothing. (The due check is
     * written with {@code coalesce}, which never matches a NULL either, so that the planner does not read it as the
     * partial index of followed rows' predicate and scan that index instead of seeking the id.)
     */
    private static final String TAKE_DUE_ACCEPTED = """
            UPDATE {t} x
               SET recheck_at = statement_timestamp() + ? * interval '1 millisecond', pending_checks = x.pending_checks + 1,
                   updated_at = statement_timestamp()
             WHERE id = ? AND client_id = ? AND status = 'accepted'
               AND coalesce(recheck_at, 'infinity') <= statement_timestamp()
            RETURNING x.id, x.client_id, x.{s} AS state, x.{o} AS object_id, x.pending_checks, x.finished_at,
                      x.recheck_at
            """;

    private static final String RELEASE = """
            UPDATE {t}
               SET lease_until = statement_timestamp(), last_stripe_error = coalesce(?, last_stripe_error),
                   stripe_key_last_sent = greatest(stripe_key_last_sent, statement_timestamp() - ?::bigint * interval '1 millisecond'),
                   stripe_sending_until = NULL,
                   recheck_at = statement_timestamp() + ?::bigint * interval '1 millisecond',
                   {o} = coalesce(?, {o}),
                   pending_checks = pending_checks + CASE WHEN ? THEN 1 ELSE 0 END,
                   updated_at = statement_timestamp()
             WHERE id = ? AND lease_gen = ? AND status = 'processing' AND client_id = ?
            """;

    /** The next Stripe key: a new send window, and a renewed lease for the holder that is about to send it. */
    private static final String NEXT_STRIPE_ATTEMPT = """
            UPDATE {t} x
               SET stripe_attempt = stripe_attempt + 1, stripe_key_first_sent = statement_timestamp(),
                   stripe_key_last_sent = NULL, lease_until = statement_timestamp() + ? * interval '1 millisecond',
                   stripe_sending_until = statement_timestamp() + ? * interval '1 millisecond',
                   last_stripe_error = NULL, recheck_at = NULL, updated_at = statement_timestamp()
             WHERE id = ? AND lease_gen = ? AND status = 'processing' AND stripe_attempt = ? AND client_id = ?
            RETURNING true AS fresh, %s
            """.formatted(HELD_COLUMNS);

    /** A holder working without sending (a long lookup) keeps its lease; its send bound does not move. */
    private static final String RENEW_LEASE = """
            UPDATE {t}
               SET lease_until = statement_timestamp() + ? * interval '1 millisecond', updated_at = statement_timestamp()
             WHERE id = ? AND lease_gen = ? AND status = 'processing' AND client_id = ?
            """;

    private static final String MARK_FOR_RECONCILIATION = """
            UPDATE {t}
               SET needs_reconciliation = true, reconciliation_reason = ?, lease_until = statement_timestamp(),
                   stripe_sending_until = NULL, updated_at = statement_timestamp()
             WHERE id = ? AND lease_gen = ? AND status = 'processing' AND client_id = ?
            """;

    private static final String PEEK = """
            SELECT false AS fresh, %s FROM {t} x WHERE x.stripe_identity = ? AND x.client_id = ?
            """.formatted(READ_COLUMNS);

    private static final String COUNT_ATTENTION_ROWS = """
            SELECT count(*) FILTER (WHERE NOT needs_reconciliation
                                      AND greatest(lease_until, recheck_at) < statement_timestamp() - ? * interval '1 millisecond'),
                   count(*) FILTER (WHERE needs_reconciliation),
                   count(*) FILTER (WHERE NOT needs_reconciliation
                                      AND created_at < statement_timestamp() - ? * interval '1 millisecond'),
                   coalesce(extract(epoch FROM statement_timestamp() - min(created_at)), 0),
                   coalesce(max(lease_gen), 0)
              FROM {t} WHERE status = 'processing'
            """;

    /**
     * Retention's candidates: finished rows past the retention, read without locks over every client; each client's
     * share is then deleted by {@link #DELETE_FINISHED}, which checks the same again under the rows' locks.
     */
    private static final String FINISHED_CANDIDATES = """
            SELECT id, client_id FROM {t} x
             WHERE status <> 'processing' AND finished_at < statement_timestamp() - ? * interval '1 millisecond'
               -- a Stripe object still on its way is still followed (sync worker, events): its row stays
               AND NOT (status = 'accepted' AND coalesce({s}, '') NOT IN {settled})
               {keep_any_client}
             ORDER BY finished_at
             LIMIT ?
            """;

    /**
     * One client's candidates deleted, each only if it still qualifies when locked: a row locked by someone else (a
     * refund's claim locks its charge) is skipped, and a charge that has a refund by then stays. The client's refunds
     * are bound as the last parameter for a charge ({@code {keep}}).
     */
    private static final String DELETE_FINISHED = """
            DELETE FROM {t} WHERE client_id = ? AND id IN (
                SELECT id FROM {t} x
                 WHERE client_id = ? AND id = ANY (?)
                   AND status <> 'processing' AND finished_at < statement_timestamp() - ? * interval '1 millisecond'
                   AND NOT (status = 'accepted' AND coalesce({s}, '') NOT IN {settled})
                   {keep}
                 FOR UPDATE SKIP LOCKED)
            """;

    private static final String ANSWER_OF = """
            SELECT status, response_status, response_body, needs_reconciliation,
                   ceil(extract(epoch FROM (lease_until - statement_timestamp())) * 1000)::bigint AS lease_left_ms
              FROM {t} WHERE id = ? AND client_id = ?
            """;

    private static final String SCHEDULE_RECHECK = """
            UPDATE {t} SET recheck_at = statement_timestamp() + ?::bigint * interval '1 millisecond'
             WHERE id = ? AND client_id = ? AND status = 'accepted' AND coalesce({s}, '') NOT IN {settled}
            """;

    /**
     * A refund that ends without refunding (Stripe refused it, or it failed or was canceled) gives its amount back
     * to the charge, in the statement that ends it: reserved = pending + succeeded refunds, always. The charge's
     * client is the refund's, bound once more as the statement's last parameter ({@link #bindRelease}): a refund
     * and its charge live on one shard on Citus, and this part must say which.
     */
    private static final String REFUND_RELEASE = """
            , released AS (
                UPDATE stripe_intents c SET amount_reserved = c.amount_reserved - d.amount, updated_at = statement_timestamp()
                  FROM done d
                 WHERE c.client_id = ? AND c.id = d.charge_id AND (d.status = 'failed' OR d.state IN ('failed', 'canceled'))
                RETURNING c.id)""";

    /** Every statement above, for one operation's table and columns. */
    private record Sql(String claim, String takeOver, String expiredCandidates, String takeOverExpired, String finish,
                       String finishUnqueued, String advanceState, String objectClient, String lockForObject,
                       String finishFromStripe,
                       String dueAcceptedCandidates, String takeDueAccepted, String release, String nextAttempt,
                       String renewLease, String park, String peek, String countAttention, String finishedCandidates,
                       String deleteFinished, String answerOf, String scheduleRecheck, String finishByOperator,
                       String abandonByOperator) {

        static Sql of(Operation op) {
            java.util.function.UnaryOperator<String> r = sql -> sql
                    .replace("{t}", op.table()).replace("{o}", op.objectIdColumn()).replace("{s}", op.stateColumn())
                    .replace("{finals}", op.finalStatesSql()).replace("{settled}", op.settledStatesSql())
                    .replace("{rank_now}", op.rankSql(op.stateColumn())).replace("{rank_next}", "?::int")
                    .replace("{returning}", EXTRAS.get(op).returning()).replace("{release}", EXTRAS.get(op).release())
                    .replace("{advance_guard}", EXTRAS.get(op).advanceGuard()).replace("{keep}", EXTRAS.get(op).keep())
                    .replace("{keep_any_client}", EXTRAS.get(op).keepAnyClient())
                    .replace("{outbox}", EXTRAS.get(op).outbox());
            return new Sql(r.apply(op == Operation.CHARGE ? CLAIM : CLAIM_REFUND), r.apply(TAKE_OVER), r.apply(EXPIRED_CANDIDATES),
                    r.apply(TAKE_OVER_EXPIRED), r.apply(FINISH), op == Operation.CHARGE ? r.apply(FINISH_UNQUEUED) : null,
                    r.apply(ADVANCE_STATE), r.apply(OBJECT_CLIENT), r.apply(LOCK_FOR_OBJECT), r.apply(FINISH_FROM_STRIPE), r.apply(DUE_ACCEPTED_CANDIDATES),
                    r.apply(TAKE_DUE_ACCEPTED), r.apply(RELEASE), r.apply(NEXT_STRIPE_ATTEMPT), r.apply(RENEW_LEASE),
                    r.apply(MARK_FOR_RECONCILIATION), r.apply(PEEK), r.apply(COUNT_ATTENTION_ROWS), r.apply(FINISHED_CANDIDATES),
                    r.apply(DELETE_FINISHED), r.apply(ANSWER_OF), r.apply(SCHEDULE_RECHECK), r.apply(FINISH_BY_OPERATOR),
                    r.apply(ABANDON_BY_OPERATOR));
        }
    }

    /**
     * What an operation adds to the shared statements, in one place.
     *
     * @param returning    what a statement that ends or moves a row returns, for {@code release}
     * @param release      what follows a row that ends or moves (a refund that refunded nothing gives its amount back)
     * @param advanceGuard which answered rows Stripe's later word may still move
     * @param keep         what retention keeps besides young rows
     * @param outbox       what a finish writes besides the row, in the same statement (a Kafka command's result)
     */
    private record OperationSql(String returning, String release, String advanceGuard, String keep, String outbox) {

        /** {@link #keep} in a read over every client: the refunds of the row's own client. */
        String keepAnyClient() {
            return keep.replace("r.client_id = ?", "r.client_id = x.client_id");
        }
    }

    private static final java.util.Map<Operation, OperationSql> EXTRAS = java.util.Map.of(
            // A charge is kept while it has refunds (they are deleted by their own age first): a refund names it.
            // A charge a Kafka command claimed (origin set) queues its result in the statement that finishes it,
            // whoever finishes it: the driver, recovery, an event or the sync worker, an operator.
            Operation.CHARGE, new OperationSql("id, client_id, idempotency_key, origin, response_status, response_body", "", "",
                    "AND NOT EXISTS (SELECT 1 FROM stripe_refunds r WHERE r.charge_id = x.id AND r.client_id = ?)",
                    ResultOutbox.QUEUE_FINISHED),
            // A refund answered "failed" gave its amount back already; nothing Stripe says later moves it.
            Operation.REFUND, new OperationSql("client_id, charge_id, amount, status, refund_status AS state", REFUND_RELEASE,
                    "AND status <> 'failed'", "", ""));

    private static final java.util.Map<Operation, Sql> SQL = new java.util.EnumMap<>(Operation.class);

    static {
        for (Operation op : Operation.values()) {
            SQL.put(op, Sql.of(op));
        }
        // Derived by replacement: a replacement that no longer matched would leave an operator's finish unfenced.
        if (!FINISH_BY_OPERATOR.contains("lease_gen = ? AND status = 'processing'") || !FINISH_BY_OPERATOR.contains("needs_reconciliation = false")) {
            throw new IllegalStateException("FINISH_BY_OPERATOR lost its fence: " + FINISH_BY_OPERATOR);
        }
        // ... and "nothing was made" would be written while a try of the key may still reach Stripe.
        if (!ABANDON_BY_OPERATOR.contains("AND statement_timestamp() >= coalesce(greatest(stripe_key_last_sent")) {
            throw new IllegalStateException("ABANDON_BY_OPERATOR lost its settling wait: " + ABANDON_BY_OPERATOR);
        }
        // Every statement that ends a charge queues a Kafka command's result with it: one that did not would lose it.
        Sql charge = SQL.get(Operation.CHARGE);
        for (String finishing : List.of(charge.finish(), charge.finishFromStripe(), charge.finishByOperator(), charge.abandonByOperator())) {
            if (!finishing.contains("INSERT INTO kafka_outbox")) {
                throw new IllegalStateException("a charge's finish lost its outbox: " + finishing);
            }
        }
        // ... or matches only a row without an origin (a command's row is finished by the statement that queues).
        if (!charge.finishUnqueued().contains("AND origin IS NULL")) {
            throw new IllegalStateException("a charge's finish without the outbox must skip rows with an origin: " + charge.finishUnqueued());
        }
    }

    private static Sql sql(Operation op) {
        return SQL.get(op);
    }

    /**
     * The dual-read form of the peek, the claim's read (see {@link KeyIdentities}): the key's row under any of its
     * identities. The oldest if there were two (a claim of the key under each version before this release's lock:
     * it is the one a retry found first).
     */
    private static String dualRead(String statement) {
        String one = "x.stripe_identity = ? AND x.client_id = ?";
        if (!statement.contains(one)) {
            throw new IllegalStateException("no lookup by identity to widen in " + statement);
        }
        return statement.replace(one, "x.stripe_identity = ANY (?) AND x.client_id = ? ORDER BY x.created_at LIMIT 1");
    }

    private static final java.util.Map<Operation, String> PEEK_ANY = java.util.Map.of(
            Operation.CHARGE, dualRead(SQL.get(Operation.CHARGE).peek()), Operation.REFUND, dualRead(SQL.get(Operation.REFUND).peek()));

    /**
     * Every statement of the protocol shared by the operations, as this class runs them for {@code op}, by name (the
     * components of {@link Sql}): for tests that hold each of them to a rule (the plan it gets, what it names).
     */
    static java.util.SortedMap<String, String> protocolStatements(Operation op) {
        Sql sql = sql(op);
        java.util.SortedMap<String, String> statements = new java.util.TreeMap<>();
        for (java.lang.reflect.RecordComponent component : Sql.class.getRecordComponents()) {
            try {
                Object statement = component.getAccessor().invoke(sql);
                if (statement != null) {
                    statements.put(component.getName(), (String) statement);
                }
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
        return statements;
    }

    /**
     * The statements of the hot paths exactly as this class runs them for {@code op}, by name: what the benchmark's
     * {@code pgbench} reference runs (bench/, through {@link StatementCatalog}), so that the reference follows the code.
     */
    static java.util.SortedMap<String, String> hotPathStatements(Operation op) {
        Sql sql = sql(op);
        java.util.SortedMap<String, String> statements = new java.util.TreeMap<>();
        statements.put("CLAIM", sql.claim());
        statements.put("PEEK", sql.peek());
        // what an HTTP charge runs; a charge a Kafka command claimed runs FINISH_QUEUEING_RESULT
        statements.put("FINISH", sql.finishUnqueued() != null ? sql.finishUnqueued() : sql.finish());
        if (sql.finishUnqueued() != null) {
            statements.put("FINISH_QUEUEING_RESULT", sql.finish());
        }
        statements.put("TAKE_OVER", sql.takeOver());
        if (op == Operation.REFUND) {
            statements.put("LOCK_CHARGE_FOR_REFUND", LOCK_CHARGE_FOR_REFUND);
            statements.put("KEY_CLAIMED", KEY_CLAIMED);
            statements.put("RESERVE", RESERVE);
        }
        return statements;
    }

    /**
     * A charge's columns for the read endpoints, with what its refunds gave back (one indexed sum). Its first
     * parameter is the client of the charge's refunds: the same as the charge's, bound so that on Citus the sum
     * reads the charge's own shard.
     */
    private static final String CHARGE_COLUMNS =
            "id, status, charge_status, amount, currency, payment_intent_id, request, response_status, created_at, "
            + "(SELECT coalesce(sum(r.amount), 0) FROM stripe_refunds r WHERE r.charge_id = stripe_intents.id "
            + "AND r.client_id = ? AND r.refund_status = 'succeeded') AS amount_refunded";

    /**
     * A refund's columns for the read endpoints. Refunds Stripe refused without making one (a stored 400) are not
     * refunds and are not shown.
     */
    private static final String REFUND_COLUMNS = "id, charge_id, status, refund_status, stripe_refund_id, request, created_at";
    private static final String SHOWN_REFUNDS = "NOT (status = 'failed' AND stripe_refund_id IS NULL)";

    private final AgroalDataSource primary;
    private final IdempotencyConfig config;
    private final KeyIdentities identities;
    private final Timer claimLatency;
    private final Timer finishLatency;

    public IdempotencyStore(@Default AgroalDataSource primary, IdempotencyConfig config, KeyIdentities identities,
                            MeterRegistry metrics) {
        this.primary = primary;
        this.config = config;
        this.identities = identities;
        if (config.fingerprintVersion() < 1 || config.fingerprintVersion() > Fingerprint.LATEST_VERSION) {
            throw new IllegalStateException("chargeonce.idempotency.fingerprint-version must be 1 to " + Fingerprint.LATEST_VERSION);
        }
        this.claimLatency = Timer.builder("chargeonce.db.statement").tag("statement", "claim")
                .publishPercentileHistogram().register(metrics);
        this.finishLatency = Timer.builder("chargeonce.db.statement").tag("statement", "finish")
                .publishPercentileHistogram().register(metrics);
        // Reads the watchdog gave up on (a database that did not answer within watchedReadLimit): each one a statement
        // that failed as unavailable and a connection the pool dropped.
        FunctionCounter.builder("chargeonce.db.reads.closed", WatchedSocketFactory.class,
                        type -> WatchedSocketFactory.readsClosed())
                .description("database reads closed by the read watchdog after watchedReadLimit").register(metrics);
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
                    : onPrimary(c -> readOrInsert(c, intent, lookup, keyHorizon));
            if (found.isEmpty()) {
                continue;
            }
            Row row = found.get();
            if (row.fresh) {
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
        Optional<Row> existing = peekRow(c, intent.operation(), intent.clientId(), lookup, keyHorizon);
        if (existing.isPresent()) {
            return existing;
        }
        String identity = lookup.get(0); // the write version's: what a new row gets
        long acquired = System.nanoTime();
        try (PreparedStatement ps = c.prepareStatement(sql(intent.operation()).claim())) {
            int i = 1;
            ps.setString(i++, intent.id());
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
                return rs.next() ? Optional.of(Row.inserted(rs, intent, identity, acquired)) : Optional.empty();
            }
        }
    }

    /**
     * What an existing row answers a request with this fingerprint, or its lease taken over when it expired; empty
     * when another driver took it over or finished it first (the caller looks again).
     */
    private Optional<Claim> answerOrTakeOver(Operation op, Row row, Fingerprint fingerprint, Duration keyHorizon) {
        Optional<Claim> settled = classifyExisting(row, fingerprint);
        if (settled.isPresent()) {
            return settled;
        }
        long acquired = System.nanoTime();
        return queryOne(sql(op).takeOver(), ps -> {
            ps.setLong(1, config.lease().toMillis());
            ps.setLong(2, config.lease().toMillis());
            ps.setString(3, row.id);
            ps.setInt(4, row.leaseGeneration);
            ps.setString(5, row.clientId);
        }, rs -> Row.held(rs, acquired, config.lease(), keyHorizon)).map(taken -> new Claim.TakenOver(taken.intent(op)));
    }

    /**
     * Claims a refund key on a charge. A key that exists is answered as any claim (one indexed read for a replay;
     * the charge is not locked). A new key is claimed in one transaction on the primary that locks the charge,
     * checks that it succeeded and that the amount is at most what is left (the charge's amount minus its pending
     * and succeeded refunds), inserts the refund's row and reserves its amount: so no interleaving of refunds, from
     * any number of instances, can promise back more than was paid. Nothing is stored for a refusal.
     */
    public RefundClaim claimRefund(NewRefund refund, Duration keyHorizon) {
        Timer.Sample sample = Timer.start();
        try {
            for (int round = 0; round < 3; round++) {
                Optional<Row> existing = peekRow(Operation.REFUND, refund.clientId(), refund.key(), keyHorizon);
                if (existing.isPresent()) {
                    Optional<Claim> claim = answerOrTakeOver(Operation.REFUND, existing.get(), refund.fingerprint(), keyHorizon);
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
                    lockKey(tx, identities.lockName(Operation.REFUND, refund.clientId(), refund.key()));
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
        long left = amount - reserved;
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

    /**
     * A Kafka command met a charge that already had a row (a redelivery, the producer sent the event twice, or the
     * key was first claimed over HTTP): the row is made to publish its result too. A row without an origin takes
     * the command's (so that whoever finishes it queues the result), and one already answered has its answer queued
     * now, in this statement (the row is locked first, so a finish running meanwhile is either seen or sees the
     * origin). A row that has an origin is only read: its finish queues, or queued, the result.
     *
     * <p>A row answered {@code 202} whose state moved before the command met it had nobody to tell then: its state
     * now is queued too, in the same transaction ({@code render}: the charge as {@code GET /v1/charges/{id}} shows
     * it), as the state it moves to later will be (the row is locked: a move waits, then sees the origin).
     *
     * @return the row's origin before this statement (null: an HTTP claim) and whether it is still processing; empty
     *         when the key has no row
     */
    public Optional<KeyOrigin> adoptForResults(String clientId, IdempotencyKey key, String origin,
                                               java.util.function.Function<ChargeRecord, String> render) {
        return inTransaction(tx -> {
            KeyOrigin found = null;
            try (PreparedStatement ps = tx.prepareStatement(ADOPT_FOR_RESULTS)) {
                ps.setArray(1, tx.createArrayOf("text", identities.lookup(Operation.CHARGE, clientId, key).toArray()));
                ps.setString(2, clientId);
                // An HTTP row has no key stored; a command's row keeps its event id: the key of its result records.
                ps.setString(3, origin);
                ps.setString(4, key.value());
                ps.setString(5, clientId);
                ps.setString(6, key.value());
                ps.setString(7, origin);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        found = new KeyOrigin(rs.getString("id"), rs.getString("origin"),
                                IntentStatus.fromColumn(rs.getString("status")) == IntentStatus.PROCESSING);
                    }
                }
            }
            if (found != null && found.origin() == null && !found.processing()) {
                queueLaterState(tx, found.id(), clientId, render); // only a 202 with a known state queues anything
            }
            return Optional.ofNullable(found);
        });
    }

    /** @param origin the row's origin before the command met it (null: claimed over HTTP) */
    public record KeyOrigin(String id, String origin, boolean processing) {
    }

    private static final String ADOPT_FOR_RESULTS = """
            WITH before AS (
                SELECT id, client_id, idempotency_key, origin, status, response_status, response_body
                  FROM stripe_intents WHERE stripe_identity = ANY (?) AND client_id = ?
                 ORDER BY created_at LIMIT 1
                   FOR UPDATE),
            adopted AS (
                UPDATE stripe_intents x SET origin = ?, idempotency_key = ?, updated_at = statement_timestamp()
                  FROM before b WHERE x.id = b.id AND x.client_id = ? AND b.origin IS NULL
                RETURNING x.id),
            done AS (
                SELECT id, client_id, ?::text AS idempotency_key, ?::text AS origin, response_status, response_body
                  FROM before WHERE origin IS NULL AND status <> 'processing')
            %s
            SELECT id, origin, status FROM before
            """.formatted(ResultOutbox.QUEUE_FINISHED);

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
        if (!fingerprint.matches(row.fingerprint)) {
            return Optional.of(new Claim.Mismatch());
        }
        if (row.status != IntentStatus.PROCESSING) {
            return Optional.of(new Claim.Replay(new StoredAnswer(row.responseStatus, row.responseBody), row.createdAt.toInstant(),
                    row.finishedAt == null ? row.createdAt.toInstant() : row.finishedAt.toInstant()));
        }
        if (row.needsReconciliation) {
            return Optional.of(new Claim.UnderReconciliation());
        }
        if (row.leaseLeftMillis > 0) {
            return Optional.of(new Claim.InFlight(Duration.ofMillis(row.leaseLeftMillis), row.id));
        }
        return Optional.empty();
    }

    /**
     * Counts for the operators' gauges, over the processing rows: whose lease expired more than
     * {@code expiredFor} ago, parked for reconciliation, older than {@code overdueAfter} since the claim (driven
     * again and again without an end counts here, whatever its lease), the oldest one's age and the most drives
     * (lease generations) any of them had.
     */
    public RowCounts countAttentionRows(Operation op, Duration expiredFor, Duration overdueAfter) {
        RowCounts[] counts = new RowCounts[1];
        run(sql(op).countAttention(), ps -> {
            ps.setLong(1, expiredFor.toMillis());
            ps.setLong(2, overdueAfter.toMillis());
        }, rs -> {
            if (rs.next()) {
                counts[0] = new RowCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getDouble(4), rs.getLong(5));
            }
        });
        return counts[0];
    }

    public record RowCounts(long expiredProcessing, long parkedForReconciliation, long overdueProcessing,
                            double oldestProcessingAgeSeconds, long maxDrives) {
    }

    /**
     * Deletes up to {@code batch} finished rows older than {@code retention}: a read of candidates without locks, then
     * one short statement per client that deletes its candidates that still qualify under their locks (SKIP LOCKED
     * keeps locks short and leaves a row someone works on); processing rows are never deleted, whatever their age.
     */
    public int deleteFinishedBefore(Operation op, Duration retention, int batch) {
        Map<String, List<String>> byClient = new java.util.LinkedHashMap<>();
        run(sql(op).finishedCandidates(), ps -> {
            ps.setLong(1, retention.toMillis());
            ps.setInt(2, batch);
        }, rs -> {
            while (rs.next()) {
                byClient.computeIfAbsent(rs.getString("client_id"), client -> new ArrayList<>()).add(rs.getString("id"));
            }
        });
        int deleted = 0;
        for (Map.Entry<String, List<String>> client : byClient.entrySet()) {
            try {
                deleted += update(sql(op).deleteFinished(), ps -> {
                    ps.setString(1, client.getKey());
                    ps.setString(2, client.getKey());
                    ps.setArray(3, ps.getConnection().createArrayOf("text", client.getValue().toArray()));
                    ps.setLong(4, retention.toMillis());
                    if (op == Operation.CHARGE) {
                        ps.setString(5, client.getKey()); // {keep}: the client's refunds of the charge
                    }
                });
            } catch (DatabaseRefusedException e) {
                // A refund claimed on one of these charges while the statement ran: its re-check reads the refunds
                // with the statement's snapshot, so the refunds' foreign key is what keeps the charge (the whole
                // statement is refused). The next pass's candidates leave that charge out; the other clients go on.
                // (the logger is looked up here: the statement catalog loads this class without Quarkus's boot libraries)
                org.jboss.logging.Logger.getLogger(IdempotencyStore.class).warnf(
                        "retention: %d candidate(s) of a client kept for now: %s", client.getValue().size(), e.getMessage());
            }
        }
        return deleted;
    }

    /**
     * Takes over up to {@code limit} rows whose lease expired: candidates read without locks, each then taken over
     * by a statement fenced by the generation read, so that another instance never gets the same row (the one that
     * comes second matches nothing). A database failure after some takeovers returns those (their driver drives
     * them); before any, it is thrown.
     */
    public List<ClaimedIntent> takeOverExpired(Operation op, int limit, Duration keyHorizon) {
        return takeEach(sql(op).expiredCandidates(), limit, rs -> rs.getInt("lease_gen"), candidate -> {
            long acquired = System.nanoTime();
            return queryOne(sql(op).takeOverExpired(), ps -> {
                ps.setLong(1, config.lease().toMillis());
                ps.setLong(2, config.lease().toMillis());
                ps.setString(3, candidate.id());
                ps.setString(4, candidate.clientId());
                ps.setInt(5, candidate.leaseGeneration());
            }, rs -> Row.held(rs, acquired, config.lease(), keyHorizon)).map(row -> row.intent(op));
        });
    }

    /**
     * A background worker's pass: candidates read without locks by {@code scan} (its one parameter: how many), then
     * each tried by {@code take}, a fenced single-shard statement (empty: another worker took it first), until
     * {@code limit} are taken. It reads more candidates than it takes, in its own order: instances that scan at once
     * then mostly try different rows (every instance reads the same oldest ones). A failure after some are taken
     * returns those (the caller acts on them; the rest stay due for the next pass); before any, it is thrown.
     *
     * @param generation the lease generation a candidate's statement must still see (read from the scan's row)
     */
    private <T> List<T> takeEach(String scan, int limit, RowValue<Integer> generation,
                                 java.util.function.Function<Candidate, Optional<T>> take) {
        List<Candidate> candidates = new ArrayList<>();
        run(scan, ps -> ps.setInt(1, limit * CANDIDATES_PER_TAKE), rs -> {
            while (rs.next()) {
                candidates.add(new Candidate(rs.getString("id"), rs.getString("client_id"), generation.read(rs)));
            }
        });
        Collections.shuffle(candidates);
        List<T> taken = new ArrayList<>();
        for (Candidate candidate : candidates) {
            if (taken.size() == limit) {
                break;
            }
            try {
                take.apply(candidate).ifPresent(taken::add);
            } catch (RuntimeException e) {
                if (taken.isEmpty()) {
                    throw e;
                }
                return taken;
            }
        }
        return taken;
    }

    @FunctionalInterface
    private interface RowValue<T> {
        T read(ResultSet rs) throws SQLException;
    }

    /** How many candidates a background scan reads per row it may take: see {@link #takeOverExpired}. */
    private static final int CANDIDATES_PER_TAKE = 4;

    /** A row a lock-free scan found, with the generation its fenced statement must still see (0: not leased). */
    private record Candidate(String id, String clientId, int leaseGeneration) {
    }

    /**
     * Stores the final answer. Returns false when the lease was lost (taken over, or already finished): then
     * nothing was written and the caller must answer what the row holds, see {@link #answerOf}.
     */
    public boolean finish(ClaimedIntent holder, IntentStatus status, StoredAnswer answer, String paymentIntentId) {
        return finish(holder, new Final(status, answer, paymentIntentId, status == IntentStatus.COMPLETED
                ? "succeeded" : paymentIntentId != null ? "failed" : null, null));
    }

    /** {@link #finish(ClaimedIntent, IntentStatus, StoredAnswer, String)} with the charge's state at Stripe. */
    public boolean finish(ClaimedIntent holder, Final answer) {
        Sql sql = sql(holder.operation());
        Binder binder = ps -> {
            int next = answer.bind(ps, 1);
            ps.setString(next, holder.id());
            ps.setInt(next + 1, holder.leaseGeneration());
            ps.setString(next + 2, holder.clientId());
            bindRelease(ps, next + 3, holder.operation(), holder.clientId());
        };
        // A charge: first the plain UPDATE, which matches unless a Kafka command waits for the row's result (or the
        // lease was lost); only then the statement that also queues the result (and matches nothing either when the
        // lease was lost).
        return finishLatency.record(() -> (sql.finishUnqueued() != null && update(sql.finishUnqueued(), binder) == 1)
                || count(sql.finish(), binder) == 1);
    }

    /**
     * A key's final answer and what follows it.
     *
     * @param objectId     the Stripe object the operation made (PaymentIntent, refund), when Stripe named one
     * @param state        that object's state at Stripe (null when there is none)
     * @param recheckAfter for an accepted operation, when the sync worker first looks at its Stripe object
     */
    public record Final(IntentStatus status, StoredAnswer answer, String objectId, String state,
                        java.time.Duration recheckAfter) {
        public Final {
            if (status == IntentStatus.PROCESSING) {
                throw new IllegalArgumentException("finish needs a final status");
            }
        }

        int bind(PreparedStatement ps, int from) throws SQLException {
            ps.setString(from, status.column());
            ps.setInt(from + 1, answer.status());
            ps.setString(from + 2, answer.body());
            ps.setString(from + 3, objectId);
            ps.setString(from + 4, state);
            ps.setObject(from + 5, recheckAfter == null ? null : recheckAfter.toMillis(), java.sql.Types.BIGINT);
            return from + 6;
        }
    }

    // ---- what Stripe says after the answer: events and the sync worker, inside the caller's transaction --------

    /** The row a Stripe object belongs to, as an event's transaction sees it (locked until it ends). */
    public record ObjectOwner(Operation operation, String id, String clientId, IntentStatus status, String state,
                              String requestJson, Instant createdAt, String objectId) {
    }

    /**
     * Locks the row of a Stripe object (by its id, else by the operation's identity, its {@code chargeonce_key}
     * metadata); empty when no row has it.
     *
     * @param clientId the client the object names ({@code chargeonce_client_id} metadata, which this service writes
     *                 on everything it sends); null when it names none: then the row's client is read first
     */
    public Optional<ObjectOwner> lockOwner(Connection tx, Operation op, String objectId, String stripeIdentity, String clientId)
            throws SQLException {
        String client = clientId;
        if (client == null) {
            try (PreparedStatement ps = tx.prepareStatement(sql(op).objectClient())) {
                ps.setString(1, objectId);
                ps.setString(2, stripeIdentity);
                ps.setString(3, objectId);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    client = rs.getString(1);
                }
            }
        }
        try (PreparedStatement ps = tx.prepareStatement(sql(op).lockForObject())) {
            ps.setString(1, client);
            ps.setString(2, objectId);
            ps.setString(3, stripeIdentity);
            ps.setString(4, objectId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(new ObjectOwner(op, rs.getString("id"), rs.getString("client_id"),
                        IntentStatus.fromColumn(rs.getString("status")), rs.getString("state"),
                        rs.getString("request"), rs.getTimestamp("created_at").toInstant(), rs.getString("object_id")));
            }
        }
    }

    /** Finishes a row still processing from what Stripe said (fencing out its holder); false if it was not. */
    public boolean finishFromStripe(Connection tx, Operation op, String id, String clientId, Final answer) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(sql(op).finishFromStripe())) {
            int next = answer.bind(ps, 1);
            ps.setString(next, id);
            ps.setString(next + 1, clientId);
            bindRelease(ps, next + 2, op, clientId);
            return countOf(ps) == 1;
        }
    }

    /**
     * Moves an answered operation's Stripe state forward to {@code next}; false when that would be backwards (a
     * lower rank) or out of a final state.
     */
    public boolean advanceState(Connection tx, Operation op, String id, String clientId, String next, String objectId)
            throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(sql(op).advanceState())) {
            ps.setString(1, next);
            ps.setString(2, objectId);
            ps.setString(3, next);
            ps.setString(4, id);
            ps.setString(5, clientId);
            ps.setInt(6, op.rank(next)); // the rank of the next state (Operation#rank), as {rank_now} ranks the row's
            bindRelease(ps, 7, op, clientId);
            return countOf(ps) == 1;
        }
    }

    /**
     * The client of a refund's charge for {@link #REFUND_RELEASE}, the last parameter of a statement that can end a
     * refund; a charge's statements have no such part.
     */
    private static void bindRelease(PreparedStatement ps, int index, Operation op, String clientId) throws SQLException {
        if (op == Operation.REFUND) {
            ps.setString(index, clientId);
        }
    }

    private static long countOf(PreparedStatement ps) throws SQLException {
        try (ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** An accepted operation the sync worker looks at. */
    public record AcceptedRow(Operation operation, String id, String clientId, String state, String objectId,
                              int checks, Instant answeredAt, Instant databaseNow) {
    }

    /**
     * Takes up to {@code limit} accepted charges whose next look is due, pushing their next look {@code hold} away
     * (so that another instance does not take them meanwhile; the worker sets the real next look after it).
     */
    public List<AcceptedRow> takeDueAccepted(Operation op, int limit, java.time.Duration hold) {
        return takeEach(sql(op).dueAcceptedCandidates(), limit, rs -> 0, candidate -> {
            List<AcceptedRow> one = new ArrayList<>(1);
            run(sql(op).takeDueAccepted(), ps -> {
                ps.setLong(1, hold.toMillis());
                ps.setString(2, candidate.id());
                ps.setString(3, candidate.clientId());
            }, rs -> {
                if (rs.next()) {
                    one.add(new AcceptedRow(op, rs.getString("id"), rs.getString("client_id"),
                            rs.getString("state"), rs.getString("object_id"),
                            rs.getInt("pending_checks"), rs.getTimestamp("finished_at").toInstant(),
                            // the statement set the next look to its clock plus the hold: that clock, read without
                            // a clock in RETURNING
                            rs.getTimestamp("recheck_at").toInstant().minusMillis(hold.toMillis())));
                }
            });
            return one.stream().findFirst();
        });
    }

    /** When the sync worker looks at an accepted charge next (null: never, it is final). */
    public void scheduleRecheck(Connection tx, Operation op, String id, String clientId, java.time.Duration after)
            throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(sql(op).scheduleRecheck())) {
            ps.setObject(1, after == null ? null : after.toMillis(), java.sql.Types.BIGINT);
            ps.setString(2, id);
            ps.setString(3, clientId);
            ps.executeUpdate();
        }
    }

    /**
     * Gives the lease up, leaving the row {@code processing} for the next driver, and records what the holder
     * did at Stripe (see {@link LeaseRelease}). Returns false when the lease was lost: nothing was written.
     */
    public boolean release(ClaimedIntent holder, LeaseRelease release) {
        Long sentAgo = release.sinceLastSend() == null ? null : release.sinceLastSend().toMillis();
        Long recheck = release.recheckAfter() == null ? null : release.recheckAfter().toMillis();
        return update(sql(holder.operation()).release(), ps -> {
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
        return queryOne(sql(holder.operation()).nextAttempt(), ps -> {
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
        return update(sql(holder.operation()).renewLease(), ps -> {
            ps.setLong(1, config.lease().toMillis());
            ps.setString(2, holder.id());
            ps.setInt(3, holder.leaseGeneration());
            ps.setString(4, holder.clientId());
        }) == 1;
    }

    /**
     * Parks a row for an operator: the service cannot prove what Stripe did with it and will never send its key
     * again by itself. {@code reason} says why, for whoever resolves it.
     */
    public boolean markForReconciliation(ClaimedIntent holder, String reason) {
        return update(sql(holder.operation()).park(), ps -> {
            ps.setString(1, reason);
            ps.setString(2, holder.id());
            ps.setInt(3, holder.leaseGeneration());
            ps.setString(4, holder.clientId());
        }) == 1;
    }

    /** What the row holds now: its final answer, or empty while it is still processing. */
    public Optional<StoredAnswer> answerOf(Operation op, String clientId, String intentId) {
        return stateOf(op, clientId, intentId).answer();
    }

    /** What a holder that lost its lease finds: the final answer, or that the row is parked, or still processing. */
    public RowState stateOf(Operation op, String clientId, String intentId) {
        RowState[] state = {new RowState(Optional.empty(), false)};
        run(sql(op).answerOf(), ps -> {
            ps.setString(1, intentId);
            ps.setString(2, clientId);
        }, rs -> {
            if (rs.next()) {
                state[0] = "processing".equals(rs.getString("status"))
                        ? new RowState(Optional.empty(), rs.getBoolean("needs_reconciliation"))
                        : new RowState(Optional.of(new StoredAnswer(rs.getInt("response_status"), rs.getString("response_body"))), false);
            }
        });
        return state[0];
    }

    public record RowState(Optional<StoredAnswer> answer, boolean parked) {
    }

    /**
     * Queues the later state of a charge answered {@code 202} that a Kafka command claimed, in the caller's
     * transaction (the one that stored the state): status 200 and {@code render}'s body, once per state
     * ({@code charge:<id>:<state>}). Nothing for a charge claimed over HTTP or answered otherwise.
     *
     * @return whether a result was queued
     */
    public boolean queueLaterState(Connection tx, String chargeId, String clientId,
                                   java.util.function.Function<ChargeRecord, String> render) throws SQLException {
        ChargeRecord record = null;
        try (PreparedStatement ps = tx.prepareStatement(AWAITED_LATER_STATE)) {
            ps.setString(1, clientId); // the refunds' client (CHARGE_COLUMNS)
            ps.setString(2, chargeId);
            ps.setString(3, clientId);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    record = chargeRecord(rs);
                }
            }
        }
        if (record == null) {
            return false;
        }
        try (PreparedStatement ps = tx.prepareStatement(ResultOutbox.QUEUE_LATER_STATE)) {
            ps.setString(1, render.apply(record));
            ps.setString(2, chargeId);
            ps.setString(3, clientId);
            return ps.executeUpdate() == 1;
        }
    }

    /** A charge a Kafka command waits on whose answer was a 202, with its Stripe state known. */
    private static final String AWAITED_LATER_STATE = "SELECT " + CHARGE_COLUMNS
            + " FROM stripe_intents WHERE id = ? AND client_id = ? AND origin IS NOT NULL AND response_status = 202"
            + " AND charge_status IS NOT NULL";

    private static final String FIND_CHARGE = "SELECT " + CHARGE_COLUMNS + " FROM stripe_intents WHERE id = ? AND client_id = ?";
    private static final String NEWEST_CHARGES = "SELECT " + CHARGE_COLUMNS
            + " FROM stripe_intents WHERE client_id = ? ORDER BY created_at DESC, id DESC LIMIT ?";
    /** A page of charges: what follows {@code WHERE client_id = ?} is ANDed to it (listCharges), never ORed. */
    private static final String CHARGE_PAGE = "SELECT " + CHARGE_COLUMNS + " FROM stripe_intents WHERE client_id = ?";
    private static final String CHARGES_CREATED_AFTER = "SELECT " + CHARGE_COLUMNS
            + " FROM stripe_intents WHERE client_id = ? AND created_at > ? ORDER BY created_at DESC, id DESC LIMIT ?";

    /** One of the client's charges, by id; another client's id is not found. */
    public Optional<ChargeRecord> findCharge(AgroalDataSource source, String clientId, String chargeId) {
        List<ChargeRecord> found = new ArrayList<>(1);
        run(source, FIND_CHARGE, ps -> {
            ps.setString(1, clientId); // the refunds' client (CHARGE_COLUMNS)
            ps.setString(2, chargeId);
            ps.setString(3, clientId);
        }, rs -> {
            if (rs.next()) {
                found.add(chargeRecord(rs));
            }
        });
        return found.stream().findFirst();
    }

    /** The client's newest charges. */
    public List<ChargeRecord> listCharges(AgroalDataSource source, String clientId, int limit) {
        List<ChargeRecord> found = new ArrayList<>(limit);
        run(source, NEWEST_CHARGES, ps -> {
            ps.setString(1, clientId); // the refunds' client (CHARGE_COLUMNS)
            ps.setString(2, clientId);
            ps.setInt(3, limit);
        }, rs -> {
            while (rs.next()) {
                found.add(chargeRecord(rs));
            }
        });
        return found;
    }

    /** The state a charge shows (as GET does), in SQL: Stripe's once known, else by the key's answer. */
    private static final String SHOWN_CHARGE_STATUS = "coalesce(charge_status, CASE status WHEN 'completed' THEN 'succeeded' "
            + "WHEN 'failed' THEN 'failed' ELSE 'processing' END)";

    /**
     * A page of the client's charges (cursors, creation bounds, status), newest first, at most {@code limit + 1}
     * rows (the one more says whether there is more). Rides on the client's (client_id, created_at, id) index.
     */
    public List<ChargeRecord> listCharges(AgroalDataSource source, String clientId, ChargePage page) {
        StringBuilder where = new StringBuilder();
        List<Object> args = new ArrayList<>();
        args.add(clientId); // the refunds' client (CHARGE_COLUMNS)
        args.add(clientId);
        if (page.startingAfter() != null) {
            where.append(" AND (created_at, id) < (?, ?)");
            args.add(OffsetDateTime.ofInstant(page.startingAfter().created(), ZoneOffset.UTC));
            args.add(page.startingAfter().id());
        }
        if (page.endingBefore() != null) {
            where.append(" AND (created_at, id) > (?, ?)");
            args.add(OffsetDateTime.ofInstant(page.endingBefore().created(), ZoneOffset.UTC));
            args.add(page.endingBefore().id());
        }
        if (page.createdGte() != null) {
            where.append(" AND created_at >= ?");
            args.add(OffsetDateTime.ofInstant(page.createdGte(), ZoneOffset.UTC));
        }
        if (page.createdLte() != null) {
            where.append(" AND created_at < ?");
            args.add(OffsetDateTime.ofInstant(page.createdLte().plusSeconds(1), ZoneOffset.UTC)); // the whole second
        }
        if (page.status() != null) {
            where.append(" AND ").append(SHOWN_CHARGE_STATUS).append(" = ?");
            args.add(page.status());
        }
        // Before a cursor means the nearest newer ones: read upwards, then turn the page around.
        boolean upwards = page.endingBefore() != null;
        String sql = CHARGE_PAGE + where
                + (upwards ? " ORDER BY created_at ASC, id ASC" : " ORDER BY created_at DESC, id DESC") + " LIMIT ?";
        args.add(page.limit() + 1);
        List<ChargeRecord> found = new ArrayList<>();
        run(source, sql, ps -> {
            for (int i = 0; i < args.size(); i++) {
                ps.setObject(i + 1, args.get(i));
            }
        }, rs -> {
            while (rs.next()) {
                found.add(chargeRecord(rs));
            }
        });
        if (upwards) {
            Collections.reverse(found); // newest first; the row past the page (if any) is now the first
        }
        return found;
    }

    /**
     * The client's newest charges created after {@code after}, newest first: what a lagging replica may not have
     * yet (see {@code dev.chargeonce.charge.ChargeQueries#list}). Bounded by the client's index, so it reads only
     * the recent rows.
     */
    public List<ChargeRecord> listChargesCreatedAfter(AgroalDataSource source, String clientId, Instant after, int limit) {
        List<ChargeRecord> found = new ArrayList<>();
        run(source, CHARGES_CREATED_AFTER, ps -> {
            ps.setString(1, clientId); // the refunds' client (CHARGE_COLUMNS)
            ps.setString(2, clientId);
            ps.setObject(3, OffsetDateTime.ofInstant(after, ZoneOffset.UTC));
            ps.setInt(4, limit);
        }, rs -> {
            while (rs.next()) {
                found.add(chargeRecord(rs));
            }
        });
        return found;
    }

    private static final String FIND_REFUND = "SELECT " + REFUND_COLUMNS
            + " FROM stripe_refunds WHERE id = ? AND client_id = ? AND " + SHOWN_REFUNDS;
    private static final String NEWEST_REFUNDS = "SELECT " + REFUND_COLUMNS + " FROM stripe_refunds WHERE charge_id = ?"
            + " AND client_id = ? AND " + SHOWN_REFUNDS + " ORDER BY created_at DESC, id DESC LIMIT ?";

    /** One of the client's refunds, by id; another client's is not found. */
    public Optional<RefundRecord> findRefund(AgroalDataSource source, String clientId, String refundId) {
        List<RefundRecord> found = new ArrayList<>(1);
        run(source, FIND_REFUND, ps -> {
            ps.setString(1, refundId);
            ps.setString(2, clientId);
        }, rs -> {
            if (rs.next()) {
                found.add(refundRecord(rs));
            }
        });
        return found.stream().findFirst();
    }

    /** A charge's refunds, newest first (at most {@code limit}). */
    public List<RefundRecord> listRefunds(AgroalDataSource source, String clientId, String chargeId, int limit) {
        List<RefundRecord> found = new ArrayList<>();
        run(source, NEWEST_REFUNDS, ps -> {
            ps.setString(1, chargeId);
            ps.setString(2, clientId);
            ps.setInt(3, limit);
        }, rs -> {
            while (rs.next()) {
                found.add(refundRecord(rs));
            }
        });
        return found;
    }

    private static RefundRecord refundRecord(ResultSet rs) throws SQLException {
        return new RefundRecord(rs.getString("id"), rs.getString("charge_id"), IntentStatus.fromColumn(rs.getString("status")),
                rs.getString("refund_status"), rs.getString("stripe_refund_id"), rs.getString("request"),
                rs.getTimestamp("created_at").toInstant());
    }

    // ---- reconciliation and operators: reads without a lease, and the operator's fenced actions ----------------

    /** The columns of a {@link RowView}, for either table (a charge has no charge_id, a refund no reservation). */
    private static String viewColumns(Operation op) {
        return "id, client_id, status, " + op.stateColumn() + " AS state, " + op.objectIdColumn() + " AS object_id, stripe_identity, "
                + "amount, currency, lease_gen, stripe_attempt, needs_reconciliation, reconciliation_reason, last_stripe_error, "
                + "response_status, created_at, updated_at, finished_at, stripe_key_first_sent, stripe_key_last_sent, lease_until, "
                + (op == Operation.REFUND ? "charge_id, 0::bigint AS amount_reserved" : "NULL::text AS charge_id, amount_reserved");
    }

    private static RowView view(Operation op, ResultSet rs) throws SQLException {
        int responseStatus = rs.getInt("response_status");
        Integer response = rs.wasNull() ? null : responseStatus;
        return new RowView(op, rs.getString("id"), rs.getString("client_id"), IntentStatus.fromColumn(rs.getString("status")),
                rs.getString("state"), rs.getString("object_id"), rs.getString("stripe_identity"), rs.getLong("amount"),
                rs.getString("currency"), rs.getInt("lease_gen"), rs.getInt("stripe_attempt"), rs.getBoolean("needs_reconciliation"),
                rs.getString("reconciliation_reason"), rs.getString("last_stripe_error"), response, instant(rs, "created_at"),
                instant(rs, "updated_at"), instant(rs, "finished_at"), instant(rs, "stripe_key_first_sent"),
                instant(rs, "stripe_key_last_sent"), instant(rs, "lease_until"), rs.getString("charge_id"), rs.getLong("amount_reserved"));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    /** A statement per operation, held by name so that CitusRulesTest reads it with the others. */
    private static Map<Operation, String> byOperation(java.util.function.Function<Operation, String> statement) {
        Map<Operation, String> statements = new java.util.EnumMap<>(Operation.class);
        for (Operation op : Operation.values()) {
            statements.put(op, statement.apply(op));
        }
        return Collections.unmodifiableMap(statements);
    }

    // Reconciliation's and the console's reads over every client (reads that decide nothing: on Citus, each runs on
    // every shard), and those of one client's rows.
    private static final Map<Operation, String> VIEW_BY_ID = byOperation(op ->
            "SELECT " + viewColumns(op) + " FROM " + op.table() + " WHERE id = ?");
    private static final Map<Operation, String> ATTENTION_ROWS = byOperation(op ->
            "SELECT " + viewColumns(op) + " FROM " + op.table() + " WHERE status = 'processing' AND (needs_reconciliation"
            + " OR created_at < statement_timestamp() - ? * interval '1 millisecond') ORDER BY created_at LIMIT ?");
    private static final Map<Operation, String> VIEWS_OF = byOperation(op ->
            "SELECT " + viewColumns(op) + " FROM " + op.table() + " WHERE " + op.objectIdColumn() + " = ANY (?) OR stripe_identity = ANY (?)");
    private static final Map<Operation, String> FINISHED_BETWEEN = byOperation(op ->
            "SELECT " + viewColumns(op) + " FROM " + op.table() + " WHERE status <> 'processing' AND finished_at >= ?"
            + " AND finished_at < ? AND (finished_at, id) > (?, ?) ORDER BY finished_at, id LIMIT ?");
    private static final String REFUNDS_OF_CHARGE = "SELECT " + viewColumns(Operation.REFUND)
            + " FROM stripe_refunds WHERE charge_id = ? AND client_id = ? ORDER BY created_at";

    private List<RowView> views(Operation op, String sql, Binder binder) {
        List<RowView> found = new ArrayList<>();
        run(sql, binder, rs -> {
            while (rs.next()) {
                found.add(view(op, rs));
            }
        });
        return found;
    }

    /** One row, by id, as it is now (any client's: an operator's look; the row names its client). */
    public Optional<RowView> view(Operation op, String id) {
        return views(op, VIEW_BY_ID.get(op), ps -> ps.setString(1, id)).stream().findFirst();
    }

    /**
     * Rows an operator should look at: parked for reconciliation, or processing since longer than
     * {@code overdueAfter} (however often re-driven), oldest first.
     */
    public List<RowView> attentionRows(Operation op, Duration overdueAfter, int limit) {
        return views(op, ATTENTION_ROWS.get(op), ps -> {
            ps.setLong(1, overdueAfter.toMillis());
            ps.setInt(2, limit);
        });
    }

    /** The rows that name one of these Stripe objects, or carry one of these identities (every attempt's). */
    public List<RowView> viewsOf(Operation op, java.util.Collection<String> objectIds, java.util.Collection<String> identities) {
        if (objectIds.isEmpty() && identities.isEmpty()) {
            return List.of();
        }
        return views(op, VIEWS_OF.get(op), ps -> {
            ps.setArray(1, ps.getConnection().createArrayOf("text", objectIds.toArray()));
            ps.setArray(2, ps.getConnection().createArrayOf("text", identities.toArray()));
        });
    }

    /**
     * Answered rows finished in {@code [from, to)}, after the cursor ({@code (finished_at, id)}; null: from the
     * start), in that order: what reconciliation holds against Stripe's records, page by page.
     */
    public List<RowView> finishedBetween(Operation op, Instant from, Instant to, Instant afterFinished, String afterId, int limit) {
        return views(op, FINISHED_BETWEEN.get(op), ps -> {
            ps.setTimestamp(1, Timestamp.from(from));
            ps.setTimestamp(2, Timestamp.from(to));
            ps.setTimestamp(3, Timestamp.from(afterFinished == null ? Instant.EPOCH : afterFinished));
            ps.setString(4, afterId == null ? "" : afterId);
            ps.setInt(5, limit);
        });
    }

    /** A charge's refunds, every state (the charge's client's). */
    public List<RowView> refundsOf(String clientId, String chargeId) {
        return views(Operation.REFUND, REFUNDS_OF_CHARGE, ps -> {
            ps.setString(1, chargeId);
            ps.setString(2, clientId);
        });
    }

    private static final Map<Operation, String> INSPECT = byOperation(op -> "SELECT false AS fresh, "
            + READ_COLUMNS.replace("{o}", op.objectIdColumn()) + " FROM " + op.table()
            + " x WHERE x.id = ? AND x.client_id = ? AND x.status = 'processing'");

    /**
     * A processing row as a holder would see it, without taking its lease: what an operator's action needs to ask
     * Stripe about it (its identity, its window, its request). Empty when it is not processing.
     */
    public Optional<ClaimedIntent> inspect(Operation op, String id, String clientId, Duration keyHorizon) {
        return queryOne(INSPECT.get(op), ps -> {
            ps.setLong(1, keyHorizon.toMillis());
            ps.setString(2, id);
            ps.setString(3, clientId);
        }).map(row -> row.intent(op));
    }

    /**
     * An operator ends a processing row (parked or not) with the answer Stripe's object proves: fenced by the
     * generation the operator saw, which it moves on (a driver that still held the row is fenced out), and the
     * row leaves reconciliation. A refund that refunded nothing gives its amount back in the same statement.
     */
    public boolean finishByOperator(Operation op, String id, String clientId, int seenLeaseGeneration, Final answer) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql(op).finishByOperator())) {
            int next = answer.bind(ps, 1);
            ps.setString(next, id);
            ps.setString(next + 1, clientId);
            ps.setInt(next + 2, seenLeaseGeneration);
            bindRelease(ps, next + 3, op, clientId);
            return countOf(ps) == 1;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /**
     * {@link #finishByOperator} with "nothing was made" ({@code answer}), refused (false) while a try of the key may
     * still reach Stripe: unless {@code requestMaxDuration} has passed since the latest it may have been sent, and the
     * lease and that duration since the row was created.
     */
    public boolean abandonByOperator(Operation op, String id, String clientId, int seenLeaseGeneration, Final answer,
                                     Duration requestMaxDuration) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql(op).abandonByOperator())) {
            int next = answer.bind(ps, 1);
            ps.setString(next, id);
            ps.setString(next + 1, clientId);
            ps.setInt(next + 2, seenLeaseGeneration);
            ps.setLong(next + 3, requestMaxDuration.toMillis());
            ps.setLong(next + 4, config.lease().plus(requestMaxDuration).toMillis());
            bindRelease(ps, next + 5, op, clientId);
            return countOf(ps) == 1;
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /**
     * When no try of a processing row's key can still reach Stripe, by the database's clock (the latest it may have
     * been sent, its last report or its holder's send bound, plus {@code requestMaxDuration}; at the earliest the
     * lease and that duration after the row was created), and that clock now;
     * empty when the row is not processing.
     */
    public Optional<KeySettling> keySettling(Operation op, String id, String clientId, Duration requestMaxDuration) {
        List<KeySettling> found = new ArrayList<>();
        run(KEY_SETTLING.get(op), ps -> {
                    ps.setLong(1, requestMaxDuration.toMillis());
                    ps.setLong(2, config.lease().plus(requestMaxDuration).toMillis());
                    ps.setString(3, id);
                    ps.setString(4, clientId);
                }, rs -> {
                    if (rs.next()) {
                        Timestamp settles = rs.getTimestamp(1);
                        found.add(new KeySettling(settles == null ? Instant.MIN : settles.toInstant(), rs.getTimestamp(2).toInstant()));
                    }
                });
        return found.stream().findFirst();
    }

    private static final Map<Operation, String> KEY_SETTLING = byOperation(op ->
            "SELECT greatest(coalesce(greatest(stripe_key_last_sent, stripe_sending_until), '-infinity') + ? * interval '1 millisecond',"
            + " created_at + ? * interval '1 millisecond'), statement_timestamp() FROM " + op.table()
            + " WHERE id = ? AND client_id = ? AND status = 'processing'");

    /** When no try of a key can still reach Stripe, and the database's clock when that was read. */
    public record KeySettling(Instant settlesAt, Instant databaseNow) {
        public boolean settled() {
            return !databaseNow.isBefore(settlesAt);
        }
    }

    /**
     * An operator hands a parked (or stuck) row back to the drivers: out of reconciliation, its lease expired, so
     * that the next retry or the recovery worker takes it over with a new generation. Nothing is sent by this; a
     * driver re-sends only what the protocol allows (past the key horizon it parks the row again).
     */
    public boolean requeue(Operation op, String id, String clientId, int seenLeaseGeneration) {
        return update(REQUEUE.get(op), ps -> {
            ps.setString(1, id);
            ps.setInt(2, seenLeaseGeneration);
            ps.setString(3, clientId);
        }) == 1;
    }

    private static final Map<Operation, String> REQUEUE = byOperation(op -> "UPDATE " + op.table()
            + " SET needs_reconciliation = false, reconciliation_reason = NULL, lease_gen = lease_gen + 1,"
            + " lease_until = statement_timestamp(), recheck_at = NULL, updated_at = statement_timestamp()"
            + " WHERE id = ? AND lease_gen = ? AND status = 'processing' AND client_id = ?");

    /** What a client's key holds now, for the key status endpoint: its row, read by the unique index. */
    public record KeyStatus(String rowId, IntentStatus status, boolean parked, Instant firstSeen, Instant finishedAt,
                            long leaseLeftMillis, int stripeAttempt) {
    }

    public Optional<KeyStatus> keyStatus(Operation op, String clientId, IdempotencyKey key, Duration keyHorizon) {
        return peekRow(op, clientId, key, keyHorizon).map(row -> new KeyStatus(row.id, row.status, row.needsReconciliation, row.createdAt.toInstant(),
                row.finishedAt == null ? null : row.finishedAt.toInstant(), row.leaseLeftMillis, row.stripeAttempt));
    }

    /**
     * The key-hash versions rows of either table have now ({@link KeyIdentities}): one indexed look for version 0
     * (identities before {@code g}), then one per keyed version found (the first identity from {@code k<n>} on, the
     * next from {@code k<n+1>}), on the unique index. A table that does not exist yet (a new database, before its
     * first migration) has none.
     */
    public java.util.SortedSet<Integer> identityVersionsInUse() {
        try (Connection c = primary.getConnection()) {
            return identityVersionsInUse(c);
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** Whether the schema forbids keeping keys (V1.14.0): version 0, which keeps them, cannot be written here. */
    public boolean keysForbidden() {
        boolean[] forbidden = {false};
        run("SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'stripe_intents_key_kept_only_for_commands')",
                ps -> { }, rs -> forbidden[0] = rs.next() && rs.getBoolean(1));
        return forbidden[0];
    }

    // Start-up reads over every client (KeyVersionsCheck), on the unique index.
    private static final Map<Operation, String> ANY_UNKEYED_IDENTITY = byOperation(op ->
            "SELECT EXISTS (SELECT 1 FROM " + op.table() + " WHERE stripe_identity < 'g')");
    private static final Map<Operation, String> FIRST_IDENTITY_FROM = byOperation(op ->
            "SELECT stripe_identity FROM " + op.table() + " WHERE stripe_identity >= ? ORDER BY stripe_identity LIMIT 1");

    static java.util.SortedSet<Integer> identityVersionsInUse(Connection c) throws SQLException {
        java.util.SortedSet<Integer> versions = new java.util.TreeSet<>();
        java.util.regex.Pattern keyed = java.util.regex.Pattern.compile("^k(\\d{3})-");
        for (Operation op : Operation.values()) {
            try (PreparedStatement exists = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
                exists.setString(1, op.table());
                try (ResultSet rs = exists.executeQuery()) {
                    if (!rs.next() || !rs.getBoolean(1)) {
                        continue;
                    }
                }
            }
            try (PreparedStatement unkeyed = c.prepareStatement(ANY_UNKEYED_IDENTITY.get(op));
                 ResultSet rs = unkeyed.executeQuery()) {
                if (rs.next() && rs.getBoolean(1)) {
                    versions.add(KeyIdentities.UNKEYED);
                }
            }
            try (PreparedStatement first = c.prepareStatement(FIRST_IDENTITY_FROM.get(op))) {
                String from = "k";
                while (true) {
                    first.setString(1, from);
                    String found;
                    try (ResultSet rs = first.executeQuery()) {
                        found = rs.next() ? rs.getString(1) : null;
                    }
                    java.util.regex.Matcher m = found == null ? null : keyed.matcher(found);
                    if (m == null || !m.find()) {
                        break;
                    }
                    int version = Integer.parseInt(m.group(1));
                    versions.add(version);
                    if (version >= KeyIdentities.MAX_VERSION) {
                        break;
                    }
                    from = "k" + String.format("%03d", version + 1);
                }
            }
        }
        return versions;
    }

    /** The data source of the idempotency path, for callers that read charges from the primary. */
    public AgroalDataSource primary() {
        return primary;
    }

    // ---- plumbing --------------------------------------------------------------------------------------------

    private static ChargeRecord chargeRecord(ResultSet rs) throws SQLException {
        int responseStatus = rs.getInt("response_status");
        return new ChargeRecord(rs.getString("id"), IntentStatus.fromColumn(rs.getString("status")),
                ChargeStatus.fromColumn(rs.getString("charge_status")), rs.getLong("amount"),
                rs.getString("currency"), rs.getString("payment_intent_id"), rs.getString("request"),
                rs.wasNull() ? null : responseStatus, rs.getTimestamp("created_at").toInstant(), rs.getLong("amount_refunded"));
    }

    @FunctionalInterface
    private interface Binder {
        void bind(PreparedStatement ps) throws SQLException;
    }

    @FunctionalInterface
    private interface Reader {
        void read(ResultSet rs) throws SQLException;
    }

    /** A row read (not leased) with {@link #READ_COLUMNS}. */
    private Optional<Row> queryOne(String sql, Binder binder) {
        long acquired = System.nanoTime();
        return queryOne(sql, binder, rs -> Row.read(rs, acquired));
    }

    /** The first row of a statement as {@code reader} makes it (null: none). */
    private Optional<Row> queryOne(String sql, Binder binder, RowReader reader) {
        Row[] row = new Row[1];
        run(sql, binder, rs -> {
            if (rs.next()) {
                row[0] = reader.read(rs);
            }
        });
        return Optional.ofNullable(row[0]);
    }

    @FunctionalInterface
    private interface RowReader {
        Row read(ResultSet rs) throws SQLException;
    }

    /** The key's row, read by the unique index under every identity it may have (see {@link KeyIdentities}). */
    private Optional<Row> peekRow(Operation op, String clientId, IdempotencyKey key, Duration keyHorizon) {
        List<String> lookup = identities.lookup(op, clientId, key);
        return onPrimary(c -> peekRow(c, op, clientId, lookup, keyHorizon));
    }

    private Optional<Row> peekRow(Connection c, Operation op, String clientId, List<String> lookup, Duration keyHorizon)
            throws SQLException {
        long acquired = System.nanoTime();
        try (PreparedStatement ps = c.prepareStatement(lookup.size() == 1 ? sql(op).peek() : PEEK_ANY.get(op))) {
            ps.setLong(1, keyHorizon.toMillis());
            int i = bindIdentities(ps, 2, lookup);
            ps.setString(i, clientId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(Row.read(rs, acquired)) : Optional.empty();
            }
        }
    }

    /** Work on one connection of the primary, each statement its own transaction. */
    private <T> T onPrimary(Transactions.Work<T> work) {
        try (Connection c = primary.getConnection()) {
            return work.run(c);
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /** One identity as itself (the statements of the hot path), several as one array (their dual-read forms). */
    private static int bindIdentities(PreparedStatement ps, int i, List<String> lookup) throws SQLException {
        if (lookup.size() == 1) {
            ps.setString(i, lookup.get(0));
        } else {
            ps.setArray(i, ps.getConnection().createArrayOf("text", lookup.toArray()));
        }
        return i + 1;
    }

    /**
     * A claim while instances writing different identity versions run side by side: in a transaction that first
     * takes the key's lock (the same name under every version), so that a claim of the key under another version
     * either committed before the read's snapshot (and is read) or waits for this transaction (and then reads its
     * row). The lock is taken by a statement of its own: one statement's snapshot is older than a lock it waited for.
     */
    private Optional<Row> underKeyLock(int lockName, Transactions.Work<Optional<Row>> claim) {
        return inTransaction(tx -> {
            lockKey(tx, lockName);
            return claim.run(tx);
        });
    }

    private <T> T inTransaction(Transactions.Work<T> work) {
        return Transactions.inTransaction(primary, work);
    }

    /** Class 0x6b657973 ("keys") of advisory locks: a key's claim while writers differ (nothing else takes one). */
    private static void lockKey(Connection tx, int lockName) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("SELECT pg_advisory_xact_lock(1801812339, ?)")) {
            ps.setInt(1, lockName);
            ps.executeQuery().close();
        }
    }

    private long count(String sql, Binder binder) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            return countOf(ps);
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    /**
     * Marks a row in flight as awaited ({@code Prefer: wait}): from now on its next move (finished, parked, lease
     * released or taken over) notifies channel {@code chargeonce_key_changed} (the trigger of V1.7.0). False when
     * the row is no longer in flight: look again instead of waiting. Writes only the first time.
     */
    public boolean awaitRow(Operation op, String rowId, String clientId) {
        boolean[] inFlight = {false};
        run(AWAIT_ROW.get(op), ps -> {
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

    private int update(String sql, Binder binder) {
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            return ps.executeUpdate();
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    private void run(String sql, Binder binder, Reader reader) {
        run(primary, sql, binder, reader);
    }

    private static void run(AgroalDataSource source, String sql, Binder binder, Reader reader) {
        try (Connection c = source.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            binder.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
                reader.read(rs);
            }
        } catch (SQLException e) {
            throw DatabaseFailures.of(e);
        }
    }

    private record Row(boolean fresh, String id, String clientId, String fingerprint, String request, long amount,
                       String currency, IntentStatus status, int leaseGeneration, int stripeAttempt,
                       String lastStripeError, boolean needsReconciliation, int responseStatus, String responseBody,
                       Timestamp createdAt, Timestamp finishedAt, Timestamp stripeKeyFirstSent, Timestamp stripeKeyLastSent, String objectId,
                       int pendingChecks, String stripeIdentity, Timestamp databaseNow, boolean beyondHorizon, long leaseLeftMillis, long acquired) {

        /**
         * A row the claim just inserted: what the database chose (lease generation, clocks) from the statement, the
         * rest as inserted. Its lease is whole: the configured lease from when the statement started.
         */
        static Row inserted(ResultSet rs, NewIntent intent, String identity, long acquired) throws SQLException {
            Timestamp created = rs.getTimestamp("created_at");
            return new Row(true, intent.id(), intent.clientId(), null, intent.requestJson(), intent.amount(),
                    intent.currency(), IntentStatus.PROCESSING, rs.getInt("lease_gen"), 1, null, false, 0, null, created, null,
                    rs.getTimestamp("stripe_key_first_sent"), null, null, 0, identity, created, false, Long.MAX_VALUE,
                    acquired);
        }

        /**
         * A row a statement just leased to this holder ({@link #HELD_COLUMNS}): the statement set {@code lease_until}
         * to its clock plus {@code lease}, which gives that clock back, and with it whether the key is past the
         * horizon; the lease is whole from the holder's point of view ({@code acquired}).
         */
        static Row held(ResultSet rs, long acquired, Duration lease, Duration keyHorizon) throws SQLException {
            // the lease as bound (whole milliseconds), not as configured
            Timestamp granted = Timestamp.from(rs.getTimestamp("lease_until").toInstant().minusMillis(lease.toMillis()));
            Timestamp firstSent = rs.getTimestamp("stripe_key_first_sent");
            boolean beyondHorizon = java.time.Duration.between(firstSent.toInstant(), granted.toInstant()).compareTo(keyHorizon) > 0;
            return of(rs, granted, beyondHorizon, Long.MAX_VALUE, acquired);
        }

        static Row read(ResultSet rs, long acquired) throws SQLException {
            return of(rs, rs.getTimestamp("db_now"), rs.getBoolean("beyond_horizon"), rs.getLong("lease_left_ms"), acquired);
        }

        /** {@link #ROW_COLUMNS} from the result, with what the clock says of the row. */
        private static Row of(ResultSet rs, Timestamp databaseNow, boolean beyondHorizon, long leaseLeftMillis, long acquired)
                throws SQLException {
            return new Row(rs.getBoolean("fresh"), rs.getString("id"), rs.getString("client_id"),
                    rs.getString("fingerprint"), rs.getString("request"), rs.getLong("amount"), rs.getString("currency"),
                    IntentStatus.fromColumn(rs.getString("status")), rs.getInt("lease_gen"), rs.getInt("stripe_attempt"),
                    rs.getString("last_stripe_error"), rs.getBoolean("needs_reconciliation"),
                    rs.getInt("response_status"), rs.getString("response_body"), rs.getTimestamp("created_at"),
                    rs.getTimestamp("finished_at"), rs.getTimestamp("stripe_key_first_sent"), rs.getTimestamp("stripe_key_last_sent"),
                    rs.getString("object_id"), rs.getInt("pending_checks"), rs.getString("stripe_identity"), databaseNow,
                    beyondHorizon, leaseLeftMillis, acquired);
        }

        ClaimedIntent intent(Operation op) {
            return new ClaimedIntent(op, id, clientId, request, amount, currency, leaseGeneration,
                    acquired, stripeAttempt, lastStripeError, beyondHorizon, createdAt.toInstant(), stripeKeyFirstSent.toInstant(),
                    stripeKeyLastSent == null ? null : stripeKeyLastSent.toInstant(), objectId, pendingChecks,
                    databaseNow.toInstant(), stripeIdentity);
        }
    }
}

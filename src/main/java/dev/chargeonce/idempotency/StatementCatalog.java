package dev.chargeonce.idempotency;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The protocol's statements, held by name: every statement that charges and refunds share, written once as a
 * template over the operation's table and columns ({@code {t}}, {@code {o}}, {@code {s}}, ...) and rendered for each
 * {@link Operation} here, once, when the class loads. The classes that run them ({@link Claims},
 * {@link RefundReservations}, {@link Finishes}, {@link OperatorRows}, {@link Upkeep}, {@link Reads}) take them from
 * {@link #sql}; a statement that only one of them runs stays in that class.
 *
 * <p>Held by name so that they can be checked and run outside the service: {@link #protocolStatements} and
 * {@link #hotPathStatements} list them as the store runs them, for the tests that hold each to a rule (the plan it
 * gets, what Citus needs of it, the protocol model's table), and {@link #main} writes the hot path's out, one file
 * each ({@code CHARGE.CLAIM.sql}, {@code REFUND.FINISH.sql}, ...): the benchmark's {@code pgbench} reference binds and
 * runs exactly these ({@code java -cp <the package's classpath> dev.chargeonce.idempotency.StatementCatalog <dir>}).
 */
public final class StatementCatalog {

    private StatementCatalog() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: StatementCatalog <dir>");
            System.exit(2);
        }
        Path dir = Files.createDirectories(Path.of(args[0]));
        for (Operation op : Operation.values()) {
            for (Map.Entry<String, String> statement : hotPathStatements(op).entrySet()) {
                Files.writeString(dir.resolve(op.name() + "." + statement.getKey() + ".sql"), statement.getValue());
            }
        }
    }

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
     * the row's lock: see {@link CommandResults#adoptForResults}) is not matched, and the caller runs {@link #FINISH}, which queues
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

    /**
     * A charge's row takes on the request that first used its key, whose row the database lost: Stripe refused
     * this row's own request for it (see {@code OperationDriver#takeOnEarlierRequest}). Fenced as every write.
     */
    private static final String TAKE_ON_EARLIER_REQUEST = """
            UPDATE {t}
               SET fingerprint = ?, request = ?, amount = ?, currency = ?, updated_at = statement_timestamp()
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
    record Sql(String claim, String takeOver, String expiredCandidates, String takeOverExpired, String finish,
                       String finishUnqueued, String advanceState, String objectClient, String lockForObject,
                       String finishFromStripe,
                       String dueAcceptedCandidates, String takeDueAccepted, String release, String nextAttempt,
                       String renewLease, String park, String peek, String countAttention, String finishedCandidates,
                       String deleteFinished, String answerOf, String scheduleRecheck, String finishByOperator,
                       String abandonByOperator, String takeOnEarlierRequest) {

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
                    r.apply(ABANDON_BY_OPERATOR), op == Operation.CHARGE ? r.apply(TAKE_ON_EARLIER_REQUEST) : null);
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
     * Every statement of the protocol shared by the operations, as the store runs them for {@code op}, by name (the
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
     * The statements of the hot paths exactly as the store runs them for {@code op}, by name: what the benchmark's
     * {@code pgbench} reference runs (bench/, through {@link #main}), so that the reference follows the code.
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
            statements.put("LOCK_CHARGE_FOR_REFUND", RefundReservations.LOCK_CHARGE_FOR_REFUND);
            statements.put("KEY_CLAIMED", RefundReservations.KEY_CLAIMED);
            statements.put("RESERVE", RefundReservations.RESERVE);
        }
        return statements;
    }

    /** The statements of the protocol as they run for {@code op}. */
    static Sql sql(Operation op) {
        return SQL.get(op);
    }

    /** The key's row under any of its identities ({@link #dualRead} of the peek). */
    static String peekAny(Operation op) {
        return PEEK_ANY.get(op);
    }

    /** The columns a read hands to a retry ({@link Row#read}), for a statement of one operation's own. */
    static String readColumns(Operation op) {
        return READ_COLUMNS.replace("{o}", op.objectIdColumn());
    }

    /**
     * The client of a refund's charge for {@link #REFUND_RELEASE}, the last parameter of a statement that can end a
     * refund; a charge's statements have no such part.
     */
    static void bindRelease(PreparedStatement ps, int index, Operation op, String clientId) throws SQLException {
        if (op == Operation.REFUND) {
            ps.setString(index, clientId);
        }
    }

    /** A statement per operation, held by name so that CitusRulesTest reads it with the others. */
    static Map<Operation, String> byOperation(java.util.function.Function<Operation, String> statement) {
        Map<Operation, String> statements = new java.util.EnumMap<>(Operation.class);
        for (Operation op : Operation.values()) {
            statements.put(op, statement.apply(op));
        }
        return Collections.unmodifiableMap(statements);
    }
}

-- The claim + finish of a new charge as the service ran them before their rework for cost (main as of 71fb6c2), bound
-- as bench/PgbenchScripts.java binds today's: the reference that the PostgreSQL CPU per charge is measured against.
\set k random(1, 9000000000000000000)
WITH inserted AS (
    INSERT INTO stripe_intents AS si
        (id, client_id, idempotency_key, fingerprint, request, amount, currency, status, lease_until,
         stripe_sending_until, stripe_identity, origin)
    VALUES ('chg_pgb' || CAST(:k AS text), :pgbench_client, 'pgb-' || CAST(:k AS text), :fingerprint, :request, 1000, :usd, 'processing', clock_timestamp() + 30000 * interval '1 millisecond',
            clock_timestamp() + 30000 * interval '1 millisecond', lpad(CAST(:k AS text), 48, 'f'), NULL)
    ON CONFLICT (client_id, idempotency_key) DO NOTHING
    RETURNING si.*
)
SELECT true AS fresh, x.id, x.client_id, x.idempotency_key, x.fingerprint, x.request, x.amount, x.currency, x.status, x.lease_gen, x.stripe_attempt,
x.last_stripe_error, x.needs_reconciliation, x.response_status, x.response_body, x.created_at, x.finished_at,
x.stripe_key_first_sent, x.stripe_key_last_sent, x.payment_intent_id AS object_id, x.pending_checks, x.stripe_identity, clock_timestamp() AS db_now,
(clock_timestamp() - x.stripe_key_first_sent) > 82800000 * interval '1 millisecond' AS beyond_horizon,
ceil(extract(epoch FROM (x.lease_until - clock_timestamp())) * 1000)::bigint AS lease_left_ms FROM inserted x
UNION ALL
SELECT false AS fresh, x.id, x.client_id, x.idempotency_key, x.fingerprint, x.request, x.amount, x.currency, x.status, x.lease_gen, x.stripe_attempt,
x.last_stripe_error, x.needs_reconciliation, x.response_status, x.response_body, x.created_at, x.finished_at,
x.stripe_key_first_sent, x.stripe_key_last_sent, x.payment_intent_id AS object_id, x.pending_checks, x.stripe_identity, clock_timestamp() AS db_now,
(clock_timestamp() - x.stripe_key_first_sent) > 82800000 * interval '1 millisecond' AS beyond_horizon,
ceil(extract(epoch FROM (x.lease_until - clock_timestamp())) * 1000)::bigint AS lease_left_ms FROM stripe_intents x
 WHERE x.client_id = :pgbench_client AND x.idempotency_key = 'pgb-' || CAST(:k AS text) AND NOT EXISTS (SELECT 1 FROM inserted)
\gset
WITH done AS (
    UPDATE stripe_intents
       SET status = :completed, response_status = 201, response_body = :response, payment_intent_id = coalesce('pi_pgb' || CAST(:k AS text), payment_intent_id),
           charge_status = :succeeded, recheck_at = clock_timestamp() + NULL::bigint * interval '1 millisecond',
           finished_at = clock_timestamp(), updated_at = clock_timestamp(), lease_until = NULL,
           last_stripe_error = NULL, stripe_sending_until = NULL
     WHERE id = :id AND lease_gen = :lease_gen AND status = 'processing'
    RETURNING id, client_id, idempotency_key, origin, response_status, response_body)
, outboxed AS (
    INSERT INTO kafka_outbox (dedup, charge_id, client_id, event_id, origin, status, body)
    SELECT 'charge:' || d.id, d.id, d.client_id, d.idempotency_key, d.origin, d.response_status, d.response_body
      FROM done d
     WHERE d.origin IS NOT NULL
    ON CONFLICT (dedup) DO NOTHING
    RETURNING id)
SELECT count(*) FROM done;

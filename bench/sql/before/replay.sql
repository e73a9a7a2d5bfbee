-- A replay as the service ran it before the statements were reworked for cost (main as of 71fb6c2): the claim
-- statement finding a finished row.
\set i 10 * random(0, :replay_rows - 1)
WITH inserted AS (
    INSERT INTO stripe_intents AS si
        (id, client_id, idempotency_key, fingerprint, request, amount, currency, status, lease_until,
         stripe_sending_until, stripe_identity, origin)
    VALUES ('chg_pgbreplay' || CAST(:i AS text), :bench_client, 'bulk-' || CAST(:i AS text), :fingerprint, :request, 1000, :usd, 'processing', clock_timestamp() + 30000 * interval '1 millisecond',
            clock_timestamp() + 30000 * interval '1 millisecond', lpad(CAST(:i AS text), 48, 'e'), NULL)
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
 WHERE x.client_id = :bench_client AND x.idempotency_key = 'bulk-' || CAST(:i AS text) AND NOT EXISTS (SELECT 1 FROM inserted);

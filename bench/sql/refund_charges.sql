-- Charges to refund, as the service leaves them after a succeeded payment (completed, charge_status succeeded,
-- nothing reserved yet). psql variables: client (the client's id), prefix (their ids are chg_<prefix's letters and digits,
-- 12, padded with x><n, 12 digits> (an id as the service makes it: 24 letters and digits, or it answers 404), their
-- keys rcharge-<prefix>-<n>), amount (cents, at most the PaymentIntent's amount at the Stripe stand-in).
-- The PaymentIntents come from the table bench_pool (n, pi), filled by bench/run.sh with PaymentIntents seeded at
-- the stand-in (POST /_sandbox/seed): a refund of these charges reaches Stripe's (the stand-in's) real checks.
INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                            lease_gen, lease_until, stripe_attempt, stripe_key_first_sent, payment_intent_id,
                            charge_status, stripe_identity, response_status, response_body, created_at, updated_at,
                            finished_at)
SELECT r.id, :'client', CASE WHEN :'key_secret' = '' THEN r.idempotency_key END,
       encode(sha256(convert_to('POST /v1/charges' || chr(10) || r.request, 'UTF8')), 'hex'),
       r.request, :amount, 'usd', 'completed', 1, NULL, 1, r.created_at, r.pi, 'succeeded',
       CASE WHEN :'key_secret' = '' THEN substr(encode(sha256(convert_to(:'client' || chr(10) || r.idempotency_key, 'UTF8')), 'hex'), 1, 48)
            ELSE 'k001-' || substr(encode(hmac(convert_to(:'client' || chr(10) || r.idempotency_key, 'UTF8'), decode(:'key_secret', 'base64'), 'sha256'), 'hex'), 1, 48) END,
       201,
       '{"id":"' || r.id || '","object":"charge","status":"succeeded","amount":' || :amount
         || ',"currency":"usd","payment_method":"pm_card_visa","customer":null,"description":null,"metadata":{},'
         || '"payment_intent":"' || r.pi || '","created":' || extract(epoch FROM r.created_at)::bigint || '}',
       r.created_at, r.created_at + interval '180 milliseconds', r.created_at + interval '180 milliseconds'
  FROM (SELECT 'chg_' || rpad(left(regexp_replace(:'prefix', '[^A-Za-z0-9]', '', 'g'), 12), 12, 'x') || lpad(p.n::text, 12, '0') AS id, 'rcharge-' || :'prefix' || '-' || p.n AS idempotency_key,
               '{"amount":' || :amount || ',"currency":"usd","payment_method":"pm_card_visa"}' AS request,
               p.pi, now() - interval '1 hour' AS created_at
          FROM bench_pool p) r;

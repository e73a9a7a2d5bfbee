-- Finished refunds to replay, with their charges: for every n in [from, upto) a succeeded charge
-- chg_rbulk<n, 19 digits> of 1000 cents (client "bench") and one succeeded refund of 1 cent on it, key rbulk-<n>,
-- request body {"amount":1}. bench/lua/refunds.lua (mode=replay) replays them through the service, so the
-- fingerprint must be exactly the service's: SHA-256 of "POST /v1/charges/<charge>/refunds", a newline and the
-- canonical body. Each charge has 1 cent reserved (its refund's).
INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, amount_reserved, currency,
                            status, lease_gen, lease_until, stripe_attempt, stripe_key_first_sent, payment_intent_id,
                            charge_status, response_status, response_body, created_at, updated_at, finished_at,
                            stripe_identity)
SELECT c.id, 'bench', CASE WHEN :'key_secret' = '' THEN 'rbulk-charge-' || c.n END,
       encode(sha256(convert_to('POST /v1/charges' || chr(10) || c.request, 'UTF8')), 'hex'),
       c.request, 1000, 1, 'usd', 'completed', 1, NULL, 1, c.created_at, c.pi, 'succeeded', 201,
       '{"id":"' || c.id || '","object":"charge","status":"succeeded","amount":1000,"currency":"usd",'
         || '"payment_method":"pm_card_visa","customer":null,"description":null,"metadata":{},'
         || '"payment_intent":"' || c.pi || '","created":' || extract(epoch FROM c.created_at)::bigint || '}',
       c.created_at, c.created_at + interval '180 milliseconds', c.created_at + interval '180 milliseconds',
       CASE WHEN :'key_secret' = '' THEN substr(encode(sha256(convert_to('bench' || chr(10) || 'rbulk-charge-' || c.n, 'UTF8')), 'hex'), 1, 48)
            ELSE 'k001-' || substr(encode(hmac(convert_to('bench' || chr(10) || 'rbulk-charge-' || c.n, 'UTF8'), decode(:'key_secret', 'base64'), 'sha256'), 'hex'), 1, 48) END
  FROM (SELECT n, 'chg_rbulk' || lpad(n::text, 19, '0') AS id, 'pi_rb' || substr(md5('pi' || n), 1, 19) AS pi,
               '{"amount":1000,"currency":"usd","payment_method":"pm_card_visa"}' AS request,
               now() - interval '2 days' - (n % 86400) * interval '1 second' AS created_at
          FROM generate_series(:from, :upto - 1) AS n) c;

INSERT INTO stripe_refunds (id, charge_id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                            lease_gen, lease_until, stripe_attempt, stripe_key_first_sent, stripe_refund_id,
                            refund_status, stripe_identity, response_status, response_body, created_at, updated_at,
                            finished_at)
SELECT r.id, r.charge_id, 'bench', CASE WHEN :'key_secret' = '' THEN 'rbulk-' || r.n END,
       encode(sha256(convert_to('POST /v1/charges/' || r.charge_id || '/refunds' || chr(10) || '{"amount":1}', 'UTF8')), 'hex'),
       '{"amount":1,"charge":"' || r.charge_id || '","currency":"usd","metadata":{},"payment_intent":"' || r.pi || '"}',
       1, 'usd', 'completed', 1, NULL, 1, r.created_at, r.re, 'succeeded',
       -- the refund key's identity as the service computes it (KeyIdentities): how a replay finds the row
       CASE WHEN :'key_secret' = '' THEN substr(encode(sha256(convert_to('refund' || chr(10) || 'bench' || chr(10) || 'rbulk-' || r.n, 'UTF8')), 'hex'), 1, 48)
            ELSE 'k001-' || substr(encode(hmac(convert_to('refund' || chr(10) || 'bench' || chr(10) || 'rbulk-' || r.n, 'UTF8'), decode(:'key_secret', 'base64'), 'sha256'), 'hex'), 1, 48) END, 201,
       '{"id":"' || r.id || '","object":"refund","status":"succeeded","amount":1,"currency":"usd","charge":"'
         || r.charge_id || '","payment_intent":"' || r.pi || '","reason":null,"metadata":{},"stripe_refund":"' || r.re
         || '","created":' || extract(epoch FROM r.created_at)::bigint || '}',
       r.created_at, r.created_at + interval '150 milliseconds', r.created_at + interval '150 milliseconds'
  FROM (SELECT n, 'rfd_rb' || substr(md5('rfd' || n), 1, 22) AS id, 'chg_rbulk' || lpad(n::text, 19, '0') AS charge_id,
               'pi_rb' || substr(md5('pi' || n), 1, 19) AS pi, 're_rb' || substr(md5('re' || n), 1, 19) AS re,
               now() - interval '1 day' - (n % 86400) * interval '1 second' AS created_at
          FROM generate_series(:from, :upto - 1) AS n) r;

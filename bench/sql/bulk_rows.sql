-- Bulk-loads finished rows into stripe_intents, as months of traffic would leave them: many clients, ~93%
-- completed (201) and ~7% declined (402), realistic ids, canonical requests, fingerprints and stored answers.
-- psql variables: from (first row number, inclusive), upto (last row number, exclusive).
-- Rows whose number is a multiple of 10 belong to client "bench" and are always completed, with key bulk-<n> and
-- the body {"amount":1000+(n%1000),"currency":"usd","payment_method":"pm_card_visa"}: bench/lua/charges.lua
-- replays them through the service (mode=replay), so their fingerprint must be exactly the service's.
INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                            lease_gen, lease_until, stripe_attempt, stripe_key_first_sent, payment_intent_id,
                            response_status, response_body, created_at, updated_at, finished_at, stripe_identity)
SELECT r.id, r.client_id, CASE WHEN :'key_secret' = '' THEN r.idempotency_key END,
       encode(sha256(convert_to('POST /v1/charges' || chr(10) || r.request, 'UTF8')), 'hex'),
       r.request, r.amount, 'usd', r.status, 1, NULL, 1, r.created_at, r.pi,
       CASE r.status WHEN 'completed' THEN 201 ELSE 402 END,
       CASE r.status
         WHEN 'completed' THEN
           '{"id":"' || r.id || '","object":"charge","status":"succeeded","amount":' || r.amount
             || ',"currency":"usd","payment_method":"pm_card_visa","customer":null,"description":null,"metadata":{},'
             || '"payment_intent":"' || r.pi || '","created":' || extract(epoch FROM r.created_at)::bigint || '}'
         ELSE
           '{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds",'
             || '"message":"Your card was declined.","param":"payment_method","charge":"' || r.id
             || '","payment_intent":"' || r.pi || '"}}'
       END,
       r.created_at, r.created_at + interval '180 milliseconds', r.created_at + interval '180 milliseconds',
       -- the key's identity as the service computes it (KeyIdentities, version 1 under the bench's secret; version 0
       -- for the earlier schema, whose statements find rows by the key): how a replay finds the row
       CASE WHEN :'key_secret' = '' THEN substr(encode(sha256(convert_to(r.client_id || chr(10) || r.idempotency_key, 'UTF8')), 'hex'), 1, 48)
            ELSE 'k001-' || substr(encode(hmac(convert_to(r.client_id || chr(10) || r.idempotency_key, 'UTF8'), decode(:'key_secret', 'base64'), 'sha256'), 'hex'), 1, 48) END
  FROM (SELECT 'chg_b' || substr(md5(n::text), 1, 23) AS id,
               CASE WHEN n % 10 = 0 THEN 'bench' ELSE 'client_' || lpad((n % 997)::text, 4, '0') END AS client_id,
               'bulk-' || n AS idempotency_key,
               '{"amount":' || (1000 + n % 1000) || ',"currency":"usd","payment_method":"pm_card_visa"}' AS request,
               1000 + n % 1000 AS amount,
               CASE WHEN n % 10 = 7 THEN 'failed' ELSE 'completed' END AS status,
               'pi_b' || substr(md5('pi' || n), 1, 20) AS pi,
               now() - (n % 604800) * interval '1 second' AS created_at
          FROM generate_series(:from, :upto - 1) AS n) r;

-- The operators' search finds a charge by the Stripe customer it names (dev.chargeonce.idempotency.OperatorRows,
-- CHARGES_OF_CUSTOMER). The customer is only in the stored request (its canonical JSON, which writes
-- "customer":"cus_..." when the charge names one), so the index is on that field, partial: a charge that names no
-- customer is not in it, and its insert and finish parse no JSON. The search's other lookups use the indexes the
-- protocol has (the primary key, or stripe_intents_by_id on Citus; the PaymentIntent's, the refund's, the
-- identity's; a client's charges by creation).
--
-- On Citus (V1.15.0) the table is distributed by client_id; CREATE INDEX on a distributed table is propagated to
-- every shard, and the expression is immutable (jsonb's input and ->>), as Citus requires: nothing differs.
-- On a large table, create it first without blocking writes, and this migration finds it:
--   CREATE INDEX CONCURRENTLY stripe_intents_customer ON stripe_intents ((request::jsonb ->> 'customer'), created_at DESC)
--       WHERE request LIKE '%"customer":%';
CREATE INDEX IF NOT EXISTS stripe_intents_customer ON stripe_intents ((request::jsonb ->> 'customer'), created_at DESC)
    WHERE request LIKE '%"customer":%';

-- Issue 14, expand: rows are found and made unique by the key's identity (stripe_identity, a hash of the client and
-- its Idempotency-Key, the same for every row that key ever has), not by the raw key: one unique index serves the
-- claim, the replay and the lookup of an event by identity, where two did (the raw key's and the identity's).
-- Every statement on these tables lives in dev.chargeonce.idempotency.IdempotencyStore.
--
-- This step keeps the old unique constraint, so that instances of the previous release, which claim
-- ON CONFLICT (client_id, idempotency_key), keep working during a rolling deploy; V1.9.0 (the next release's
-- contract step) drops it. Both constraints agree: the identity is a function of (client, key).
--
-- On a large table, build the index first, without blocking writes, and this migration finds it:
--   CREATE UNIQUE INDEX CONCURRENTLY stripe_intents_identity ON stripe_intents (stripe_identity, client_id);
--   CREATE UNIQUE INDEX CONCURRENTLY stripe_refunds_identity ON stripe_refunds (stripe_identity, client_id);
-- (rows without an identity, made before V1.2.0 by hand, need the UPDATEs below first).

UPDATE stripe_intents
   SET stripe_identity = substr(encode(sha256(convert_to(client_id || E'\n' || idempotency_key, 'UTF8')), 'hex'), 1, 48)
 WHERE stripe_identity IS NULL;
UPDATE stripe_refunds
   SET stripe_identity = substr(encode(sha256(convert_to('refund' || E'\n' || client_id || E'\n' || idempotency_key, 'UTF8')), 'hex'), 1, 48)
 WHERE stripe_identity IS NULL;

ALTER TABLE stripe_intents ALTER COLUMN stripe_identity SET NOT NULL;
ALTER TABLE stripe_refunds ALTER COLUMN stripe_identity SET NOT NULL;

-- Identity first: an event that names only the identity (its PaymentIntent's metadata) finds its row by it too.
CREATE UNIQUE INDEX IF NOT EXISTS stripe_intents_identity ON stripe_intents (stripe_identity, client_id);
CREATE UNIQUE INDEX IF NOT EXISTS stripe_refunds_identity ON stripe_refunds (stripe_identity, client_id);

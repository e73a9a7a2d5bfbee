-- Issue 14, expand: rows are found and made unique by the key's identity (stripe_identity, a hash of the client and
-- its Idempotency-Key, the same for every row that key ever has), not by the raw key: one unique index serves the
-- claim, the replay and the lookup of an event by identity, where two did (the raw key's and the identity's).
-- Every statement on these tables lives in dev.chargeonce.idempotency.IdempotencyStore.
--
-- This step keeps the old unique constraint, so that instances of the previous release, which claim
-- ON CONFLICT (client_id, idempotency_key), keep working; V1.9.0 drops it (see the README, "Upgrading a running
-- fleet past V1.8.0"). Both constraints agree: the identity is a function of (client, key).
--
-- Every row this service ever wrote carries the identity derived from its key (StripeKeys since V1.2.0, whose
-- backfill used the same formula); rows loaded by hand with another identity would be invisible to a retry of their
-- key from now on. The benchmark's bulk loads before this release wrote md5 identities: reload such databases.
--
-- On a large table, build the indexes first, without blocking writes, and this migration finds them (drop an
-- INVALID one left by a failed CONCURRENTLY first: IF NOT EXISTS would accept it):
--   CREATE UNIQUE INDEX CONCURRENTLY stripe_intents_identity ON stripe_intents (stripe_identity, client_id);
--   CREATE UNIQUE INDEX CONCURRENTLY stripe_refunds_identity ON stripe_refunds (stripe_identity, client_id);

UPDATE stripe_intents
   SET stripe_identity = substr(encode(sha256(convert_to(client_id || E'\n' || idempotency_key, 'UTF8')), 'hex'), 1, 48)
 WHERE stripe_identity IS NULL;
UPDATE stripe_refunds
   SET stripe_identity = substr(encode(sha256(convert_to('refund' || E'\n' || client_id || E'\n' || idempotency_key, 'UTF8')), 'hex'), 1, 48)
 WHERE stripe_identity IS NULL;

-- Every new or changed row must carry one. NOT VALID: no scan of the table under this transaction's exclusive lock
-- (the backfill above filled the existing rows). V1.8.1 validates it in a transaction of its own (a scan that does not
-- block writes), and V1.8.2 turns it into NOT NULL, which then needs no scan, and drops it.
ALTER TABLE stripe_intents ADD CONSTRAINT stripe_intents_identity_present CHECK (stripe_identity IS NOT NULL) NOT VALID;
ALTER TABLE stripe_refunds ADD CONSTRAINT stripe_refunds_identity_present CHECK (stripe_identity IS NOT NULL) NOT VALID;

-- Identity first: an event that names only the identity (its PaymentIntent's metadata) finds its row by it too.
CREATE UNIQUE INDEX IF NOT EXISTS stripe_intents_identity ON stripe_intents (stripe_identity, client_id);
CREATE UNIQUE INDEX IF NOT EXISTS stripe_refunds_identity ON stripe_refunds (stripe_identity, client_id);

-- Issue 16, keys stored hashed, contract (after V1.13.0 is deployed everywhere): the keys rows claimed before it
-- kept are erased, and none is stored again: only a Kafka command's row (origin set) keeps its event id.
--
-- Rows claimed before V1.13.0 keep the identity they were claimed under (the unkeyed hash, version 0): their
-- Stripe keys were derived from it and Stripe's objects carry it. They are found by it while
-- chargeonce.idempotency.key-hash-read-versions includes 0, until retention deletes them.
--
-- Both updates rewrite every row that has a key, in this migration's transaction: on a large table run them
-- beforehand in batches (the same statements with "AND id IN (SELECT id ... LIMIT 10000)"), and this migration
-- finds nothing left to do. NOT VALID: the constraints hold for every row written from now on; the updates above
-- made them true of the others without a scan under this transaction's exclusive lock.
UPDATE stripe_intents SET idempotency_key = NULL WHERE idempotency_key IS NOT NULL AND origin IS NULL;
UPDATE stripe_refunds SET idempotency_key = NULL WHERE idempotency_key IS NOT NULL;
ALTER TABLE stripe_intents ADD CONSTRAINT stripe_intents_key_kept_only_for_commands
    CHECK (idempotency_key IS NULL OR origin IS NOT NULL) NOT VALID;
ALTER TABLE stripe_refunds ADD CONSTRAINT stripe_refunds_key_not_kept CHECK (idempotency_key IS NULL) NOT VALID;

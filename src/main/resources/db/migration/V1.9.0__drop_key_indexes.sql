-- Issue 14, contract (after V1.8.0 is deployed everywhere): the raw key's unique constraint and the identity's plain
-- index are served by the unique (stripe_identity, client_id) index: every insert and every finish (an UPDATE
-- that is not HOT writes a new entry into each index) maintains one random-order B-tree fewer.
ALTER TABLE stripe_intents DROP CONSTRAINT stripe_intents_client_key;
DROP INDEX stripe_intents_stripe_identity;
ALTER TABLE stripe_refunds DROP CONSTRAINT stripe_refunds_client_key;
DROP INDEX stripe_refunds_stripe_identity;

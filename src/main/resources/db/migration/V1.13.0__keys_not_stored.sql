-- Issue 16, keys stored hashed, expand: rows no longer keep the client's Idempotency-Key. A row is found by its
-- identity (stripe_identity), which from this release on is a keyed hash of (client, key) whose secret is not in the
-- database (dev.chargeonce.idempotency.KeyIdentities): a dump of these tables tells nothing of the keys, not even a
-- guessable one. The column stays for one use: a Kafka command's row keeps its event id, the key of the result
-- records whoever finishes the row publishes (the event id travels in clear on both topics anyway).
--
-- Instances of the previous release still write the key and never read it back for anything but a row without an
-- identity (none since V1.8.2): they run on this schema. V1.14.0 erases the keys they wrote (see the README, "Keys
-- stored hashed").
ALTER TABLE stripe_intents ALTER COLUMN idempotency_key DROP NOT NULL;
ALTER TABLE stripe_refunds ALTER COLUMN idempotency_key DROP NOT NULL;

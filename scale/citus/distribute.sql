-- The schema change Citus needs before stripe_intents and stripe_refunds can be distributed by client_id (issue 17),
-- as scale/citus/probe.sh applies it on top of the service's migrations. Not a migration yet: the statements do not
-- all run on the distributed tables (see README "Past one primary: Citus"), and a distributed table the service
-- cannot finish a charge on is worse than a local one.

-- Every unique constraint must hold the distribution column: the primary keys become (client_id, id), and the
-- refund's foreign key names its charge by both (a refund lives on its charge's shard: colocated).
ALTER TABLE stripe_refunds DROP CONSTRAINT stripe_refunds_charge_id_fkey;
ALTER TABLE stripe_intents DROP CONSTRAINT stripe_intents_pkey, ADD PRIMARY KEY (client_id, id);
ALTER TABLE stripe_refunds DROP CONSTRAINT stripe_refunds_pkey, ADD PRIMARY KEY (client_id, id);
ALTER TABLE stripe_refunds ADD CONSTRAINT stripe_refunds_charge_fkey
    FOREIGN KEY (client_id, charge_id) REFERENCES stripe_intents (client_id, id);

-- The wake-up triggers (a waiting retry is told by NOTIFY that its key's row changed) block distribution: Citus
-- refuses a table with triggers unless told they are safe, and they are not quite: on a distributed table the
-- trigger fires on the worker holding the shard, and its NOTIFY reaches listeners of that worker, not the service's
-- sessions on the coordinator. Allowed here to see what else the tables need; the waiters need another wake-up.
SET citus.enable_unsafe_triggers = on;
SELECT create_distributed_table('stripe_intents', 'client_id');
SELECT create_distributed_table('stripe_refunds', 'client_id', colocate_with => 'stripe_intents');

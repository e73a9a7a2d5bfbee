-- Issue 17: past one primary. On a Citus cluster (the citus extension is in this database), stripe_intents and
-- stripe_refunds are distributed by client_id, colocated: every claim, finish and replay names its client and runs
-- on one shard, and a refund lives on its charge's shard. On plain PostgreSQL this migration does nothing.
--
-- What Citus needs first, and why plain PostgreSQL keeps what it has:
--   * Every unique constraint holds the distribution column: the primary keys become (client_id, id) and the
--     refund's foreign key names its charge by both. The claim's unique index (stripe_identity, client_id) and
--     the old key constraints already hold client_id. On plain PostgreSQL the primary key stays (id): every statement
--     of the service finds a row by (id, client_id) either way, and (id) alone also serves the operators' look at a
--     row by its id, which on Citus needs an index of its own (below) on every insert.
--   * The wake-up triggers (V1.7.0) go: on a distributed table they fire on the worker that holds the shard, and
--     their NOTIFY reaches that worker's listeners, never the service's connection to the coordinator. A waiting
--     retry (Prefer: wait) on Citus looks at its row again on a short back-off instead (KeyChangeListener,
--     WaitThenReplay).
--   * The other tables (webhook inbox, Kafka outbox and offsets, reconciliation, customers) stay local tables on the
--     coordinator: none of their statements is on a hot path that grows with clients, and none joins a distributed
--     table on a worker.
-- An existing plain-PostgreSQL database moved onto Citus is a data migration of its own (not this one): this runs
-- where the schema is created on the cluster, so the tables are empty or small.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN;
    END IF;
    ALTER TABLE stripe_refunds DROP CONSTRAINT stripe_refunds_charge_id_fkey;
    ALTER TABLE stripe_intents DROP CONSTRAINT stripe_intents_pkey, ADD PRIMARY KEY (client_id, id);
    ALTER TABLE stripe_refunds DROP CONSTRAINT stripe_refunds_pkey, ADD PRIMARY KEY (client_id, id);
    ALTER TABLE stripe_refunds ADD CONSTRAINT stripe_refunds_charge_fkey
        FOREIGN KEY (client_id, charge_id) REFERENCES stripe_intents (client_id, id);
    CREATE INDEX stripe_intents_by_id ON stripe_intents (id);
    CREATE INDEX stripe_refunds_by_id ON stripe_refunds (id);
    DROP TRIGGER stripe_intents_wake_waiters ON stripe_intents;
    DROP TRIGGER stripe_refunds_wake_waiters ON stripe_refunds;
    PERFORM create_distributed_table('stripe_intents', 'client_id');
    PERFORM create_distributed_table('stripe_refunds', 'client_id', colocate_with => 'stripe_intents');
END
$$;

-- The Kafka ingress (issue 15): the commands topic's offsets, kept in PostgreSQL beside the rows they led to.
-- A failover to a standby that had not received the last commits (or a restore) loses those rows and, with them,
-- the offsets stored after them; Kafka's committed offsets survive it. A consumer that finds the database's offset
-- behind what it stored there itself reads the records from the database's offset again (their claims make the
-- lost rows again, with the same Stripe keys): a lost commit costs a redelivery, never a command. Every statement on
-- this table lives in dev.chargeonce.idempotency.ConsumedOffsets.
CREATE TABLE kafka_offsets (
    group_id     text        NOT NULL,
    topic        text        NOT NULL,
    partition    integer     NOT NULL,
    next_offset  bigint      NOT NULL,   -- the next record to handle: every record before it has its row committed
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (group_id, topic, partition)
);

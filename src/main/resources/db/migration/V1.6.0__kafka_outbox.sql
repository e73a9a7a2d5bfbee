-- The Kafka ingress (issue 15): charge commands from a topic, results to a topic through a transactional outbox.
-- Every statement on kafka_outbox, and the origin of stripe_intents, lives in dev.chargeonce.idempotency:
-- ResultOutbox (the relay's statements) and IdempotencyStore (the row written by a finish, in the finish's own
-- statement). The claim of a Kafka command is the claim of any charge: (client_id, idempotency_key) with the
-- command's event id as the key.

-- Where a charge's claim came from: NULL for HTTP; for a Kafka command the record that claimed it,
-- 'kafka:<topic>-<partition>@<offset>'. A row with an origin has its result queued in kafka_outbox by whatever
-- finishes it (the driver, recovery, a webhook or the sync worker, an operator), in the finishing statement.
-- A constant-free nullable column: no table rewrite.
ALTER TABLE stripe_intents ADD COLUMN origin text;

-- Results waiting for (or past) the relay. One row per charge (dedup = 'charge:<id>') or per refused record
-- (a 422: dedup = 'record:<topic>-<partition>@<offset>'): a row is never queued twice, a result may be published
-- twice (the relay crashed between the send and marking it sent) and carries the charge id for consumers' dedup.
CREATE TABLE kafka_outbox (
    id          bigserial   PRIMARY KEY,
    dedup       text        NOT NULL UNIQUE,
    charge_id   text,                                -- NULL for a 422 (the record claimed nothing)
    client_id   text        NOT NULL,
    event_id    text        NOT NULL,                -- the record key: the command's Idempotency-Key
    origin      text        NOT NULL,                -- the record that asked for it
    status      integer     NOT NULL,                -- the HTTP status the answer would have had
    body        text        NOT NULL,                -- the HTTP answer's body, byte for byte
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    sent_at     timestamptz
);
-- The relay's queue: unsent rows in order; and the retention of sent ones.
CREATE INDEX kafka_outbox_unsent ON kafka_outbox (id) WHERE sent_at IS NULL;
CREATE INDEX kafka_outbox_sent_at ON kafka_outbox (sent_at) WHERE sent_at IS NOT NULL;

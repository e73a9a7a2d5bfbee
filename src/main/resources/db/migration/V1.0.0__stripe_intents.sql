-- One row per (client, Idempotency-Key): the claim, the lease, the Stripe attempt and the cached answer.
-- Every statement on this table lives in dev.chargeonce.idempotency.IdempotencyStore.
CREATE TABLE stripe_intents (
    id                      text        PRIMARY KEY,          -- the charge id clients see (chg_...)
    client_id               text        NOT NULL,
    idempotency_key         text        NOT NULL,
    fingerprint             text        NOT NULL,             -- sha256 of method, path and canonical body
    request                 text        NOT NULL,             -- canonical request, so recovery can re-drive it alone
    amount                  bigint      NOT NULL,
    currency                text        NOT NULL,
    status                  text        NOT NULL,
    -- Fencing: grows on every claim takeover; a finish carrying an older generation changes nothing.
    lease_gen               integer     NOT NULL DEFAULT 1,
    lease_until             timestamptz,
    -- Picks the Stripe idempotency key. Grows only once Stripe proved the previous attempt created nothing.
    stripe_attempt          integer     NOT NULL DEFAULT 1,
    stripe_key_first_sent   timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_stripe_error       text,                             -- 'server_error' means: look up before re-sending
    needs_reconciliation    boolean     NOT NULL DEFAULT false,
    payment_intent_id       text,
    response_status         integer,
    response_body           text,
    created_at              timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at              timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at             timestamptz,
    CONSTRAINT stripe_intents_client_key UNIQUE (client_id, idempotency_key),
    CONSTRAINT stripe_intents_status CHECK (status IN ('processing', 'completed', 'failed')),
    CONSTRAINT stripe_intents_answer_iff_finished
        CHECK ((status = 'processing') = (response_status IS NULL AND response_body IS NULL AND finished_at IS NULL)),
    CONSTRAINT stripe_intents_key_length CHECK (char_length(idempotency_key) BETWEEN 1 AND 255)
);

-- GET /v1/charges: a client's charges, newest first.
CREATE INDEX stripe_intents_client_created ON stripe_intents (client_id, created_at DESC, id DESC);
-- Recovery: processing rows whose lease ran out.
CREATE INDEX stripe_intents_processing_lease ON stripe_intents (lease_until) WHERE status = 'processing';
-- Retention: finished rows by age.
CREATE INDEX stripe_intents_finished_at ON stripe_intents (finished_at) WHERE status <> 'processing';

-- Refunds (issue 11): the same protocol as charges, on a table of their own. Every statement on both tables
-- lives in dev.chargeonce.idempotency.IdempotencyStore.

-- What the charge has promised back: pending + succeeded refunds (a failed or canceled one gives its amount back).
-- Reserved on the primary in the refund's claim transaction, so that no interleaving can refund more than was paid.
ALTER TABLE stripe_intents
    ADD COLUMN amount_reserved bigint NOT NULL DEFAULT 0,
    ADD CONSTRAINT stripe_intents_reserved_within CHECK (amount_reserved BETWEEN 0 AND amount);

CREATE TABLE stripe_refunds (
    id                      text        PRIMARY KEY,          -- the refund id clients see (rfd_...)
    charge_id               text        NOT NULL REFERENCES stripe_intents (id),
    client_id               text        NOT NULL,
    idempotency_key         text        NOT NULL,
    fingerprint             text        NOT NULL,
    request                 text        NOT NULL,             -- canonical request, amount resolved, PaymentIntent named
    amount                  bigint      NOT NULL,
    currency                text        NOT NULL,
    status                  text        NOT NULL,
    lease_gen               integer     NOT NULL DEFAULT 1,
    lease_until             timestamptz,
    stripe_attempt          integer     NOT NULL DEFAULT 1,
    stripe_key_first_sent   timestamptz NOT NULL DEFAULT clock_timestamp(),
    stripe_key_last_sent    timestamptz,
    stripe_sending_until    timestamptz,
    last_stripe_error       text,
    needs_reconciliation    boolean     NOT NULL DEFAULT false,
    reconciliation_reason   text,
    stripe_refund_id        text,                             -- re_...
    refund_status           text,                             -- the refund at Stripe, forward only
    stripe_identity         text,                             -- its chargeonce_key metadata
    response_status         integer,
    response_body           text,
    recheck_at              timestamptz,
    pending_checks          integer     NOT NULL DEFAULT 0,
    created_at              timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at              timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at             timestamptz,
    CONSTRAINT stripe_refunds_client_key UNIQUE (client_id, idempotency_key),
    CONSTRAINT stripe_refunds_status CHECK (status IN ('processing', 'completed', 'failed', 'accepted')),
    CONSTRAINT stripe_refunds_answer_iff_finished
        CHECK ((status = 'processing') = (response_status IS NULL AND response_body IS NULL AND finished_at IS NULL)),
    CONSTRAINT stripe_refunds_key_length CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
    CONSTRAINT stripe_refunds_amount CHECK (amount > 0),
    CONSTRAINT stripe_refunds_refund_status
        CHECK (refund_status IN ('pending', 'requires_action', 'succeeded', 'failed', 'canceled'))
);

-- A charge's refunds (GET /v1/charges/{id}/refunds, amount_refunded).
CREATE INDEX stripe_refunds_charge ON stripe_refunds (charge_id, created_at DESC, id DESC);
CREATE INDEX stripe_refunds_processing_lease ON stripe_refunds (lease_until) WHERE status = 'processing';
CREATE INDEX stripe_refunds_finished_at ON stripe_refunds (finished_at) WHERE status <> 'processing';
CREATE INDEX stripe_refunds_refund ON stripe_refunds (stripe_refund_id) WHERE stripe_refund_id IS NOT NULL;
CREATE INDEX stripe_refunds_stripe_identity ON stripe_refunds (stripe_identity);
CREATE INDEX stripe_refunds_accepted_recheck ON stripe_refunds (recheck_at) WHERE status = 'accepted';

-- An event may concern a refund's row as well as a charge's: the inbox names the row, whichever table holds it.
ALTER TABLE stripe_events RENAME COLUMN charge_id TO row_id;

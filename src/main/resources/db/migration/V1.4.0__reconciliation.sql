-- Reconciliation and the operator's console (issue 12). Every statement on these tables lives in
-- dev.chargeonce.reconcile.ReconciliationStore; operator actions on stripe_intents and stripe_refunds go through
-- dev.chargeonce.idempotency.IdempotencyStore, as every other statement on them.

-- Who runs the reconciliation now: one instance at a time holds the lease; the generation fences a holder that
-- lost it (a paused JVM) out of the run's checkpoint.
CREATE TABLE job_leases (
    name         text        PRIMARY KEY,
    holder       text,
    lease_gen    bigint      NOT NULL DEFAULT 0,
    lease_until  timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO job_leases (name) VALUES ('reconciliation');

-- One comparison of a window of time with Stripe, resumable: the phase it is in and the cursor within the phase
-- are written after every page, so a run killed half-way goes on from there under the next holder.
CREATE TABLE reconciliation_runs (
    id             bigserial   PRIMARY KEY,
    window_from    timestamptz NOT NULL,
    window_to      timestamptz NOT NULL,
    requested_by   text        NOT NULL,             -- schedule | an operator's name
    status         text        NOT NULL DEFAULT 'queued',
    phase          text        NOT NULL DEFAULT 'payment_intents',
    cursor         text,                             -- Stripe's starting_after, or our last (created_at|id)
    pages          integer     NOT NULL DEFAULT 0,
    objects        integer     NOT NULL DEFAULT 0,
    rate_limited   integer     NOT NULL DEFAULT 0,
    new_findings   integer     NOT NULL DEFAULT 0,
    error          text,
    created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at     timestamptz,
    finished_at    timestamptz,
    CONSTRAINT reconciliation_runs_status CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    CONSTRAINT reconciliation_runs_phase
        CHECK (phase IN ('payment_intents', 'charges', 'refunds', 'refund_rows', 'rows', 'done')),
    CONSTRAINT reconciliation_runs_window CHECK (window_from < window_to)
);
CREATE INDEX reconciliation_runs_open ON reconciliation_runs (created_at) WHERE status IN ('queued', 'running');

-- The Stripe objects a run saw, so that its second half (our rows) knows which rows Stripe already vouched for.
CREATE TABLE reconciliation_seen (
    run_id     bigint NOT NULL REFERENCES reconciliation_runs (id) ON DELETE CASCADE,
    object_id  text   NOT NULL,
    PRIMARY KEY (run_id, object_id)
);

-- Every difference with Stripe, once: a finding seen again only moves last_seen. Resolved by an operator (or by
-- the job, for a parked or stuck row that is no longer so), never deleted.
CREATE TABLE reconciliation_findings (
    id                bigserial   PRIMARY KEY,
    kind              text        NOT NULL,
    subject           text        NOT NULL,          -- what it is about: a Stripe object id, a row id, a key identity
    operation         text,                          -- charge | refund
    row_id            text,                          -- our row, when one is concerned
    stripe_object_id  text,                          -- Stripe's object, when one is concerned
    client_id         text,
    detail            text        NOT NULL,
    first_seen        timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_seen         timestamptz NOT NULL DEFAULT clock_timestamp(),
    times_seen        integer     NOT NULL DEFAULT 1,
    first_run_id      bigint,
    resolved_at       timestamptz,
    resolved_by       text,
    resolution        text,
    CONSTRAINT reconciliation_findings_once UNIQUE (kind, subject)
);
CREATE INDEX reconciliation_findings_open ON reconciliation_findings (first_seen) WHERE resolved_at IS NULL;

-- What operators did, and why: every console or admin API action, refused ones included.
CREATE TABLE operator_actions (
    id          bigserial   PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    operator    text        NOT NULL,
    action      text        NOT NULL,             -- attach | mark_failed | requeue | acknowledge
    operation   text,
    row_id      text,
    finding_id  bigint,
    lease_gen   integer,                          -- the generation the operator saw (the action is fenced by it)
    reason      text        NOT NULL,
    outcome     text        NOT NULL,             -- done | refused
    detail      text
);
CREATE INDEX operator_actions_row ON operator_actions (row_id, at);

-- A row's story in the console: the events that concerned it, or named its Stripe object.
CREATE INDEX stripe_events_row ON stripe_events (row_id) WHERE row_id IS NOT NULL;
CREATE INDEX stripe_events_object ON stripe_events (object_id) WHERE object_id IS NOT NULL;

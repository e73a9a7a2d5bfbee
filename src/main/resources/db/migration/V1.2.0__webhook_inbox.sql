-- Stripe's webhooks through a transactional inbox (issue 10). Every statement on stripe_events lives in
-- dev.chargeonce.webhook.StripeEventInbox; on stripe_intents, still in IdempotencyStore.

-- One row per Stripe event id: inserted in the same transaction as the state change the event causes, so a
-- redelivery inserts nothing and changes nothing, and a state change that fails takes its inbox row with it.
CREATE TABLE stripe_events (
    id                 text        PRIMARY KEY,          -- evt_...: stable across Stripe's redeliveries
    type               text        NOT NULL,
    api_version        text,
    stripe_created     timestamptz NOT NULL,             -- when Stripe made the event (events arrive in any order)
    object_id          text,                             -- data.object.id (a PaymentIntent for payment_intent.*)
    payload            text        NOT NULL,             -- the raw body, as signed, for audit and catch-up replays
    source             text        NOT NULL,             -- webhook | catch_up
    -- applied: it changed a charge; ignored: nothing to change (older than the charge's state, or a type we do
    -- not act on); unknown: it names a PaymentIntent no charge here has (reconciliation looks at those).
    outcome            text        NOT NULL,
    charge_id          text,                             -- the stripe_intents row it concerned, when one did
    detail             text,
    received_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT stripe_events_outcome CHECK (outcome IN ('applied', 'ignored', 'unknown'))
);
-- Retention (events older than the inbox retention) and the catch-up's checkpoint (the newest event seen).
CREATE INDEX stripe_events_received_at ON stripe_events (received_at);
CREATE INDEX stripe_events_stripe_created ON stripe_events (stripe_created);
CREATE INDEX stripe_events_unknown ON stripe_events (received_at) WHERE outcome = 'unknown';

-- The charge's state at Stripe as GET shows it, apart from the answer the POST cached and replays: a 202 for a
-- payment that needs 3-D Secure stays the POST's answer while the charge goes on to succeeded or failed.
ALTER TABLE stripe_intents
    ADD COLUMN charge_status text,
    -- The charge's identity at Stripe (the chargeonce_key metadata): how an event naming a PaymentIntent the row
    -- never heard of (an unknown outcome) finds its row.
    ADD COLUMN stripe_identity text,
    ADD CONSTRAINT stripe_intents_charge_status
        CHECK (charge_status IN ('requires_action', 'processing', 'succeeded', 'failed', 'canceled'));

UPDATE stripe_intents
   SET stripe_identity = substr(encode(sha256(convert_to(client_id || E'\n' || idempotency_key, 'UTF8')), 'hex'), 1, 48),
       charge_status = CASE WHEN status = 'completed' THEN 'succeeded'
                            WHEN status = 'failed' AND payment_intent_id IS NOT NULL THEN 'failed' END;

CREATE INDEX stripe_intents_stripe_identity ON stripe_intents (stripe_identity);
CREATE INDEX stripe_intents_payment_intent ON stripe_intents (payment_intent_id) WHERE payment_intent_id IS NOT NULL;

-- A 202 (3-D Secure to complete, a bank debit processing) is the key's final answer, replayed as it was; the
-- charge's outcome then arrives by webhook (or the sync worker) into charge_status.
ALTER TABLE stripe_intents DROP CONSTRAINT stripe_intents_status;
ALTER TABLE stripe_intents ADD CONSTRAINT stripe_intents_status CHECK (status IN ('processing', 'completed', 'failed', 'accepted'));

-- The sync worker: accepted charges whose outcome has not arrived, by when to look at the PaymentIntent again.
CREATE INDEX stripe_intents_accepted_recheck ON stripe_intents (recheck_at) WHERE status = 'accepted';

-- Crash windows, round two: when the current Stripe key was last sent, what the worker waits for, and why a row
-- was parked. Every statement on this table still lives in dev.chargeonce.idempotency.IdempotencyStore.
ALTER TABLE stripe_intents
    -- Latest start of a request with the current Stripe key, as reported by holders that let go of the lease,
    -- and bounded by the lease of holders that never did (crashed): folded in at takeover. NULL: never sent.
    -- Stripe may keep working on a request for chargeonce.stripe.request-max-duration after it was sent.
    ADD COLUMN stripe_key_last_sent timestamptz,
    -- The current holder may send the current key until then (its lease); NULL once it reported its sends.
    ADD COLUMN stripe_sending_until timestamptz,
    -- The recovery worker leaves the row alone until then: a PaymentIntent still pending at Stripe (back-off), or
    -- a key answered 5xx whose requests may still run at Stripe. A client's retry drives the row at once.
    ADD COLUMN recheck_at timestamptz,
    -- Times a pending PaymentIntent was looked at by id: picks the step of the back-off.
    ADD COLUMN pending_checks integer NOT NULL DEFAULT 0,
    -- Why the row waits for an operator (set with needs_reconciliation).
    ADD COLUMN reconciliation_reason text;

-- Rows that were driving when this version arrived may be sending: bound them by their lease.
UPDATE stripe_intents SET stripe_sending_until = lease_until WHERE status = 'processing';

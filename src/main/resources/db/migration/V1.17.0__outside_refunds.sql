-- Refunds made outside this service (in Stripe's Dashboard, by another integration) on charges it made: Stripe's word,
-- recorded once per Stripe refund whoever sees it first (an event, or reconciliation's list), so that a charge's
-- refunded amount (GET /v1/charges/{id}) and what is left to refund through the API count them. Every statement on
-- this table lives in dev.chargeonce.idempotency.OutsideRefundRows.
--
-- status: the refund's at Stripe, forward only (pending, requires_action, succeeded, failed, canceled). Pending,
-- requires_action and succeeded ones count against the charge (what a refund through the API may reserve); only
-- succeeded ones are refunded (amount_refunded). A refund that fails later gives its amount back.
CREATE TABLE outside_refunds (
    client_id          text        NOT NULL,             -- the charge's client
    stripe_refund_id   text        NOT NULL,             -- re_...
    charge_id          text        NOT NULL,             -- the charge (chg_...) whose PaymentIntent was refunded
    payment_intent_id  text        NOT NULL,
    amount             bigint      NOT NULL,
    status             text        NOT NULL,
    first_seen_by      text        NOT NULL,             -- event | reconciliation
    created_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (client_id, stripe_refund_id),
    CONSTRAINT outside_refunds_amount CHECK (amount > 0),
    CONSTRAINT outside_refunds_status
        CHECK (status IN ('pending', 'requires_action', 'succeeded', 'failed', 'canceled'))
);
-- A charge's outside refunds (what it has left, what it refunded).
CREATE INDEX outside_refunds_charge ON outside_refunds (charge_id);

-- The charge's rows go with it (retention deletes a charge past the refund window). On Citus, like stripe_refunds
-- (V1.15.0): distributed by client_id, colocated with stripe_intents, so that a refund claim's lock of the charge
-- and the read of its outside refunds stay on the charge's shard; the foreign key then names the charge by both.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        ALTER TABLE outside_refunds ADD CONSTRAINT outside_refunds_charge_fkey
            FOREIGN KEY (charge_id) REFERENCES stripe_intents (id) ON DELETE CASCADE;
        RETURN;
    END IF;
    -- distributed first: Citus takes a foreign key between colocated distributed tables, not from a local one
    PERFORM create_distributed_table('outside_refunds', 'client_id', colocate_with => 'stripe_intents');
    ALTER TABLE outside_refunds ADD CONSTRAINT outside_refunds_charge_fkey
        FOREIGN KEY (client_id, charge_id) REFERENCES stripe_intents (client_id, id) ON DELETE CASCADE;
END
$$;

-- The Events API catch-up reads Stripe's events forward from a durable place, one stream per row (the service
-- follows one: 'stripe_events', the events its webhook endpoint subscribes to). Every statement on this table lives
-- in dev.chargeonce.webhook.EventCursor.
--
-- The place: every followed event created before position_created is recorded in stripe_events and, with
-- position_id, so is every event up to and including that one in Stripe's list order (the next pass pages on from it).
-- The place only ever moves to events older than the catch-up's overlap (an event still appearing late in Stripe's
-- list sorts behind it), and it moves per page, after the page's events are recorded: a pass that stops (page budget,
-- Stripe, the database) goes on from there next time.
--
-- The lease: one pass at a time over all instances. A pass takes it in one short statement, renews it with every
-- page's move (a statement that names its holder, so a pass that lost it moves nothing), and gives it back at the
-- end; a holder killed mid-pass leaves it to expire. No connection is held while Stripe is read.
--
-- Citus: a local table on the coordinator, like the inbox (one row per stream, no hot path).
CREATE TABLE event_cursors (
    stream            text        PRIMARY KEY,
    position_created  timestamptz NOT NULL,
    position_id       text,
    lease_holder      text,
    lease_until       timestamptz,
    moved_at          timestamptz NOT NULL DEFAULT clock_timestamp()   -- when the place last moved
);

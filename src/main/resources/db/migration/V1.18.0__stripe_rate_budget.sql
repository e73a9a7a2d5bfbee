-- Stripe's rate limits, shared by every instance: one schedule per (Stripe account, endpoint, traffic class). Every
-- statement on this table lives in dev.chargeonce.ratebudget.Schedule.
--
-- A schedule is a GCRA (the generic cell rate algorithm, a token bucket told as times): booked_until_us is the
-- moment up to which permits are booked, on the database's clock. An instance books k permits at once, the slots
-- max(booked_until, now) + i * interval for i < k, and moves booked_until past them; it sends each request at its
-- slot (or up to a small tolerance after it) and drops the slots it could not use. So the requests of all
-- instances together are spaced by the interval whatever their number, and an instance killed with a batch in hand
-- loses that batch, never the schedule.
--
-- The rate: configured_rate (per second, written by the instances from their configuration), lowered when Stripe
-- answers 429 anyway (another system shares the account, the limits were lowered): decreased_rate at decreased_us,
-- from which the rate climbs back by a configured amount per second (additive increase, multiplicative decrease).
--
-- Citus: a local table on the coordinator, like event_cursors (a few rows, one short statement per batch).
CREATE TABLE stripe_rate_budget (
    account          text             NOT NULL,
    endpoint         text             NOT NULL,
    traffic_class    text             NOT NULL,
    configured_rate  double precision NOT NULL CHECK (configured_rate > 0),
    booked_until_us  bigint           NOT NULL DEFAULT 0,
    decreased_rate   double precision CHECK (decreased_rate > 0),
    decreased_us     bigint,
    PRIMARY KEY (account, endpoint, traffic_class)
);

-- Issue 14: the partial indexes of rows in flight, made so that no statement about one row can pick them over
-- seeking the row by its id. The old ones were keyed on lease_until (recovery's) and recheck_at (the sync
-- worker's) with the predicates status = 'processing' / status = 'accepted', which every fenced statement by id
-- implies (WHERE id = ? AND lease_gen = ? AND status = 'processing'): on statistics taken while few rows were in
-- flight the planner chose them, and the generic plan of a finish read every row in flight, filtering by id
-- (2,000 charges in flight: 2,000 rows read per finish). StatementPlansTest holds every statement by id to a seek.
--
-- In flight, by id: a statement about one processing row seeks it here or in the primary key, either way by id;
-- the scans over all of them (recovery, the gauges, the console) read just the rows in flight and order them
-- themselves (a few thousand at most, every few seconds).
CREATE INDEX IF NOT EXISTS stripe_intents_in_flight ON stripe_intents (id) WHERE status = 'processing';
DROP INDEX IF EXISTS stripe_intents_processing_lease;
CREATE INDEX IF NOT EXISTS stripe_refunds_in_flight ON stripe_refunds (id) WHERE status = 'processing';
DROP INDEX IF EXISTS stripe_refunds_processing_lease;

-- Accepted rows whose outcome is still followed (a settled one has no recheck_at): the sync worker's due ones by
-- recheck_at. A statement about one accepted row (status = 'accepted') no longer implies this predicate; and the
-- index holds only the rows still followed, not every accepted row ever answered.
CREATE INDEX IF NOT EXISTS stripe_intents_accepted_followed ON stripe_intents (recheck_at)
    WHERE status = 'accepted' AND recheck_at IS NOT NULL;
DROP INDEX IF EXISTS stripe_intents_accepted_recheck;
CREATE INDEX IF NOT EXISTS stripe_refunds_accepted_followed ON stripe_refunds (recheck_at)
    WHERE status = 'accepted' AND recheck_at IS NOT NULL;
DROP INDEX IF EXISTS stripe_refunds_accepted_recheck;
-- On a large table, create the four indexes first with CREATE INDEX CONCURRENTLY under the same names: this
-- migration then only drops the old ones.

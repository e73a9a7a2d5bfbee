-- Wait-then-replay (Prefer: wait=N): a request that finds its key in flight may wait for the key's row to move
-- instead of answering 409 at once. It marks the row `awaited`; from then on any move of the row (finished,
-- parked, its lease released or taken over) sends a NOTIFY on channel chargeonce_key_changed with the row's id,
-- delivered when the moving transaction commits, to one listening connection per instance, which wakes the
-- waiters in memory. Rows nobody waits for send nothing: the trigger's WHEN is false and no event is queued, so a
-- charge nobody waits on pays nothing for it (NOTIFY serialises committing transactions on a global queue lock).

ALTER TABLE stripe_intents ADD COLUMN awaited boolean NOT NULL DEFAULT false;
ALTER TABLE stripe_refunds ADD COLUMN awaited boolean NOT NULL DEFAULT false;

CREATE FUNCTION chargeonce_wake_waiters() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('chargeonce_key_changed', NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER stripe_intents_wake_waiters AFTER UPDATE ON stripe_intents FOR EACH ROW
    WHEN (OLD.awaited AND (NEW.status IS DISTINCT FROM OLD.status
                           OR NEW.lease_until IS DISTINCT FROM OLD.lease_until
                           OR NEW.needs_reconciliation IS DISTINCT FROM OLD.needs_reconciliation))
    EXECUTE FUNCTION chargeonce_wake_waiters();

CREATE TRIGGER stripe_refunds_wake_waiters AFTER UPDATE ON stripe_refunds FOR EACH ROW
    WHEN (OLD.awaited AND (NEW.status IS DISTINCT FROM OLD.status
                           OR NEW.lease_until IS DISTINCT FROM OLD.lease_until
                           OR NEW.needs_reconciliation IS DISTINCT FROM OLD.needs_reconciliation))
    EXECUTE FUNCTION chargeonce_wake_waiters();

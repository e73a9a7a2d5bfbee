-- Issue 14: the validated check of V1.8.1 lets SET NOT NULL skip its scan (a moment's exclusive lock); the check
-- itself then goes: NOT NULL costs a statement nothing, a CHECK is evaluated by every insert and update.
ALTER TABLE stripe_intents ALTER COLUMN stripe_identity SET NOT NULL;
ALTER TABLE stripe_intents DROP CONSTRAINT stripe_intents_identity_present;
ALTER TABLE stripe_refunds ALTER COLUMN stripe_identity SET NOT NULL;
ALTER TABLE stripe_refunds DROP CONSTRAINT stripe_refunds_identity_present;

-- Issue 14: V1.8.0's "every row carries an identity", checked over the existing rows. A transaction of its own (Flyway
-- runs each migration in one): VALIDATE CONSTRAINT scans the table under a lock that lets claims and finishes go on.
ALTER TABLE stripe_intents VALIDATE CONSTRAINT stripe_intents_identity_present;
ALTER TABLE stripe_refunds VALIDATE CONSTRAINT stripe_refunds_identity_present;

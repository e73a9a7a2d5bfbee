-- Which client a Stripe Customer belongs to (issue 13): a charge may name a customer only of its own client. The
-- owner is proven once, by the Customer's metadata at Stripe (chargeonce_client_id), and remembered here so that a
-- later charge asks the database, not Stripe. Every statement on it lives in dev.chargeonce.tenant.CustomerOwners.
CREATE TABLE customer_owners (
    customer_id  text        PRIMARY KEY,
    client_id    text        NOT NULL,
    proven_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Issue 14: vacuum the row tables in step with the traffic. A finish rewrites its row (an UPDATE of indexed columns
-- is never HOT), so every charge leaves one dead row version and one dead entry in each index it changed; PostgreSQL's
-- default waits for a fifth of the table to be dead before it vacuums (two million dead versions on a ten-million-row
-- table), and meanwhile the B-trees and the in-flight index grow with dead entries that scans step over. These
-- settings vacuum after 2% (and after 5% of new rows, which keeps the visibility map fresh for index-only scans), and
-- let each vacuum do ten times the default work per round, so that it keeps up with a thousand charges a second.
ALTER TABLE stripe_intents SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02,
                                autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_limit = 2000);
ALTER TABLE stripe_refunds SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02,
                                autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_limit = 2000);

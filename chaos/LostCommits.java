package chaos;

import static chaos.Chaos.opt;
import static chaos.Harness.seconds;
import static chaos.Harness.sleep;
import static chaos.Keys.keyColumn;
import static chaos.Keys.keyOf;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Lost commits: what a failover to an asynchronous standby, or a restore from a backup, does to the last commits.
 * The harness owns the database, so it deletes the rows itself; then the clients of those payments come back.
 */
final class LostCommits implements FaultSchedule.Family {

    private final Run run;

    LostCommits(Run run) {
        this.run = run;
    }

    @Override
    public Map<String, Integer> kinds() {
        return Map.of("lost_commit", 3);
    }

    @Override
    public boolean inject(String kind, SplittableRandom r) {
        return loseCommits(r);
    }

    /**
     * A failover to an asynchronous standby, or a restore, loses the last commits: 1-3 rows among the 20 most
     * recently finished ones disappear from the target's table (deleted in PostgreSQL, which the harness owns).
     * The clients go on: a client of each lost payment asks again, 0.2-3 s later or only after the lookup-skew
     * (and the final round asks every payment). The audit then expects the same PaymentIntent under the same
     * charge id, or a parked key (503 charge_under_reconciliation), never a second PaymentIntent.
     */
    private boolean loseCommits(SplittableRandom r) {
        int n = 1 + r.nextInt(3);
        // The naive control's table has no finished_at (its rows are finished when they are inserted) and no
        // Stripe attempt.
        String finishedAt = run.variant == Variant.CHARGEONCE ? "finished_at" : "created_at";
        String attempt = run.variant == Variant.CHARGEONCE ? "stripe_attempt" : "1";
        // One lost commit in three takes rows whose Stripe attempt had moved on (attempt 1 proven empty after a
        // stored 5xx, attempt 2 charged), when there are any: the new row sends attempt 1 again, Stripe replays
        // that 5xx for a key the row never sent, and the service must find the payment by its identity (or park
        // the row), never move on to a PaymentIntent of its own. The other lost rows get Stripe's replay.
        List<String> filters = run.variant == Variant.CHARGEONCE && r.nextInt(3) == 0
                ? List.of(" AND stripe_attempt > 1", "") : List.of("");
        // A charge that has refunds is not taken: its refunds' rows name it (a foreign key), and a lost commit
        // that took the charge would have taken its later refunds with it. Refund rows are never deleted: a lost
        // refund row without the charge's reservation (stripe_intents.amount_reserved, written by the same
        // claim) is not a state a failover can leave, and losing both is not modelled here.
        String noRefunds = run.variant == Variant.CHARGEONCE
                ? " AND NOT EXISTS (SELECT 1 FROM stripe_refunds r WHERE r.client_id = stripe_intents.client_id"
                  + " AND r.charge_id = stripe_intents.id)" : "";
        long started = System.currentTimeMillis();
        List<LostRow> deleted = new ArrayList<>();
        List<Payment> owners = new ArrayList<>();
        try (Connection c = Audit.connect(run.variant)) {
            // Counted before the DELETE: a row that finishes after the DELETE's snapshot and before a count taken
            // after it would make "deleted nothing although N finished rows exist" a false alarm (a CI run saw
            // it 2 s into the chaos, when the first burst of charges finished together). A finished row stays
            // finished, so what this count sees, the DELETE sees too (unless a refund claims it meanwhile).
            long finishedBefore;
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
                    "SELECT count(*) FROM stripe_intents WHERE status IN ('completed', 'failed') AND NOT needs_reconciliation"
                            + noRefunds)) {
                rs.next();
                finishedBefore = rs.getLong(1);
            }
            for (String filter : filters) {
                try (java.sql.PreparedStatement ps = c.prepareStatement(
                        // by (client_id, id), and the refunds joined by their client too: one form for plain
                        // PostgreSQL and Citus (scale/citus/run.sh), where the tables are distributed by client
                        "DELETE FROM stripe_intents WHERE (client_id, id) IN (SELECT client_id, id FROM (SELECT client_id, id FROM stripe_intents"
                                + " WHERE status IN ('completed', 'failed') AND NOT needs_reconciliation" + filter + noRefunds
                                + " ORDER BY " + finishedAt + " DESC LIMIT 20) recent ORDER BY random() LIMIT ?)"
                                + " RETURNING id, client_id, " + keyColumn(run.variant) + ", status, " + attempt)) {
                    ps.setInt(1, n);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            LostRow lost = new LostRow(rs.getString(1), rs.getString(4), rs.getInt(5), started);
                            Payment p = run.paymentsByKey.get(rs.getString(2) + "\n" + keyOf(run.variant, rs.getString(3)));
                            if (p == null) {
                                run.switchFailed("lost_commit deleted row " + lost.chargeId() + " of no payment of this run");
                                continue;
                            }
                            p.lostRows.add(lost);
                            deleted.add(lost);
                            owners.add(p);
                        }
                    }
                }
                if (!deleted.isEmpty()) {
                    break;
                }
            }
            if (deleted.isEmpty()) {
                if (finishedBefore > 0) {
                    run.switchFailed("lost_commit deleted nothing although " + finishedBefore + " finished rows existed before it");
                }
                return false; // nothing finished yet: try again later
            }
        } catch (SQLException e) {
            if ("23503".equals(e.getSQLState())) {
                // A refund was claimed on a chosen charge between the DELETE's look and its delete: nothing was
                // deleted (one statement); the lost commit is dealt again later.
                run.faults.event("lost_commit not now: a refund was just claimed on a chosen charge (" + e.getMessage() + ")");
                return false;
            }
            run.switchFailed("lost_commit: the DELETE failed: " + e.getMessage());
            return true; // counted as a failure, not retried
        }
        run.faults.note("lost_commit", deleted.size() + " rows: " + deleted);
        run.faults.count("lost_rows", deleted.size());
        run.faults.count("lost_rows_attempt_moved_on", (int) deleted.stream().filter(l -> l.stripeAttempt() > 1).count());
        // Half of the lost payments are asked again at once (0.2-3 s), half only after the lookup-skew has passed
        // (2-10 s more), as a client coming back later: then the PaymentIntent is older than any window the new
        // row's own sends open, and only Stripe's replay or a search by identity can find it.
        long skewMillis = seconds(opt("lookup-skew", "10s")) * 1000;
        for (Payment p : owners) {
            SplittableRandom pr = r.split();
            long wait = pr.nextBoolean() ? 200 + pr.nextInt(2_800) : skewMillis + 2_000 + pr.nextInt(8_000);
            run.background.submit(() -> {
                sleep(wait);
                run.clients.askAgain(p, pr, run.endAt);
            });
        }
        return true;
    }
}

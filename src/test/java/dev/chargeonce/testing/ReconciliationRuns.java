package dev.chargeonce.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.function.Predicate;

/** A process test's view of reconciliation's runs and findings, read from the database the test created. */
public final class ReconciliationRuns {

    /** A run as it stands: its status, the pages it has checkpointed, the Stripe 429s it waited out. */
    public record Run(String status, int pages, int rateLimited) {

        public boolean over() {
            return !status.equals("running") && !status.equals("queued");
        }
    }

    private final ProcessEnvironment env;

    public ReconciliationRuns(ProcessEnvironment env) {
        this.env = env;
    }

    public Run run(long id) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT status, pages, rate_limited FROM reconciliation_runs WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next(), "no reconciliation run " + id);
                return new Run(rs.getString(1), rs.getInt(2), rs.getInt(3));
            }
        }
    }

    /** The run once {@code condition} holds; the test fails when it does not within {@code timeout}. */
    public Run await(long id, Predicate<Run> condition, Duration timeout, String what) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        Run run = run(id);
        while (!condition.test(run)) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what + ": " + run);
            Thread.sleep(100);
            run = run(id);
        }
        return run;
    }

    /** The run once {@code condition} holds, or as it stands after {@code timeout} (the caller says what is wrong). */
    public Run awaitOrAsItStands(long id, Predicate<Run> condition, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        Run run = run(id);
        while (!condition.test(run) && System.nanoTime() < deadline) {
            Thread.sleep(100);
            run = run(id);
        }
        return run;
    }

    /** How many findings of {@code kind} reconciliation recorded. */
    public long findings(String kind) throws Exception {
        try (Connection c = env.connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM reconciliation_findings WHERE kind = ?")) {
            ps.setString(1, kind);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}

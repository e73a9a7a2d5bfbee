package dev.chargeonce.recovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;

@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class RetentionJobTest {

    @Inject
    RetentionJob retention;

    @Inject
    AgroalDataSource primary;

    @Test
    void aRetentionShorterThanStripesWindowPlusTheLeaseIsRefused() {
        assertThrows(IllegalStateException.class, () -> RetentionJob.validate(Duration.ofHours(24), Duration.ofSeconds(30)));
        assertThrows(IllegalStateException.class, () -> RetentionJob.validate(Duration.ofHours(1), Duration.ofSeconds(30)));
        RetentionJob.validate(Duration.ofHours(24).plusSeconds(30), Duration.ofSeconds(30));
        RetentionJob.validate(Duration.ofDays(7), Duration.ofSeconds(30));
    }

    @Test
    void deletesOnlyFinishedRowsOlderThanTheRetention() throws Exception {
        String prefix = "ret-" + UUID.randomUUID();
        insert(prefix + "-old-completed", "completed", "8 days");
        insert(prefix + "-old-failed", "failed", "8 days");
        insert(prefix + "-young-completed", "completed", "6 days");
        insert(prefix + "-old-processing", "processing", "30 days");

        retention.pass();

        assertEquals(0, count(prefix + "-old-completed"));
        assertEquals(0, count(prefix + "-old-failed"));
        assertEquals(1, count(prefix + "-young-completed"), "inside the retention: still replayed");
        assertEquals(1, count(prefix + "-old-processing"), "never delete an unfinished charge, whatever its age");
    }

    private void insert(String key, String status, String age) throws Exception {
        boolean finished = !"processing".equals(status);
        try (Connection c = primary.getConnection(); PreparedStatement ps = c.prepareStatement("""
                INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                    lease_until, response_status, response_body, finished_at, created_at)
                VALUES (?, 'retention-test', ?, 'f', '{}', 100, 'usd', ?, ?, ?, ?, ?, now() - ?::interval)""")) {
            ps.setString(1, "chg_" + UUID.randomUUID().toString().replace("-", "").substring(0, 24));
            ps.setString(2, key);
            ps.setString(3, status);
            ps.setObject(4, finished ? null : java.sql.Timestamp.from(java.time.Instant.now().plusSeconds(3600)));
            ps.setObject(5, finished ? 201 : null);
            ps.setString(6, finished ? "{}" : null);
            ps.setObject(7, finished ? java.sql.Timestamp.from(java.time.Instant.now().minus(parseDays(age))) : null);
            ps.setString(8, age);
            ps.executeUpdate();
        }
    }

    private static Duration parseDays(String age) {
        return Duration.ofDays(Long.parseLong(age.split(" ")[0]));
    }

    private long count(String key) throws Exception {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM stripe_intents WHERE idempotency_key = ?")) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}

package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.DedicatedDatabase;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

/**
 * Every statement that writes or reads one row by its id seeks it by that id (an index condition), whatever the
 * statistics say. The partial indexes of in-flight rows (recovery's, the sync worker's) are tiny when the statistics were taken
 * on a quiet table, and a statement whose conditions imply their predicate ({@code status = 'processing'}) was
 * planned as a scan of the whole partial index filtered by id: one finish reading every row in flight, which made a
 * charge cost more the more charges were in flight (2,000 in flight: 2,000 rows read per finish). Checked on the
 * generic plan (the one a prepared statement keeps), after {@code ANALYZE} of a table of finished rows only. The
 * operators' search ({@link OperatorRows#searchStatements}) is held to an index too: none of its lookups reads the
 * whole table.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class StatementPlansTest {

    /** {@code id = ?} as a condition of its own: the row the statement is about. */
    private static final Pattern BY_ID = Pattern.compile("(?<![_.a-z])(x\\.)?id = \\?");

    @Inject
    AgroalDataSource primary;

    @Inject
    Flyway flyway;

    @Test
    void statementsOfOneRowSeekItByItsIdWhateverTheStatistics() throws Exception {
        List<String> wrong = new ArrayList<>();
        int checked = 0;
        try (DedicatedDatabase database = DedicatedDatabase.create(primary, flyway);
             Connection c = database.dataSource.getConnection(); Statement s = c.createStatement()) {
            // Charges and refunds claimed, then finished (each row's in-flight version leaves the partial indexes
            // once vacuumed), then vacuumed and analyzed: the statistics of a quiet table after a busy hour.
            s.execute("""
                    INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                                lease_until, stripe_identity)
                    SELECT 'chg_' || lpad(n::text, 24, '0'), 'plans', NULL, 'f', '{}', 1000, 'usd', 'processing',
                           now() + interval '30 seconds', md5(n::text)
                      FROM generate_series(1, 100000) n""");
            s.execute("""
                    UPDATE stripe_intents SET status = 'completed', response_status = 201, response_body = '{}', finished_at = now(),
                                              lease_until = NULL, payment_intent_id = 'pi_' || id, charge_status = 'succeeded',
                                              amount_reserved = 1
                     WHERE client_id = 'plans'""");
            s.execute("""
                    INSERT INTO stripe_refunds (id, charge_id, client_id, idempotency_key, fingerprint, request, amount, currency,
                                                status, lease_until, stripe_identity)
                    SELECT 'rfd_' || lpad(n::text, 24, '0'), 'chg_' || lpad(n::text, 24, '0'), 'plans', NULL, 'f', '{}', 1,
                           'usd', 'processing', now() + interval '30 seconds', md5('r' || n)
                      FROM generate_series(1, 100000) n""");
            s.execute("""
                    UPDATE stripe_refunds SET status = 'completed', response_status = 201, response_body = '{}', finished_at = now(),
                                              lease_until = NULL, stripe_refund_id = 're_' || id, refund_status = 'succeeded'
                     WHERE client_id = 'plans'""");
            // charges that name a customer, for the operators' search by customer
            s.execute("""
                    INSERT INTO stripe_intents (id, client_id, idempotency_key, fingerprint, request, amount, currency, status,
                                                lease_until, stripe_identity, finished_at, response_status, response_body)
                    SELECT 'chg_c' || lpad(n::text, 23, '0'), 'plans', NULL, 'f',
                           '{"amount":1000,"currency":"usd","customer":"cus_' || (n % 500) || '","payment_method":"pm_card_visa"}',
                           1000, 'usd', 'completed', NULL, md5('c' || n), now(), 201, '{}'
                      FROM generate_series(1, 5000) n""");
            s.execute("VACUUM ANALYZE stripe_intents");
            s.execute("VACUUM ANALYZE stripe_refunds");
            s.execute("SET plan_cache_mode = force_generic_plan");
            for (Operation op : Operation.values()) {
                for (Map.Entry<String, String> statement : StatementCatalog.protocolStatements(op).entrySet()) {
                    String sql = statement.getValue();
                    if (!BY_ID.matcher(sql).find()) {
                        continue;
                    }
                    JsonNode plan = genericPlan(s, numbered(sql));
                    checked++;
                    List<String> scans = new ArrayList<>();
                    scansWithoutTheId(plan.get(0).get("Plan"), op.table(), scans);
                    if (!scans.isEmpty()) {
                        wrong.add(op + " " + statement.getKey() + " reads " + op.table() + " without its id: " + scans
                                + "\n" + plan.toPrettyString());
                    }
                }
            }
            // The operators' search: each lookup is served by an index, never by reading the whole table.
            for (Map.Entry<String, String> statement : OperatorRows.searchStatements().entrySet()) {
                String table = statement.getValue().contains("stripe_refunds") ? "stripe_refunds" : "stripe_intents";
                JsonNode plan = genericPlan(s, numbered(statement.getValue()));
                List<String> scans = new ArrayList<>();
                scansWithoutAnIndex(plan.get(0).get("Plan"), table, scans);
                if (!scans.isEmpty()) {
                    wrong.add("search " + statement.getKey() + " reads " + table + " without an index: " + scans
                            + "\n" + plan.toPrettyString());
                }
            }
        }
        assertTrue(checked >= 20, "the statements by id were found (" + checked + ")");
        assertTrue(wrong.isEmpty(), String.join("\n\n", wrong));
    }

    /** The generic plan of a statement (JSON), prepared with its parameters' types left to PostgreSQL. */
    private static JsonNode genericPlan(Statement s, String sql) throws Exception {
        s.execute("DEALLOCATE ALL");
        s.execute("PREPARE checked AS " + sql);
        int parameters = 0;
        Matcher m = Pattern.compile("\\$(\\d+)").matcher(sql);
        while (m.find()) {
            parameters = Math.max(parameters, Integer.parseInt(m.group(1)));
        }
        try (ResultSet rs = s.executeQuery("EXPLAIN (FORMAT JSON) EXECUTE checked" + (parameters == 0 ? ""
                : "(" + String.join(", ", java.util.Collections.nCopies(parameters, "NULL")) + ")"))) {
            rs.next();
            return new ObjectMapper().readTree(rs.getString(1));
        }
    }

    /**
     * The scans of {@code table} in a plan that do not find their rows by an index condition on {@code id} (a
     * sequential scan, or an index scan that filters the id instead of seeking it).
     */
    private static void scansWithoutTheId(JsonNode node, String table, List<String> found) {
        // (an UPDATE's ModifyTable node names the table it writes; the scan below it is the one that finds the row)
        if (table.equals(node.path("Relation Name").asText()) && !node.path("Node Type").asText().equals("ModifyTable")) {
            String type = node.path("Node Type").asText();
            String seek = node.path("Index Cond").asText("") + node.path("Recheck Cond").asText("");
            if (!seek.matches(".*\\bid = .*")) {
                found.add(type + (node.has("Index Name") ? " using " + node.get("Index Name").asText() : "")
                        + (node.has("Filter") ? " filtering " + node.get("Filter").asText() : ""));
            }
        }
        for (JsonNode child : node.path("Plans")) {
            scansWithoutTheId(child, table, found);
        }
    }

    /** The scans of {@code table} in a plan that read it without an index (a sequential scan). */
    private static void scansWithoutAnIndex(JsonNode node, String table, List<String> found) {
        if (table.equals(node.path("Relation Name").asText()) && node.path("Node Type").asText().equals("Seq Scan")) {
            found.add("Seq Scan" + (node.has("Filter") ? " filtering " + node.get("Filter").asText() : ""));
        }
        for (JsonNode child : node.path("Plans")) {
            scansWithoutAnIndex(child, table, found);
        }
    }

    /** JDBC's {@code ?} as {@code $1, $2, ...}. */
    private static String numbered(String sql) {
        StringBuilder out = new StringBuilder();
        int n = 0;
        for (char ch : sql.toCharArray()) {
            out.append(ch == '?' ? "$" + (++n) : String.valueOf(ch));
        }
        return out.toString();
    }
}

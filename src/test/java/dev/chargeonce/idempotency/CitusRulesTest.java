package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * What Citus needs of a statement on a table distributed by {@code client_id} ({@code scale/citus/probe.sh} shows
 * Citus refusing the statements that break them), held as a rule on the statements on {@code stripe_intents},
 * {@code stripe_refunds} and {@code outside_refunds} that the store's classes ({@link #STORE}), the Kafka outbox and the consumed offsets hold in
 * constants and catalogs (SQL built inline in a method is not read), so that the plain-PostgreSQL suite keeps the
 * Citus path honest:
 * <ul>
 *   <li>{@link Rule#ONE_SHARD}: the statement names the row's {@code client_id} (a predicate, or the inserted
 *       column), so that Citus routes it to one shard instead of every one;</li>
 *   <li>{@link Rule#NO_VOLATILE_IN_WRITE}: no volatile function ({@code clock_timestamp()}, {@code random()}, ...)
 *       in an {@code UPDATE} or {@code DELETE}: Citus refuses it, even on one shard;</li>
 *   <li>{@link Rule#IMMUTABLE_RETURNING}: nothing but immutable functions in {@code RETURNING} (no clock at all);</li>
 *   <li>{@link Rule#NO_CROSS_CLIENT_LOCK}: {@code FOR UPDATE [SKIP LOCKED]} only in a statement restricted to one
 *       {@code client_id}: Citus refuses row locks across shards;</li>
 *   <li>{@link Rule#ONE_CLOCK}: every time a statement reads or writes is {@code statement_timestamp()}, the one
 *       clock of leases (the coordinator's on Citus, which evaluates it before routing a write; the primary's on
 *       PostgreSQL): no {@code clock_timestamp()}, and no {@code now()}, which is the transaction's start in a
 *       transaction of several statements.</li>
 *   <li>{@link Rule#NO_CLOCK_IN_CONDITIONAL}: no clock inside a {@code CASE} or {@code coalesce(...)} of an
 *       {@code UPDATE} or {@code DELETE}: Citus evaluates the clock on the coordinator only outside them ("non-IMMUTABLE
 *       functions are not allowed in CASE or COALESCE statements"; found by the process tests on Citus).</li>
 *   <li>{@link Rule#NO_SIMPLE_CASE_ON_PARAMETER}: no {@code CASE ? WHEN ...} in an {@code UPDATE} or {@code DELETE}:
 *       Citus rewrites it wrongly ("operator does not exist: text = boolean" on the worker; WebhooksIT on Citus);
 *       the searched form, {@code CASE WHEN ? = ... THEN}, runs.</li>
 * </ul>
 * Every statement keeps them (the list of known breaks this test started with, 77 breaks on 42 statements, is
 * empty); a new statement, or one changed for the worse, fails the test. The only exceptions are
 * {@link #CROSS_CLIENT_SCANS}, reads over every client by design that must decide nothing.
 */
class CitusRulesTest {

    enum Rule { ONE_SHARD, NO_VOLATILE_IN_WRITE, IMMUTABLE_RETURNING, NO_CROSS_CLIENT_LOCK, ONE_CLOCK, NO_CLOCK_IN_CONDITIONAL, NO_SIMPLE_CASE_ON_PARAMETER }

    private static final Pattern DISTRIBUTED = Pattern.compile("\\b(stripe_intents|stripe_refunds|outside_refunds|\\{t\\})\\b");
    private static final Pattern TEMPLATE = Pattern.compile("\\{[a-z_]+}");
    /** The client bound as a parameter: a value Citus can route by when it plans the statement. */
    private static final Pattern CLIENT_PREDICATE = Pattern.compile("(?<![\\w.])(\\w+\\.)?client_id\\s*=\\s*\\?", Pattern.CASE_INSENSITIVE);
    private static final Pattern OR = Pattern.compile("\\bOR\\b", Pattern.CASE_INSENSITIVE);
    private static final Pattern SUBQUERY = Pattern.compile("\\(\\s*(SELECT|WITH)\\b", Pattern.CASE_INSENSITIVE);
    private static final Pattern TABLE_REFERENCE = Pattern.compile("\\b(FROM|JOIN|UPDATE|INTO)\\s+(stripe_intents|stripe_refunds|outside_refunds|\\{t\\})\\b",
            Pattern.CASE_INSENSITIVE);
    private static final Pattern INSERTS_CLIENT = Pattern.compile("^INTO\\s+\\S+(\\s+AS\\s+\\w+)?\\s*\\([^)]*\\bclient_id\\b",
            Pattern.CASE_INSENSITIVE);
    private static final Pattern WRITE = Pattern.compile("\\b(UPDATE|DELETE)\\b", Pattern.CASE_INSENSITIVE);
    private static final Pattern VOLATILE = Pattern.compile("\\b(clock_timestamp|random|nextval|gen_random_uuid|timeofday)\\s*\\(",
            Pattern.CASE_INSENSITIVE);
    private static final Pattern CLOCK = Pattern.compile(
            "\\b(clock_timestamp|now|statement_timestamp|transaction_timestamp|timeofday)\\s*\\(|\\b(current_timestamp|localtimestamp)\\b",
            Pattern.CASE_INSENSITIVE);
    private static final Pattern RETURNING = Pattern.compile("\\bRETURNING\\b", Pattern.CASE_INSENSITIVE);
    /** A {@code coalesce(} (group 1) or a {@code CASE}: what follows is conditional, evaluated on the worker. */
    private static final Pattern CONDITIONAL = Pattern.compile("\\b(coalesce)\\s*\\(|\\bCASE\\b", Pattern.CASE_INSENSITIVE);
    private static final Pattern SIMPLE_CASE_ON_PARAMETER = Pattern.compile("\\bCASE\\s+\\(?\\s*\\?", Pattern.CASE_INSENSITIVE);
    private static final Pattern ROW_LOCK = Pattern.compile("\\bFOR\\s+(UPDATE|NO\\s+KEY\\s+UPDATE|SHARE)\\b", Pattern.CASE_INSENSITIVE);

    /** What a statement breaks, by the rules above (a textual reading of the SQL: see each rule's pattern). */
    static Set<Rule> broken(String sql) {
        Set<Rule> broken = EnumSet.noneOf(Rule.class);
        // Each reference to a distributed table (after FROM, JOIN, UPDATE or INTO) up to the end of the (sub)query
        // that holds it: that part must name the client (a predicate, or the inserted column), and lock rows only then.
        var reference = TABLE_REFERENCE.matcher(sql);
        while (reference.find()) {
            // its own text: a subquery's client is another table's (or another row's); and its top level, outside any
            // parenthesis: there the client must be ANDed with the rest (an OR beside it may leave it out), while an OR
            // inside a parenthesis ANDed with it, "client_id = ? AND (a OR b)", keeps the statement on one shard
            String part = withoutSubqueries(enclosing(sql, reference.start()));
            String top = topLevel(part);
            boolean oneClient = CLIENT_PREDICATE.matcher(top).find() && !OR.matcher(top).find()
                    || reference.group(1).equalsIgnoreCase("INTO") && INSERTS_CLIENT.matcher(part).find();
            if (!oneClient) {
                broken.add(Rule.ONE_SHARD);
                if (ROW_LOCK.matcher(part).find()) {
                    broken.add(Rule.NO_CROSS_CLIENT_LOCK);
                }
            }
        }
        if (WRITE.matcher(sql).find() && VOLATILE.matcher(sql).find()) {
            broken.add(Rule.NO_VOLATILE_IN_WRITE);
        }
        if (WRITE.matcher(sql).find() && SIMPLE_CASE_ON_PARAMETER.matcher(sql).find()) {
            broken.add(Rule.NO_SIMPLE_CASE_ON_PARAMETER);
        }
        if (WRITE.matcher(sql).find()) {
            var conditional = CONDITIONAL.matcher(sql);
            while (conditional.find()) {
                String inside = conditional.group(1) != null ? enclosing(sql, conditional.end()) : caseBody(sql, conditional.end());
                if (CLOCK.matcher(inside).find()) {
                    broken.add(Rule.NO_CLOCK_IN_CONDITIONAL);
                }
            }
        }
        var clock = CLOCK.matcher(sql);
        while (clock.find()) {
            if (!clock.group().toLowerCase(java.util.Locale.ROOT).startsWith("statement_timestamp")) {
                broken.add(Rule.ONE_CLOCK);
            }
        }
        var returning = RETURNING.matcher(sql);
        while (returning.find()) {
            if (CLOCK.matcher(enclosing(sql, returning.start())).find()) {
                broken.add(Rule.IMMUTABLE_RETURNING);
            }
        }
        return broken;
    }

    /** From {@code from} to the {@code END} of the {@code CASE} it is in (nested ones counted). */
    private static String caseBody(String sql, int from) {
        var words = Pattern.compile("\\b(CASE|END)\\b", Pattern.CASE_INSENSITIVE).matcher(sql);
        int depth = 0;
        int i = from;
        while (words.find(i)) {
            if (words.group(1).equalsIgnoreCase("CASE")) {
                depth++;
            } else if (depth-- == 0) {
                return sql.substring(from, words.start());
            }
            i = words.end();
        }
        return sql.substring(from);
    }

    /** The text with every parenthesized subquery in it cut out (each becomes {@code ()}). */
    private static String withoutSubqueries(String sql) {
        StringBuilder out = new StringBuilder();
        int i = 0;
        var subquery = SUBQUERY.matcher(sql);
        while (subquery.find(i)) {
            out.append(sql, i, subquery.start()).append("()");
            i = subquery.start() + 1 + enclosing(sql, subquery.start() + 1).length() + 1;
            if (i > sql.length()) {
                return out.toString();
            }
        }
        return out.append(sql.substring(i)).toString();
    }

    /** The text outside every parenthesis (each group becomes {@code ()}). */
    private static String topLevel(String sql) {
        StringBuilder out = new StringBuilder();
        int depth = 0;
        for (int i = 0; i < sql.length(); i++) {
            char c = sql.charAt(i);
            if (c == '(') {
                if (depth++ == 0) {
                    out.append('(');
                }
            } else if (c == ')' && depth > 0) {
                if (--depth == 0) {
                    out.append(')');
                }
            } else if (depth == 0) {
                out.append(c);
            }
        }
        return out.toString();
    }

    /** From {@code from} to the end of the parenthesis (or the statement) it is in. */
    private static String enclosing(String sql, int from) {
        int depth = 0;
        for (int i = from; i < sql.length(); i++) {
            char c = sql.charAt(i);
            if (c == '(') {
                depth++;
            } else if (c == ')' && depth-- == 0) {
                return sql.substring(from, i);
            }
        }
        return sql.substring(from);
    }


    /**
     * Reads over every client by design, which Citus runs on every shard: the background workers' candidate scans
     * (each candidate is then handled by a fenced single-shard statement, which decides), the operators' gauges,
     * reconciliation's and the console's reads (a row named by its id alone, or the charges of a Stripe customer: each
     * row's client is read with it, and what the operator then does to it names that client), the start-up check of
     * the key-hash versions, and the charge of a refund made outside the service (it names no client; the charge is
     * then locked among its client's rows).
     * They may not name a client, and must not lock or write anything.
     */
    private static final Set<String> CROSS_CLIENT_SCANS = Set.of(
            "CHARGE.expiredCandidates", "REFUND.expiredCandidates", "CHARGE.dueAcceptedCandidates",
            "REFUND.dueAcceptedCandidates", "CHARGE.finishedCandidates", "REFUND.finishedCandidates",
            "CHARGE.countAttention", "REFUND.countAttention", "CHARGE.objectClient", "REFUND.objectClient",
            "VIEW_BY_ID.CHARGE", "VIEW_BY_ID.REFUND", "ATTENTION_ROWS.CHARGE", "ATTENTION_ROWS.REFUND",
            "VIEWS_OF.CHARGE", "VIEWS_OF.REFUND", "FINISHED_BETWEEN.CHARGE", "FINISHED_BETWEEN.REFUND",
            "ANY_UNKEYED_IDENTITY.CHARGE", "ANY_UNKEYED_IDENTITY.REFUND", "FIRST_IDENTITY_FROM.CHARGE",
            "FIRST_IDENTITY_FROM.REFUND", "CHARGES_OF_CUSTOMER", "CHARGE_OF_PAYMENT_INTENT");

    /** SQL on the two tables in code: a string literal naming one, or a table's name joined into a string. */
    private static final Pattern TABLE_IN_CODE = Pattern.compile(
            "\"[^\"]*\\b(stripe_intents|stripe_refunds|outside_refunds)\\b|\\+\\s*\\w+\\.table\\(\\)|\\.table\\(\\)\\s*\\+");
    private static final Pattern FIELD_START = Pattern.compile("^\\s*(private |public |protected )?static final .*=.*");

    /**
     * The rule reads the statements the classes hold in static fields (constants, per-operation maps, the
     * protocol's templates): a statement on the two tables written inside a method would escape it, so there is
     * none. Text outside a static field's initializer that names a table in a string, or joins a table's name into
     * one, fails this test.
     */
    @Test
    void noStatementOnTheDistributedTablesIsWrittenInsideAMethod() throws java.io.IOException {
        List<String> problems = new ArrayList<>();
        for (Class<?> holder : holders()) {
            java.nio.file.Path source = java.nio.file.Path.of("src/main/java", holder.getName().replace('.', '/') + ".java");
            List<String> lines = java.nio.file.Files.readAllLines(source);
            boolean inField = false;
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i);
                String code = line.strip();
                if (!inField && FIELD_START.matcher(line).matches()) {
                    inField = true;
                }
                if (inField) {
                    inField = !code.endsWith(";");
                    continue;
                }
                if (code.startsWith("*") || code.startsWith("//") || code.startsWith("/*")) {
                    continue;
                }
                if (TABLE_IN_CODE.matcher(line).find()) {
                    problems.add(source + ":" + (i + 1) + ": " + code);
                }
            }
        }
        assertTrue(problems.isEmpty(), "SQL on the distributed tables written inside a method (CitusRulesTest does not"
                + " read it: hold it in a static field):\n  " + String.join("\n  ", problems));
    }

    @Test
    void theRulesReadWhatCitusRefuses() {
        // refused by Citus 13.2 (scale/citus/probe.sh): a volatile function in an UPDATE, a clock in RETURNING
        assertEquals(EnumSet.of(Rule.NO_VOLATILE_IN_WRITE, Rule.ONE_CLOCK), broken(
                "UPDATE stripe_intents SET updated_at = clock_timestamp() WHERE client_id = ? AND id = ?"));
        assertEquals(EnumSet.of(Rule.IMMUTABLE_RETURNING, Rule.ONE_CLOCK), broken(
                "UPDATE stripe_intents x SET updated_at = now() WHERE client_id = ? AND id = ? RETURNING x.lease_until - now()"));
        assertEquals(EnumSet.of(Rule.ONE_SHARD, Rule.NO_CROSS_CLIENT_LOCK), broken(
                "SELECT id FROM stripe_intents WHERE status = 'processing' LIMIT 10 FOR UPDATE SKIP LOCKED"));
        assertEquals(EnumSet.of(Rule.ONE_SHARD), broken("UPDATE stripe_intents SET updated_at = statement_timestamp() WHERE id = ?"));
        // run by Citus on one shard (the probe's forms): nothing broken
        assertEquals(EnumSet.noneOf(Rule.class), broken(
                "UPDATE stripe_intents x SET lease_until = statement_timestamp() + ? * interval '1 millisecond'"
                        + " WHERE client_id = ? AND id = ? AND lease_until > statement_timestamp() RETURNING x.lease_gen"));
        assertEquals(EnumSet.noneOf(Rule.class), broken(
                "INSERT INTO stripe_intents AS si (id, client_id, status) VALUES (?, ?, 'processing') ON CONFLICT DO NOTHING RETURNING si.lease_gen"));
        assertEquals(EnumSet.noneOf(Rule.class), broken(
                "SELECT status FROM stripe_intents WHERE id = ? AND client_id = ? FOR UPDATE"));
        // each part about a distributed table names the client: another table's client_id does not route this one
        assertEquals(EnumSet.of(Rule.ONE_SHARD), broken("WITH done AS (UPDATE stripe_intents SET status = ? WHERE id = ? RETURNING id,"
                + " client_id) INSERT INTO kafka_outbox (charge_id, client_id) SELECT id, client_id FROM done"));
        assertEquals(EnumSet.of(Rule.ONE_SHARD), broken("SELECT id, (SELECT sum(r.amount) FROM stripe_refunds r WHERE r.charge_id ="
                + " stripe_intents.id) FROM stripe_intents WHERE id = ? AND client_id = ?"));
        // an OR, another table's client in a subquery, a client not bound as a parameter: not one shard
        assertEquals(EnumSet.of(Rule.ONE_SHARD), broken("UPDATE stripe_intents SET status = ? WHERE client_id = ? OR id = ?"));
        assertEquals(EnumSet.of(Rule.ONE_SHARD), broken("UPDATE stripe_intents SET status = ? WHERE (client_id = ? AND id = ?) OR id = ?"));
        assertEquals(EnumSet.of(Rule.ONE_SHARD), broken("SELECT id FROM stripe_intents WHERE (client_id = ? AND id = ?)"));
        // an OR inside a parenthesis ANDed with the client: one shard
        assertEquals(EnumSet.noneOf(Rule.class), broken(
                "SELECT id FROM stripe_intents WHERE client_id = ? AND (payment_intent_id = ? OR stripe_identity = ?) FOR UPDATE"));
        assertEquals(EnumSet.of(Rule.ONE_SHARD), broken("UPDATE stripe_intents SET status = ? WHERE id = ?"
                + " AND EXISTS (SELECT 1 FROM stripe_refunds r WHERE r.client_id = ?)"));
        assertEquals(EnumSet.of(Rule.ONE_SHARD), broken("UPDATE stripe_intents c SET amount_reserved = 0 FROM done d"
                + " WHERE c.client_id = d.client_id AND c.id = d.charge_id"));
        assertEquals(EnumSet.of(Rule.ONE_SHARD), broken("SELECT 1 FROM stripe_intents WHERE x_client_id = ? AND id = ?"));
        // refused by Citus 13.2 (ChargeSequencesIT on Citus): a clock inside a CASE or a coalesce of an UPDATE; outside it, fine
        assertEquals(EnumSet.of(Rule.NO_CLOCK_IN_CONDITIONAL), broken("UPDATE stripe_intents SET stripe_key_last_sent = CASE WHEN"
                + " ?::bigint IS NULL THEN stripe_key_last_sent ELSE statement_timestamp() END WHERE client_id = ? AND id = ?"));
        assertEquals(EnumSet.of(Rule.NO_CLOCK_IN_CONDITIONAL), broken("UPDATE stripe_intents SET lease_until ="
                + " coalesce(?, statement_timestamp()) WHERE client_id = ? AND id = ?"));
        assertEquals(EnumSet.noneOf(Rule.class), broken("UPDATE stripe_intents SET stripe_key_last_sent = greatest(stripe_key_last_sent,"
                + " statement_timestamp() - ?::bigint * interval '1 millisecond'), x = CASE WHEN ? THEN 1 ELSE 0 END"
                + " WHERE client_id = ? AND id = ? AND coalesce(recheck_at, 'infinity') <= statement_timestamp()"));
        // refused by Citus 13.2 (WebhooksIT on Citus): a simple CASE on a parameter in an UPDATE; the searched form runs
        assertEquals(EnumSet.of(Rule.NO_SIMPLE_CASE_ON_PARAMETER), broken("UPDATE stripe_intents SET s = ? WHERE client_id = ? AND id = ?"
                + " AND (CASE s WHEN 'a' THEN 1 ELSE 0 END) < (CASE ?::text WHEN 'b' THEN 2 ELSE 0 END)"));
        assertEquals(EnumSet.noneOf(Rule.class), broken("UPDATE stripe_intents SET s = ? WHERE client_id = ? AND id = ?"
                + " AND (CASE WHEN s = 'a' THEN 1 ELSE 0 END) < (CASE WHEN ?::text = 'b' THEN 2 ELSE 0 END)"));
        // one clock: the statement's; a read by now() (a transaction's start) or clock_timestamp() is another one
        assertEquals(EnumSet.of(Rule.ONE_CLOCK), broken("SELECT lease_until > now() FROM stripe_intents WHERE client_id = ? AND id = ?"));
        assertEquals(EnumSet.of(Rule.ONE_CLOCK), broken("SELECT 1 FROM stripe_refunds WHERE client_id = ? AND created_at < CURRENT_TIMESTAMP"));
        assertEquals(EnumSet.noneOf(Rule.class), broken(
                "SELECT lease_until > statement_timestamp() FROM stripe_intents WHERE client_id = ? AND id = ?"));
        // a clock in a CTE's RETURNING is found; the select list after the CTE is not RETURNING's
        assertEquals(EnumSet.of(Rule.IMMUTABLE_RETURNING, Rule.ONE_CLOCK), broken(
                "WITH i AS (INSERT INTO stripe_intents (id, client_id) VALUES (?, ?) RETURNING clock_timestamp() AS t) SELECT now(), i.t FROM i"));
    }

    @Test
    void everyStatementOnTheDistributedTablesKeepsTheRules() {
        Map<String, String> statements = statements();
        assertTrue(statements.size() > 30, "the statements were found: " + statements.keySet());
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, String> statement : statements.entrySet()) {
            Set<Rule> broken = broken(statement.getValue());
            if (CROSS_CLIENT_SCANS.contains(statement.getKey())) {
                // a read over every shard on purpose; it must decide nothing: no lock, no write
                if (ROW_LOCK.matcher(statement.getValue()).find() || WRITE.matcher(statement.getValue()).find()
                        || !statement.getValue().strip().toUpperCase(java.util.Locale.ROOT).startsWith("SELECT")) {
                    problems.add(statement.getKey() + " reads over every client, so it must be a plain SELECT without a"
                            + " row lock: " + statement.getValue().replaceAll("\\s+", " "));
                }
                broken.remove(Rule.ONE_SHARD);
            }
            for (Rule rule : broken) {
                problems.add(statement.getKey() + " breaks " + rule + " (Citus would refuse it or fan it out): "
                        + statement.getValue().replaceAll("\\s+", " "));
            }
        }
        for (String name : CROSS_CLIENT_SCANS) {
            if (!statements.containsKey(name)) {
                problems.add(name + " is listed in CitusRulesTest.CROSS_CLIENT_SCANS but the store has no such statement");
            }
        }
        if (!problems.isEmpty()) {
            fail(problems.size() + " rule problems:\n  " + String.join("\n  ", problems));
        }
    }

    /**
     * The classes that hold the store's statements on the two tables, by what they do: the catalog of the protocol's
     * statements and each class that runs statements of its own. A statement's name is its field's (a per-operation
     * map's: field and operation), as before the store was split by what it does, so that {@link #CROSS_CLIENT_SCANS}
     * names the same statements.
     */
    static final List<Class<?>> STORE = List.of(StatementCatalog.class, Claims.class, RefundReservations.class,
            Finishes.class, Reads.class, CommandResults.class, OperatorRows.class, Upkeep.class, OutsideRefundRows.class);

    /** The store's classes, and the outbox and offsets beside it. */
    private static List<Class<?>> holders() {
        List<Class<?>> holders = new ArrayList<>(STORE);
        holders.add(ResultOutbox.class);
        holders.add(ConsumedOffsets.class);
        return holders;
    }

    /** Every statement of the store on a distributed table, by name. */
    static Map<String, String> statements() {
        Map<String, String> statements = new TreeMap<>();
        for (Operation op : Operation.values()) {
            StatementCatalog.protocolStatements(op).forEach((name, sql) -> statements.put(op + "." + name, sql));
            StatementCatalog.hotPathStatements(op).forEach((name, sql) -> {
                if (!statements.containsValue(sql)) { // the hot path's own names for protocol statements are not listed twice
                    statements.put(op + "." + name, sql);
                }
            });
        }
        for (Field field : fields()) {
            if (Modifier.isStatic(field.getModifiers()) && Map.class.isAssignableFrom(field.getType())
                    && field.getName().equals(field.getName().toUpperCase())) {
                try {
                    field.setAccessible(true);
                    ((Map<?, ?>) field.get(null)).forEach((key, value) -> {
                        if (value instanceof String sql && DISTRIBUTED.matcher(sql).find() && !statements.containsValue(sql)) {
                            put(statements, name(field) + "." + key, sql);
                        }
                    });
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
            if (Modifier.isStatic(field.getModifiers()) && field.getType() == String.class) {
                try {
                    field.setAccessible(true);
                    String sql = (String) field.get(null);
                    // templates ({t}, {o}, ...) are held to the rules as rendered, through the protocol statements
                    if (sql != null && DISTRIBUTED.matcher(sql).find() && !TEMPLATE.matcher(sql).find()
                            && !statements.containsValue(sql)) {
                        put(statements, name(field), sql);
                    }
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return statements;
    }

    /** Two of the store's classes must not hold different statements under one name: one would hide the other. */
    private static void put(Map<String, String> statements, String name, String sql) {
        if (statements.containsKey(name)) {
            throw new IllegalStateException("two statements named " + name + ": rename one");
        }
        statements.put(name, sql);
    }

    /** The static fields of the classes that hold SQL on the two tables: the store, and the outbox and offsets beside it. */
    private static List<Field> fields() {
        List<Field> fields = new ArrayList<>();
        for (Class<?> holder : holders()) {
            fields.addAll(List.of(holder.getDeclaredFields()));
        }
        return fields;
    }

    /** A field's statement name: the store's own by field name, the others' with their class's. */
    private static String name(Field field) {
        return STORE.contains(field.getDeclaringClass()) ? field.getName()
                : field.getDeclaringClass().getSimpleName() + "." + field.getName();
    }

}

package dev.chargeonce.spec;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The model's guards and spec/mutation-table.md's mutation table, read from the two texts, and the mutants they make.
 *
 * <p>A guard is one condition the design relies on (a WHERE clause of a fenced statement, a check-then-act), named in
 * the model's {@code one sig ... extends Guard} and written there as {@code keeps[G] implies <condition>}. A mutant is
 * the model with one guard dropped: a check of the model with {@code currentDesign} replaced by {@code dropsOnly[G]}.
 * The table says, for each guard, whether it is load-bearing (a mutant finds a counterexample: the checks that notice
 * and the length of the shortest) or defence in depth (why no check can notice), and which test of the code fails
 * when the same guard is removed from the Java or the SQL.
 */
final class MutationTable {

    /**
     * A row of the table: for a load-bearing guard, the checks that notice it, the smallest scope its counterexample
     * was found in (overrides of the check's own scope, e.g. {@code 1 Row, 1 Holder, 1 Req}) and the states of the
     * shortest one there; for a guard that is defence in depth (spec/mutation-table.md argues why no check can notice it) or
     * still open (no check noticed it within the scopes run, and no argument yet: a check may be missing), none.
     */
    record Row(String guard, String verdict, List<String> checks, String scope, int states, String caughtBy) {
        boolean loadBearing() {
            return verdict.startsWith("load-bearing");
        }

        /** Load-bearing, and its mutant cheap enough to run in CI (the others are for the full run). */
        boolean inCi() {
            return verdict.equals("load-bearing");
        }
    }

    private static final Pattern GUARDS = Pattern.compile("\\bone sig\\s+((?:[A-Za-z0-9_,\\s]|--[^\n]*\n)+?)\\s*extends Guard \\{\\}");
    private static final Pattern ROW = Pattern.compile(
            "^\\|\\s*`([A-Za-z0-9]+)`\\s*\\|[^|]*\\|\\s*(load-bearing|load-bearing, outside CI|defence in depth|open)\\s*\\|([^|]*)\\|([^|]*)\\|\\s*([0-9]*|—)\\s*\\|([^|]*)\\|\\s*$");
    private static final Pattern SCOPE_ITEM = Pattern.compile("(\\d+) ([A-Z][A-Za-z]*)");
    static final String SECTION = "## The table";

    private MutationTable() {
    }

    /** The guards the model declares, in its order (comments stripped). */
    static List<String> guards(String model) {
        Matcher m = GUARDS.matcher(model);
        if (!m.find()) {
            return List.of();
        }
        String names = m.group(1).replaceAll("--[^\n]*", "");
        return Arrays.stream(names.split("[,\\s]+")).filter(s -> !s.isBlank()).toList();
    }

    /** The rows of spec/mutation-table.md's table, by guard. Lines that look like rows and do not parse are returned in {@code wrong}. */
    static Map<String, Row> rows(String readme, List<String> wrong) {
        Map<String, Row> rows = new LinkedHashMap<>();
        int start = readme.indexOf(SECTION);
        if (start < 0) {
            wrong.add("spec/mutation-table.md has no section \"" + SECTION + "\"");
            return rows;
        }
        int end = readme.indexOf("\n## ", start + SECTION.length());
        String section = end < 0 ? readme.substring(start) : readme.substring(start, end);
        for (String line : section.split("\n")) {
            String row = line.strip();
            if (!row.startsWith("| `")) {
                continue;
            }
            Matcher m = ROW.matcher(row);
            if (!m.matches()) {
                wrong.add("a row of the mutation table that does not parse: " + row);
                continue;
            }
            List<String> checks = Arrays.stream(m.group(3).split(","))
                    .map(String::strip).filter(s -> !s.isEmpty() && !s.equals("—")).toList();
            String scope = m.group(4).strip().replace("`", "").replace("—", "");
            int states = m.group(5).matches("[0-9]+") ? Integer.parseInt(m.group(5)) : 0;
            String caughtBy = m.group(6).strip().replace("`", "");
            if (rows.put(m.group(1), new Row(m.group(1), m.group(2), checks, scope, states, caughtBy)) != null) {
                wrong.add("two rows for " + m.group(1));
            }
        }
        return rows;
    }

    /** The name of a mutant's command: the check, without the guard. */
    static String mutantName(String check, String guard) {
        return check + "Without" + guard;
    }

    /**
     * The command of the model's {@code check} with {@code guard} dropped: the same property, in the check's scope
     * with {@code scope}'s overrides, looking for a counterexample of exactly {@code states} states (a trace may
     * stutter, so every shorter one is among them), which it must find ({@code expect 1}).
     */
    static String mutant(String model, String check, String guard, String scope, int states) {
        Matcher m = Pattern.compile("(?m)^check " + check + " \\{([^\n]*)\\}\\s*\\n[ \t]+(for [^\n]*)$").matcher(model);
        if (!m.find()) {
            throw new IllegalArgumentException("the model has no check " + check);
        }
        String body = m.group(1);
        if (!body.contains("currentDesign")) {
            throw new IllegalArgumentException("check " + check + " does not assume currentDesign: no mutant can be made of it");
        }
        String bounds = m.group(2).replaceAll("\\d+(\\.\\.\\d+)? steps", states + ".." + states + " steps").replace("expect 0", "expect 1");
        Matcher item = SCOPE_ITEM.matcher(scope);
        while (item.find()) {
            String sig = item.group(2);
            if (!Pattern.compile("\\b\\d+ " + sig + "\\b").matcher(bounds).find()) {
                throw new IllegalArgumentException("the scope of " + check + " does not name " + sig + ": " + bounds);
            }
            bounds = bounds.replaceAll("\\b\\d+ " + sig + "\\b", item.group(1) + " " + sig);
        }
        return "check " + mutantName(check, guard) + " {" + body.replace("currentDesign", "dropsOnly[" + guard + "]") + "}\n  " + bounds + "\n";
    }

    /**
     * The mutants CI runs: for each load-bearing guard, the first check its row names, within the states the row
     * gives. (The other checks a row names, and the defence-in-depth guards, are for the full run: see spec/mutation-table.md.)
     */
    static Map<String, String> ciMutants(String model, Map<String, Row> rows) {
        Map<String, String> commands = new LinkedHashMap<>();
        for (Row row : rows.values()) {
            if (row.inCi() && !row.checks().isEmpty() && row.states() > 0) {
                String check = row.checks().get(0);
                commands.put(mutantName(check, row.guard()), mutant(model, check, row.guard(), row.scope(), row.states()));
            }
        }
        return commands;
    }

    /** What is wrong between the model's guards and the table (a guard without a row, a row without a guard, ...). */
    static List<String> disagreements(List<String> guards, Map<String, Row> rows, Set<String> checks) {
        List<String> wrong = new ArrayList<>();
        for (String guard : guards) {
            if (!rows.containsKey(guard)) {
                wrong.add("the model's guard " + guard + " has no row in spec/mutation-table.md's mutation table");
            }
        }
        for (Row row : rows.values()) {
            if (!guards.contains(row.guard())) {
                wrong.add("the mutation table names " + row.guard() + ", which the model does not declare as a Guard");
            }
            if (row.loadBearing() && (row.checks().isEmpty() || row.states() == 0)) {
                wrong.add(row.guard() + " is load-bearing: its row must name the checks that notice and the states");
            }
            if (row.loadBearing() && row.caughtBy().isBlank()) {
                wrong.add(row.guard() + " is load-bearing: its row must name the test that fails without it");
            }
            for (String check : row.checks()) {
                if (!checks.contains(check)) {
                    wrong.add(row.guard() + ": the model has no check " + check);
                }
            }
        }
        return wrong;
    }

    /** The checks of the model that assume the design and must hold (those a mutant can be made of). */
    static Set<String> designChecks(String model) {
        Set<String> names = new LinkedHashSet<>();
        Matcher m = Pattern.compile("(?m)^check ([A-Za-z0-9]+) \\{ currentDesign implies [^\n]*\\}\\s*\\n[ \t]+for [^\n]*expect 0$").matcher(model);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }
}

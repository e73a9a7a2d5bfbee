package dev.chargeonce.spec;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The model earns its keep: every guard it relies on is either noticed by a check when it is dropped
 * (load-bearing), or argued in spec/mutation-table.md to be defence in depth; and each load-bearing guard is traced to a test
 * of the code that fails without it. See {@link MutationTable} for what a guard and a mutant are.
 *
 * <p>{@link #everyLoadBearingGuardIsCaught} runs, for each load-bearing guard, its mutant against the first check its
 * row names, in the same Alloy lanes as the model's own checks ({@link ProtocolModelTest#startChecks}), and prints the
 * table. It fails when a load-bearing guard is no longer caught within the states its row gives.
 */
class GuardMutationTest {

    private static final Path TESTS = Path.of("src", "test", "java");
    static final String NO_TEST_YET = "none yet";
    private static final Pattern TEST_NAME = Pattern.compile("([A-Z][A-Za-z0-9]*)#([a-z][A-Za-z0-9]*)");

    @Test
    void everyGuardHasARowAndEveryTestItNamesExists() throws IOException {
        String model = Files.readString(ProtocolModelTest.MODEL, StandardCharsets.UTF_8);
        List<String> wrong = new ArrayList<>();
        Map<String, MutationTable.Row> rows = MutationTable.rows(Files.readString(ProtocolModelTest.MUTATION_TABLE, StandardCharsets.UTF_8), wrong);
        List<String> guards = MutationTable.guards(model);
        assertTrue(guards.size() > 10, "the model's guards were not found: " + guards);
        wrong.addAll(MutationTable.disagreements(guards, rows, MutationTable.designChecks(model)));
        for (MutationTable.Row row : rows.values()) {
            Matcher test = TEST_NAME.matcher(row.caughtBy());
            while (test.find()) {
                Path source = testSource(test.group(1));
                if (source == null) {
                    wrong.add(row.guard() + ": no test class " + test.group(1) + " in " + TESTS);
                } else if (!Files.readString(source, StandardCharsets.UTF_8).contains(" " + test.group(2) + "(")) {
                    wrong.add(row.guard() + ": " + test.group(1) + " has no test " + test.group(2));
                }
            }
            // A load-bearing guard no test of the code catches yet is written so, and printed as the gap it is.
            if (row.loadBearing() && !TEST_NAME.matcher(row.caughtBy()).find() && !row.caughtBy().equals(NO_TEST_YET)) {
                wrong.add(row.guard() + ": \"caught by test\" names no Class#method (or says " + NO_TEST_YET + ")");
            }
        }
        // Every mutant command can be made (its check exists and assumes the design).
        MutationTable.ciMutants(model, rows);
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    @Test
    void everyLoadBearingGuardIsCaught() throws Exception {
        String model = Files.readString(ProtocolModelTest.MODEL, StandardCharsets.UTF_8);
        Map<String, MutationTable.Row> rows = MutationTable.rows(Files.readString(ProtocolModelTest.MUTATION_TABLE, StandardCharsets.UTF_8), new ArrayList<>());
        JsonNode receipts = ProtocolModelTest.receipts();
        List<String> wrong = new ArrayList<>();
        System.out.printf("The mutation table (spec/mutation-table.md): each guard dropped alone%n");
        String format = "  %-26s %-16s %-34s %-24s %-7s %s%n";
        System.out.printf(format, "guard", "verdict", "check run (the row's first)", "scope", "states", "caught by test");
        for (MutationTable.Row row : rows.values()) {
            if (row.loadBearing() && !row.inCi()) {
                System.out.printf(format, row.guard(), "load-bearing", "(outside CI: " + String.join(", ", row.checks()) + ")",
                        row.scope().isEmpty() ? "the check's" : row.scope(), String.valueOf(row.states()), row.caughtBy());
                continue;
            }
            if (!row.loadBearing()) {
                boolean argued = row.verdict().equals("defence in depth");
                System.out.printf(format, row.guard(), row.verdict(), argued ? "(argued in spec/mutation-table.md)" : "(no check notices it yet)",
                        "—", "—", "—");
                continue;
            }
            String check = row.checks().get(0);
            JsonNode result = receipts.path(MutationTable.mutantName(check, row.guard()));
            // Exactly row.states() states were asked for (a trace may stutter: shorter ones are among them).
            int states = result.path("solution").size() > 0 ? row.states() : 0;
            System.out.printf(format, row.guard(), "load-bearing",
                    check + (states > 0 ? ": SAT" : result.isMissingNode() ? ": NOT RUN" : ": UNSAT"),
                    row.scope().isEmpty() ? "the check's" : row.scope(), states > 0 ? String.valueOf(row.states()) : "—", row.caughtBy());
            if (result.isMissingNode()) {
                wrong.add(row.guard() + ": its mutant did not run (see " + ProtocolModelTest.OUT + "/lane-*/alloy-exec.log)");
            } else if (states == 0) {
                wrong.add(row.guard() + " is listed as load-bearing, and without it " + check + " finds no counterexample within "
                        + row.states() + " states: the model no longer needs it (update the table and argue it), or no longer sees it");
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    private static Path testSource(String simpleName) throws IOException {
        try (Stream<Path> files = Files.walk(TESTS)) {
            return files.filter(p -> p.getFileName().toString().equals(simpleName + ".java")).findFirst().orElse(null);
        }
    }
}

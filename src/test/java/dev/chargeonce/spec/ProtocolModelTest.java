package dev.chargeonce.spec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The protocol model (spec/chargeonce.als) is checked by Alloy 6, and it is tied to the code.
 *
 * <p>{@link #everyCheckHasItsExpectedResult}: Alloy (copied to target/alloy by the maven-dependency-plugin) runs
 * every {@code check} of the model in its own process; a check marked {@code expect 0} (safety, liveness) must find no
 * counterexample within its bounds, one marked {@code expect 1} (the old rules put back) must find one, so a model
 * that proves nothing fails here too.
 *
 * <p>{@link #theMappingMatchesTheCode}: the table of spec/README.md names, for every action of the model, the Java
 * methods and the SQL statements of the store ({@link #STORE}: the classes that run the SQL on the idempotency
 * tables) it stands for. Every name in it must exist, every action of the model's {@code step} must have a row, and
 * every statement (and every public method) of the store's classes must be in the table or in the README's list of
 * what the model leaves out: renaming, adding or removing one breaks this test until the model and its table follow.
 *
 * <p>Plain JUnit: no Quarkus, no database.
 */
class ProtocolModelTest {

    static final Path MODEL = Path.of("spec", "chargeonce.als");
    static final Path README = Path.of("spec", "README.md");
    /** The guards' table: see {@link GuardMutationTest}. */
    static final Path MUTATION_TABLE = Path.of("spec", "mutation-table.md");
    private static final Path ALLOY = Path.of("target", "alloy", "alloy.jar");
    static final Path OUT = Path.of("target", "alloy-out");
    private static final Path SOURCES = Path.of("src", "main", "java");
    /**
     * The store: the catalog of the statements charges and refunds share, and the classes that run them, each with
     * the statements of its own. A class of the package that runs SQL on the idempotency tables belongs here.
     */
    static final List<String> STORE = List.of("StatementCatalog", "Claims", "RefundReservations", "Finishes", "Reads",
            "CommandResults", "OperatorRows", "Upkeep", "OutsideRefundRows");

    /** Beside the store: the Kafka outbox's and the consumed offsets' own statements, which the model leaves out. */
    private static final Set<String> BESIDE_THE_STORE = Set.of("ResultOutbox", "ConsumedOffsets");

    /** SQL on the idempotency tables in a source: a table after a keyword, or an operation's table joined into one. */
    private static final Pattern SQL_ON_THE_TABLES = Pattern.compile(
            "\\b(FROM|INTO|UPDATE|JOIN)\\s+(stripe_intents|stripe_refunds|\\{t\\})\\b|\\+\\s*\\w+\\.table\\(\\)|\\.table\\(\\)\\s*\\+");

    /** The checks the model must have, with what each must find (0: no counterexample; 1: one). */
    private static final Map<String, Integer> CHECKS = new LinkedHashMap<>();

    static {
        CHECKS.put("NoDoubleCharge", 0);
        CHECKS.put("ChargeAnswersTrue", 0);
        CHECKS.put("NothingMadeIsTrue", 0);
        CHECKS.put("RefundsWithinCharge", 0);
        CHECKS.put("NeverBackwards", 0);
        CHECKS.put("ChargesAtDepthOneRow", 0);
        CHECKS.put("ChargesAtDepthOneHolder", 0);
        CHECKS.put("ChargesTwoKeys", 0);
        CHECKS.put("EveryRowEnds", 0);
        CHECKS.put("FairTracesExist", 1);
        CHECKS.put("EveryRowEndsNeedsRecovery", 1);
        CHECKS.put("OldKeyRuleDoubleCharges", 1);
        CHECKS.put("OldAbsenceRuleDoubleCharges", 1);
        CHECKS.put("SearchInsteadOfListDoubleCharges", 1);
    }

    @Test
    void everyCheckHasItsExpectedResult() throws Exception {
        assertTrue(Files.isRegularFile(ALLOY), ALLOY + " is missing: it is copied by the maven-dependency-plugin (process-test-resources)");
        long waited = System.nanoTime();
        ObjectNode commands = receipts();
        Set<String> mutants = mutants(Files.readString(MODEL, StandardCharsets.UTF_8)).keySet();
        System.out.printf("Alloy ran every check in %d s (this test waited %d s of it)%n",
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - checksStarted),
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - waited));

        List<String> wrong = new ArrayList<>();
        Set<String> found = new LinkedHashSet<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = commands.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> entry = it.next();
            String name = entry.getKey();
            JsonNode check = entry.getValue();
            if (mutants.contains(name)) {
                continue; // GuardMutationTest's
            }
            found.add(name);
            boolean counterexample = check.path("solution").size() > 0;
            long millis = 0;
            for (JsonNode s : check.path("solution")) {
                millis += s.path("duration").asLong();
            }
            // The receipt leaves out an "expects" of 0 (and writes -1 for a command without expect).
            int expects = check.has("expects") ? check.path("expects").asInt() : 0;
            System.out.printf("  %-8s %-38s expect %2d  %s%n", check.path("type").asText(), name, expects,
                    counterexample ? "SAT (counterexample found)" : "UNSAT (none within the bounds)");
            Integer wanted = CHECKS.get(name);
            if (!"check".equals(check.path("type").asText())) {
                wrong.add(name + ": only checks belong in the model (a run proves nothing here)");
            } else if (wanted == null) {
                wrong.add(name + ": a check this test does not know; add it to CHECKS with its expected result");
            } else if (expects != wanted) {
                wrong.add(name + ": the model says expect " + expects + ", this test expects " + wanted);
            } else if (counterexample != (wanted == 1)) {
                wrong.add(name + (wanted == 1
                        ? ": expected a counterexample (an old rule put back, or a trace that must exist), and none was found: the model no longer sees it"
                        : ": COUNTEREXAMPLE FOUND, see " + OUT + "/lane-*/out/" + name + "-solution-0.*"));
            }
        }
        for (String name : CHECKS.keySet()) {
            if (!found.contains(name)) {
                wrong.add(name + ": missing from the model");
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong) + "\n\nAlloy's logs: " + OUT + "/lane-*/alloy-exec.log");
    }

    /** The Alloy runs of this JVM, one per lane, started once: by {@link StartModelChecksEarly} or by the test. */
    private static List<Future<JsonNode>> checks;
    private static long checksStarted;

    /**
     * Starts the checks in {@code LANES.size()} Alloy processes, as many at once as there are cores: each solver is
     * single-threaded, and a process that runs several checks pays the JVM's warm-up once (a check alone in a cold
     * JVM took 2 to 2.5 times as long as the same check after others). Started as the test run begins (see
     * {@link StartModelChecksEarly}), they run beside the other tests instead of after them.
     * {@code -Dchargeonce.alloy.solver=sat4j} runs every lane with SAT4J (pure Java), for a machine where Alloy's
     * native solvers do not load.
     */
    static synchronized List<Future<JsonNode>> startChecks() throws IOException {
        if (checks == null) {
            String forced = System.getProperty("chargeonce.alloy.solver");
            int parallel = Integer.getInteger("chargeonce.alloy.parallel",
                    Math.max(1, Math.min(LANES.size(), Runtime.getRuntime().availableProcessors())));
            String model = Files.readString(MODEL, StandardCharsets.UTF_8);
            Map<String, String> mutants = mutants(model);
            ExecutorService pool = Executors.newFixedThreadPool(parallel, r -> Thread.ofPlatform().daemon().name("alloy-lane").unstarted(r));
            List<Future<JsonNode>> runs = new ArrayList<>();
            checksStarted = System.nanoTime();
            for (int lane = 0; lane < LANES.size(); lane++) {
                // A mutant (GuardMutationTest) runs in the lane of the check it is made of: same scope, same solver.
                StringBuilder only = new StringBuilder(modelWithOnly(model, LANES.get(lane).checks()));
                for (Map.Entry<String, String> mutant : mutants.entrySet()) {
                    if (LANES.get(lane).checks().contains(mutant.getKey().substring(0, mutant.getKey().indexOf("Without")))) {
                        only.append('\n').append(mutant.getValue());
                    }
                }
                Path dir = OUT.resolve("lane-" + lane);
                String solver = forced != null ? forced : LANES.get(lane).solver();
                runs.add(pool.submit(() -> runAlloy(solver, only.toString(), dir)));
            }
            pool.shutdown();
            checks = runs;
        }
        return checks;
    }

    /** An Alloy process: the checks it runs, and the SAT solver it runs them with. */
    private record Lane(String solver, List<String> checks) {
    }

    /**
     * Every check of the model, in lanes started in this order as cores free up. The long checks have a lane each, with
     * glucose (native, bundled in Alloy's jar), which took a quarter less time than SAT4J at 8 states; the short ones
     * share a lane with SAT4J, which was as fast or faster at 6. Seconds per lane on an idle machine, with the guards'
     * mutants: RefundsWithinCharge (5 states) with ChargesTwoKeys (4 states) 288, ChargesAtDepthOneHolder 141, the
     * shared lane 114, ChargesAtDepthOneRow 75; 330 s in all on 2 cores. A check the model has and no lane lists is found by
     * {@link #theLanesHoldEveryCheckOfTheModel}.
     */
    private static final List<Lane> LANES = List.of(
            new Lane("glucose", List.of("RefundsWithinCharge", "ChargesTwoKeys")),
            new Lane("glucose", List.of("ChargesAtDepthOneHolder")),
            new Lane("sat4j", List.of("OldKeyRuleDoubleCharges", "ChargeAnswersTrue", "OldAbsenceRuleDoubleCharges",
                    "SearchInsteadOfListDoubleCharges", "NoDoubleCharge", "NeverBackwards", "NothingMadeIsTrue",
                    "EveryRowEnds", "FairTracesExist", "EveryRowEndsNeedsRecovery")),
            new Lane("glucose", List.of("ChargesAtDepthOneRow")));

    /** The mutants CI runs (see {@link MutationTable#ciMutants}), by name; none when the table cannot be read. */
    static Map<String, String> mutants(String model) throws IOException {
        Map<String, MutationTable.Row> rows = MutationTable.rows(Files.readString(MUTATION_TABLE, StandardCharsets.UTF_8), new ArrayList<>());
        return MutationTable.ciMutants(model, rows);
    }

    /** The commands of every lane, by name, as Alloy reported them (the checks and the mutants). */
    static ObjectNode receipts() throws Exception {
        ObjectNode commands = new ObjectMapper().createObjectNode();
        for (Future<JsonNode> run : startChecks()) {
            run.get().path("commands").fields().forEachRemaining(e -> commands.set(e.getKey(), e.getValue()));
        }
        return commands;
    }

    /** A command of the model: {@code check Name { ... }} on one line, its scope ({@code for ...}) on the next. */
    private static final Pattern COMMAND = Pattern.compile("(?m)^(check|run)\\s+([A-Za-z0-9_]+)\\s*\\{[^\n]*\\}\\s*\\n[ \t]+for [^\n]*$");

    /** The model with every command but {@code keep} taken out (the rest of the text as it is). */
    static String modelWithOnly(String model, List<String> keep) {
        Matcher command = COMMAND.matcher(model);
        StringBuilder out = new StringBuilder();
        while (command.find()) {
            command.appendReplacement(out, keep.contains(command.group(2)) ? Matcher.quoteReplacement(command.group()) : "");
        }
        command.appendTail(out);
        return out.toString();
    }

    /** Runs the checks of {@code model} in an Alloy process of its own; its receipt and its log are in {@code dir}. */
    private static JsonNode runAlloy(String solver, String model, Path dir) throws Exception {
        Files.createDirectories(dir);
        Path als = dir.resolve("chargeonce.als");
        Files.writeString(als, model, StandardCharsets.UTF_8);
        Path out = dir.resolve("out");
        Path log = dir.resolve("alloy-exec.log");
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xss16m", "-Xmx1g", "--enable-native-access=ALL-UNNAMED", "-jar", ALLOY.toString(), "exec", "-f", "-q",
                "-s", solver, "-t", "text", "-o", out.toString(), als.toString());
        Process alloy = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        // Started before the test, it must not outlive a test JVM that ends early.
        Runtime.getRuntime().addShutdownHook(new Thread(alloy::destroyForcibly));
        if (!alloy.waitFor(15, TimeUnit.MINUTES)) {
            alloy.destroyForcibly();
            fail("Alloy did not finish within 15 minutes; see " + log);
        }
        // Alloy exits with 1 when a check does not meet its expect: the receipt says which, and is read by the caller.
        Path receipt = out.resolve("receipt.json");
        assertTrue(Files.isRegularFile(receipt), "Alloy wrote no receipt in " + out + " (exit " + alloy.exitValue() + "):\n"
                + Files.readString(log, StandardCharsets.UTF_8));
        return new ObjectMapper().readTree(receipt.toFile());
    }

    /**
     * The lanes hold every command of the model once, and nothing else; each lane's copy of the model keeps exactly
     * its commands (so every check runs, in one lane).
     */
    @Test
    void theLanesHoldEveryCheckOfTheModel() throws IOException {
        String model = Files.readString(MODEL, StandardCharsets.UTF_8);
        List<String> inLanes = LANES.stream().flatMap(lane -> lane.checks().stream()).toList();
        assertEquals(inLanes.size(), new TreeSet<>(inLanes).size(), "a check in two lanes: " + inLanes);
        assertEquals(declaredCommands(model), new TreeSet<>(inLanes), "the commands of " + MODEL + " against the lanes");
        assertEquals(new TreeSet<>(CHECKS.keySet()), new TreeSet<>(inLanes), "CHECKS against the lanes");
        for (Lane lane : LANES) {
            assertEquals(new TreeSet<>(lane.checks()), declaredCommands(modelWithOnly(model, lane.checks())),
                    "the copy of the model for " + lane.checks());
        }
    }

    private static Set<String> declaredCommands(String model) {
        Set<String> declared = new TreeSet<>();
        Matcher command = Pattern.compile("(?m)^\\s*(check|run)\\s+([A-Za-z0-9_]+)").matcher(model);
        while (command.find()) {
            declared.add(command.group(2));
        }
        return declared;
    }

    // ---- the table in spec/README.md against the code and the model ----------------------------------------------

    private static final Pattern ROW = Pattern.compile("^\\|\\s*`([A-Za-z0-9]+)`\\s*\\|([^|]*)\\|([^|]*)\\|([^|]*)\\|\\s*$");
    private static final Pattern METHOD = Pattern.compile("`([A-Z][A-Za-z0-9]*)#([a-z][A-Za-z0-9]*)`");
    private static final Pattern SQL = Pattern.compile("`([A-Z][A-Z0-9_]+)`");
    private static final Pattern INLINE_SQL = Pattern.compile("`((?:SELECT|UPDATE|INSERT|DELETE|SET|WHERE) [^`]*)`");
    /** A statement of the store: a constant, or one per operation ({@code Map<Operation, String>}). */
    private static final Pattern STORE_CONSTANT = Pattern.compile(
            "(?m)^    (?:private )?static final (?:String|Map<Operation, String>) ([A-Z][A-Z0-9_]+)\\s*=");
    private static final Pattern STORE_PUBLIC = Pattern.compile("^    public (?!record|static|interface)[^=;(]*?\\s([a-z][A-Za-z0-9]*)\\(", Pattern.MULTILINE);

    private static boolean isStatement(String store, String name) {
        return store.contains("String " + name + " =") || store.contains("Map<Operation, String> " + name + " =");
    }

    @Test
    void theMappingMatchesTheCode() throws IOException {
        String readme = Files.readString(README, StandardCharsets.UTF_8);
        String model = Files.readString(MODEL, StandardCharsets.UTF_8);
        Map<String, String> sources = new LinkedHashMap<>();
        for (String cls : STORE) {
            Path source = SOURCES.resolve("dev/chargeonce/idempotency/" + cls + ".java");
            assertTrue(Files.isRegularFile(source), "the store's class " + cls + " is not at " + source);
            sources.put(cls, Files.readString(source, StandardCharsets.UTF_8));
        }
        String store = String.join("\n", sources.values());
        List<String> wrong = new ArrayList<>();
        // A class of the package that runs SQL on the idempotency tables is one of the store's, so that its statements
        // and public methods are held to the table below (the outbox's and the offsets' own classes aside).
        try (Stream<Path> files = Files.list(SOURCES.resolve("dev/chargeonce/idempotency"))) {
            for (Path file : files.sorted().toList()) {
                String cls = file.getFileName().toString().replaceFirst("\\.java$", "");
                if (!STORE.contains(cls) && !BESIDE_THE_STORE.contains(cls)
                        && SQL_ON_THE_TABLES.matcher(Files.readString(file, StandardCharsets.UTF_8)).find()) {
                    wrong.add(cls + " runs SQL on stripe_intents or stripe_refunds and is not one of ProtocolModelTest.STORE");
                }
            }
        }

        Set<String> tableActions = new TreeSet<>();
        Set<String> tableSql = new TreeSet<>();
        Set<String> tableMethods = new TreeSet<>();
        for (String line : readme.split("\n")) {
            Matcher row = ROW.matcher(line.strip());
            if (!row.matches()) {
                continue;
            }
            String action = row.group(1);
            tableActions.add(action);
            if (!Pattern.compile("(?m)^pred " + action + "\\b").matcher(model).find()) {
                wrong.add("README names the action " + action + ", the model has no pred " + action);
            }
            Matcher m = METHOD.matcher(row.group(2));
            while (m.find()) {
                String cls = m.group(1);
                String method = m.group(2);
                tableMethods.add(cls + "#" + method);
                Path source = sourceOf(cls);
                if (source == null) {
                    wrong.add(action + ": no class " + cls + " in " + SOURCES);
                } else if (!Pattern.compile("\\s" + method + "(\\(|\\s*[,)])").matcher(Files.readString(source)).find()) {
                    // a method, or a record's component (its accessor)
                    wrong.add(action + ": " + cls + " has no method " + method);
                }
            }
            Matcher s = SQL.matcher(row.group(3));
            while (s.find()) {
                String constant = s.group(1);
                tableSql.add(constant);
                if (!isStatement(store, constant)) {
                    wrong.add(action + ": the store has no statement " + constant);
                }
            }
            Matcher inline = INLINE_SQL.matcher(row.group(3));
            while (inline.find()) {
                String text = inline.group(1).replace("…", "").strip();
                if (!store.contains(text)) {
                    wrong.add(action + ": the store has no statement starting \"" + text + "\"");
                }
            }
        }

        // Every action of the model's step has a row.
        Matcher step = Pattern.compile("(?s)pred step \\{(.*?)\\n}").matcher(model);
        assertTrue(step.find(), "the model has no pred step");
        Matcher call = Pattern.compile("\\b([A-Z][A-Za-z0-9]+)(\\[|\\s*$|\\s*\\n)").matcher(step.group(1));
        Set<String> stepActions = new TreeSet<>();
        while (call.find()) {
            stepActions.add(call.group(1));
        }
        stepActions.removeAll(Set.of("ChargeKey", "RefundKey", "Body", "Row", "Holder", "Req", "Obj", "PState", "Key", "Attempt"));
        for (String action : stepActions) {
            if (!tableActions.contains(action)) {
                wrong.add("the model's action " + action + " has no row in spec/README.md's table");
            }
        }

        // Every statement and public method of the store is in the table, or listed as left out (with why).
        String leftOut = section(readme, "## What the model leaves out of the store");
        for (Map.Entry<String, String> source : sources.entrySet()) {
            String cls = source.getKey();
            Matcher constant = STORE_CONSTANT.matcher(source.getValue());
            while (constant.find()) {
                String name = constant.group(1);
                if (!tableSql.contains(name) && !leftOut.contains("`" + name + "`")) {
                    wrong.add(cls + "'s statement " + name + " has no model action (spec/README.md)");
                }
            }
            Matcher method = STORE_PUBLIC.matcher(source.getValue());
            while (method.find()) {
                String name = method.group(1);
                if (!tableMethods.contains(cls + "#" + name) && !leftOut.contains("`" + cls + "#" + name + "`")) {
                    wrong.add(cls + "#" + name + " has no model action (spec/README.md)");
                }
            }
        }
        for (Matcher named = METHOD.matcher(leftOut); named.find(); ) {
            String source = sources.get(named.group(1));
            if (source != null && !source.contains(" " + named.group(2) + "(")) {
                wrong.add("spec/README.md leaves out " + named.group(1) + "#" + named.group(2) + ", which does not exist");
            }
        }
        for (Matcher named = SQL.matcher(leftOut); named.find(); ) {
            if (!isStatement(store, named.group(1))) {
                wrong.add("spec/README.md leaves out the statement " + named.group(1) + ", which does not exist");
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    private static String section(String markdown, String heading) {
        int start = markdown.indexOf(heading);
        assertTrue(start >= 0, "spec/README.md has no section \"" + heading + "\"");
        int end = markdown.indexOf("\n## ", start + heading.length());
        return end < 0 ? markdown.substring(start) : markdown.substring(start, end);
    }

    private static Path sourceOf(String simpleName) throws IOException {
        try (Stream<Path> files = Files.walk(SOURCES)) {
            return files.filter(p -> p.getFileName().toString().equals(simpleName + ".java")).findFirst().orElse(null);
        }
    }
}

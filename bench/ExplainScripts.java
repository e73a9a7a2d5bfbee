package bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code bench/explain.sh}: the pgbench scripts of a new charge (claim + finish) and of a replay, today's and
 * those before the statements were reworked for cost (bench/sql/before/), as psql scripts whose every statement runs under {@code EXPLAIN (ANALYZE, BUFFERS, WAL)}:
 * the script runs six times for keys of its own (so that the statements are warm), then once more after a
 * {@code -- shown} marker. pgbench's variables become psql's ({@code :'name'} for text, as pgbench binds them).
 */
final class ExplainScripts {

    static void write(Path today, Path before, Path out) throws IOException {
        Files.createDirectories(out);
        List<String> defines = Files.readAllLines(today.resolve("defines.txt"));
        StringBuilder header = new StringBuilder("\\set ON_ERROR_STOP 1\n\\pset pager off\n");
        List<String> textVariables = new ArrayList<>();
        for (String define : defines) {
            int eq = define.indexOf('=');
            if (eq > 0) {
                String name = define.substring(0, eq);
                textVariables.add(name);
                header.append("\\set ").append(name).append(" '").append(define.substring(eq + 1).replace("'", "\\'")).append("'\n");
            }
        }
        Map<String, Path> scripts = new LinkedHashMap<>();
        scripts.put("after-pair", today.resolve("claim_finish.sql"));
        scripts.put("after-replay", today.resolve("replay.sql"));
        scripts.put("before-pair", before.resolve("claim_finish.sql"));
        scripts.put("before-replay", before.resolve("replay.sql"));
        for (Map.Entry<String, Path> script : scripts.entrySet()) {
            List<String> statements = statements(Files.readString(script.getValue()), textVariables);
            StringBuilder psql = new StringBuilder(header);
            for (int run = 0; run <= 6; run++) {
                if (run == 6) {
                    psql.append("\\echo '-- shown'\n");
                }
                long k = 4_000_000_000L + run * 7919L + script.getKey().hashCode() % 1000;
                psql.append("\\set k ").append(k).append("\n\\set i ").append(10 * (run * 37 % 1999)).append("\n")
                        .append("\\set id chg_pgb").append(k).append("\n\\set lease_gen 1\n\\set new_lease_gen 1\n");
                for (String statement : statements) {
                    psql.append(run == 6 ? "EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF)\n" : "")
                            .append(statement).append(";\n");
                }
            }
            Files.writeString(out.resolve(script.getKey() + ".sql"), psql.toString());
        }
    }

    /** The SQL statements of a pgbench script, without its meta-commands and comments, variables in psql's form. */
    static List<String> statements(String pgbench, List<String> textVariables) {
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : pgbench.split("\n")) {
            String trimmed = line.strip();
            if (trimmed.startsWith("--")) {
                continue;
            }
            if (trimmed.startsWith("\\")) { // \set, \gset: end of a statement that pgbench sends with \gset
                if (!current.toString().isBlank()) {
                    statements.add(current.toString().strip());
                    current.setLength(0);
                }
                continue;
            }
            current.append(line).append('\n');
            if (trimmed.endsWith(";")) {
                statements.add(current.toString().strip().replaceAll(";$", ""));
                current.setLength(0);
            }
        }
        if (!current.toString().isBlank()) {
            statements.add(current.toString().strip());
        }
        List<String> psql = new ArrayList<>();
        for (String statement : statements) {
            String s = statement;
            for (String name : textVariables) {
                s = s.replaceAll(":" + name + "\\b", ":'" + name + "'");
            }
            psql.add(s.replaceAll("(?<!:):id\\b", ":'id'"));
        }
        return psql;
    }
}

package bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The pieces of bench/run.sh that are easier to get right in Java than in shell (JDK only). The scripts compile it
 * with the other files of this directory ({@code bench/lib.sh bench_tool}); by hand, on a JDK of 22 or later,
 * {@code java bench/BenchTool.java <command> ...} runs it from its sources.
 *
 * <ul>
 *   <li>{@code pgbench-scripts <statement catalog dir> <out dir>}: pgbench scripts with the service's own statements
 *       ({@link PgbenchScripts}).</li>
 *   <li>{@code explain-scripts <pgbench dir> <before dir> <out dir>}: the same as psql scripts under
 *       {@code EXPLAIN} ({@link ExplainScripts}, for bench/explain.sh).</li>
 *   <li>{@code report <results dir>}: reads what the run left there (wrk JSON lines, pgbench output and logs, RSS
 *       samples, meta.properties: {@link Results}) and prints the tables, the ratios and the targets as Markdown
 *       ({@link Report}); {@code focus <results dir>} the same for {@code --focus} ({@link FocusReport}).</li>
 *   <li>{@code soak <results dir>}, {@code soak-compare <before dir> <after dir> <out.svg>}: a soak's table and
 *       curves ({@link Soak}); {@code flame-shares <flame.html>...}: a CPU profile by library ({@link FlameShares}).</li>
 * </ul>
 */
public final class BenchTool {

    private BenchTool() {
    }

    public static void main(String[] args) throws IOException {
        switch (args.length > 0 ? args[0] : "") {
            case "pgbench-scripts" -> PgbenchScripts.write(Path.of(args[1]), Path.of(args[2]));
            case "report" -> new Report(new Results(Path.of(args[1]))).print(System.out);
            case "focus" -> new FocusReport(new Results(Path.of(args[1]))).print(System.out);
            case "soak" -> Soak.report(Path.of(args[1]), System.out);
            case "flame-shares" -> FlameShares.print(Arrays.stream(args).skip(1).map(Path::of).toList(), System.out);
            case "soak-compare" -> Soak.compare(Path.of(args[1]), Path.of(args[2]), Path.of(args[3]), System.out);
            case "explain-scripts" -> ExplainScripts.write(Path.of(args[1]), Path.of(args[2]), Path.of(args[3]));
            default -> {
                System.err.println("usage: BenchTool pgbench-scripts <statement catalog dir> <dir> | report <dir> | focus <dir> | soak <dir> | soak-compare <before dir> <after dir> <out.svg> | flame-shares <flame.html>... | explain-scripts <pgbench dir> <before dir> <out dir>");
                System.exit(2);
            }
        }
    }
}

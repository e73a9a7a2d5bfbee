package dev.chargeonce.testing;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The package of an earlier release of the service, built from this repository's history: what an upgrade test runs
 * side by side with this build against one database. The release is the commit before the one that added a given
 * file (the first migration of the change under test), exported with {@code git archive} into
 * {@code target/previous-release/<commit>} and packaged there offline (its dependencies are this build's); the package
 * is reused by later runs.
 */
public final class PreviousRelease {

    private PreviousRelease() {
    }

    /** The {@code quarkus-run.jar} of the release before the commit that added {@code addedFile}. */
    public static Path jarBefore(String addedFile) {
        String added = git("log", "--diff-filter=A", "--format=%H", "--", addedFile).strip();
        if (added.isEmpty()) {
            throw new IllegalStateException("no commit added " + addedFile + ": this test needs the repository's history"
                    + " (a clone, not an export or a shallow clone)");
        }
        List<String> commits = added.lines().toList();
        String release = git("rev-parse", commits.get(commits.size() - 1) + "^").strip();
        Path dir = Path.of("target", "previous-release", release).toAbsolutePath();
        Path jar = dir.resolve(Path.of("target", "quarkus-app", "quarkus-run.jar"));
        if (Files.exists(jar)) {
            return jar;
        }
        try {
            Files.createDirectories(dir);
            run(dir.getParent().toFile(), Path.of("target", "previous-release", release + ".log").toAbsolutePath(),
                    "sh", "-c", "git -C '" + Path.of("").toAbsolutePath() + "' archive --format=tar " + release
                            + " | tar -x -C '" + dir + "'");
            run(dir.toFile(), dir.resolveSibling(release + ".log"), "./mvnw", "-B", "-ntp", "-q", "-o", "package", "-DskipTests");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        if (!Files.exists(jar)) {
            throw new IllegalStateException("the package of " + release + " was not built; see " + dir.resolveSibling(release + ".log"));
        }
        return jar;
    }

    private static String git(String... args) {
        try {
            List<String> command = new java.util.ArrayList<>(List.of("git"));
            command.addAll(List.of(args));
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("git " + String.join(" ", args) + " failed: " + out);
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static void run(File dir, Path log, String... command) throws IOException {
        Process p = new ProcessBuilder(command).directory(dir).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        try {
            if (!p.waitFor(15, TimeUnit.MINUTES) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command) + " failed in " + dir + "; see " + log);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}

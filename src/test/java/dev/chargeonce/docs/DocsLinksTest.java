package dev.chargeonce.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The documentation has no dead links: README.md, every docs/*.md, spec/ and k8s/'s README.md and the READMEs of the
 * dated result records (bench/results/&lt;run&gt;/README.md, chaos/results/&lt;run&gt;/README.md). Every relative link
 * must name a file or directory of the repository that exists, every anchor (#section) a heading of the page it names
 * (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens, -1, -2 for repeats), and every page must be
 * reachable from README.md through links. A plain JUnit test: no Quarkus, no database.
 */
class DocsLinksTest {

    static final Path ROOT = Path.of("").toAbsolutePath();

    @Test
    void everyRelativeLinkLeadsToAFileAndEveryAnchorToAHeading() {
        List<Path> pages = pages(ROOT);
        assertTrue(pages.contains(ROOT.resolve("README.md")) && pages.size() > 10, "pages found: " + pages);
        assertEquals(List.of(), deadLinks(ROOT, pages), "dead links in the documentation");
    }

    @Test
    void everyPageIsReachableFromTheReadme() {
        assertEquals(List.of(), unreachable(ROOT, pages(ROOT)), "pages that no link from README.md leads to");
    }

    /** The check itself fails on what it is there to catch, on a small documentation tree of its own. */
    @Test
    void brokenLinksAnchorsAndOrphansAreFound(@TempDir Path dir) throws IOException {
        Files.createDirectories(dir.resolve("docs"));
        Files.writeString(dir.resolve("README.md"), """
                # Title

                [ok](docs/a.md#the-answer-is-42) [ok too](#title) [external](https://example.com/x.md#nothing)
                [missing file](docs/nope.md) [missing anchor](docs/a.md#no-such-heading) [outside](../elsewhere.md)
                `[in code](docs/nope-in-code.md)`

                ```
                [in a fence](docs/nope-in-fence.md)
                ```
                """);
        Files.writeString(dir.resolve("docs/a.md"), """
                # A

                ## The answer is: 42!

                ## Twice
                ## Twice

                [second](#twice-1) [third](#twice-2) [back](../README.md)
                """);
        Files.writeString(dir.resolve("docs/orphan.md"), "# Nobody links here\n");
        List<Path> pages = pages(dir);
        assertEquals(List.of(
                "README.md: [missing file](docs/nope.md): no such file",
                "README.md: [missing anchor](docs/a.md#no-such-heading): docs/a.md has no heading #no-such-heading",
                "README.md: [outside](../elsewhere.md): points outside the repository",
                "docs/a.md: [third](#twice-2): docs/a.md has no heading #twice-2"), deadLinks(dir, pages));
        assertEquals(List.of("docs/orphan.md"), unreachable(dir, pages));
    }

    @Test
    void anchorsAreGitHubs() {
        assertEquals("5-growth-of-stripe_intents-concurrency-16", slug("5. Growth of stripe_intents (concurrency 16)"));
        assertEquals("the-claims-form-a-read-then-an-insert", slug("The claim's form: a read, then an insert"));
        assertEquals("the-protocol-model-checked-spec", slug("The protocol, model-checked (`spec/`)"));
        assertEquals("security--the-sbom", slug("Security — [the SBOM](docs/x.md)"));
    }

    // ---- the check ------------------------------------------------------------------------------------------------

    /** README.md, docs/*.md, spec/README.md, k8s/README.md, bench/results/*&#47;README.md, chaos/results/*&#47;README.md. */
    static List<Path> pages(Path root) {
        List<Path> pages = new ArrayList<>();
        pages.add(root.resolve("README.md"));
        pages.addAll(list(root.resolve("docs")).stream().filter(p -> p.toString().endsWith(".md")).sorted().toList());
        for (String other : List.of("spec/README.md", "k8s/README.md")) {
            if (Files.isRegularFile(root.resolve(other))) {
                pages.add(root.resolve(other));
            }
        }
        for (String results : List.of("bench/results", "chaos/results")) {
            pages.addAll(list(root.resolve(results)).stream().map(d -> d.resolve("README.md")).filter(Files::isRegularFile)
                    .sorted().toList());
        }
        return pages;
    }

    static List<String> deadLinks(Path root, List<Path> pages) {
        Map<Path, Set<String>> anchors = new HashMap<>();
        List<String> dead = new ArrayList<>();
        for (Path page : pages) {
            for (String link : links(read(page))) {
                String problem = problem(root, page, link, anchors);
                if (problem != null) {
                    dead.add(name(root, page) + ": " + link + ": " + problem);
                }
            }
        }
        return dead;
    }

    static List<String> unreachable(Path root, List<Path> pages) {
        Set<Path> seen = new LinkedHashSet<>();
        Deque<Path> next = new ArrayDeque<>(List.of(root.resolve("README.md").normalize()));
        while (!next.isEmpty()) {
            Path page = next.pop();
            if (!seen.add(page) || !Files.isRegularFile(page)) {
                continue;
            }
            for (String link : links(read(page))) {
                String target = destination(link);
                if (target == null || external(target)) {
                    continue;
                }
                String file = decode(target.contains("#") ? target.substring(0, target.indexOf('#')) : target);
                if (file.endsWith(".md")) {
                    next.push(page.getParent().resolve(file).normalize());
                }
            }
        }
        Set<String> orphans = new TreeSet<>();
        for (Path page : pages) {
            if (!seen.contains(page.normalize())) {
                orphans.add(name(root, page));
            }
        }
        return List.copyOf(orphans);
    }

    /** Why the link is dead, or null. */
    static String problem(Path root, Path page, String link, Map<Path, Set<String>> anchors) {
        String target = destination(link);
        if (target == null || external(target)) {
            return null;
        }
        int hash = target.indexOf('#');
        String file = decode(hash < 0 ? target : target.substring(0, hash));
        String anchor = hash < 0 ? "" : decode(target.substring(hash + 1));
        Path resolved = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
        if (!resolved.startsWith(root)) {
            return "points outside the repository";
        }
        if (!Files.exists(resolved)) {
            return "no such file";
        }
        if (!anchor.isEmpty() && resolved.toString().endsWith(".md") && Files.isRegularFile(resolved)
                && !anchors.computeIfAbsent(resolved, p -> headings(read(p))).contains(anchor)) {
            return name(root, resolved) + " has no heading #" + anchor;
        }
        return null;
    }

    // ---- Markdown, as far as links and headings go -----------------------------------------------------------------

    static final Pattern FENCE = Pattern.compile("^\\s*(```|~~~)");
    static final Pattern CODE_SPAN = Pattern.compile("(`+)(.+?)\\1", Pattern.DOTALL);
    static final Pattern LINK = Pattern.compile("!?\\[(?:[^\\[\\]]|\\[[^\\[\\]]*\\])*\\]\\(\\s*(<[^>]*>|[^)\\s]+)(?:\\s+\"[^\"]*\")?\\s*\\)");
    static final Pattern DEFINITION = Pattern.compile("(?m)^ {0,3}\\[[^\\]]+\\]:\\s*(\\S+)");
    static final Pattern HEADING = Pattern.compile("^ {0,3}(#{1,6})\\s+(.*?)\\s*#*\\s*$");

    /** Every link of the page outside code (fenced blocks and code spans), as written: "[text](target)". */
    static List<String> links(String markdown) {
        List<String> links = new ArrayList<>();
        for (String paragraph : prose(markdown).split("\\n\\s*\\n")) {
            String text = CODE_SPAN.matcher(paragraph).replaceAll("code");
            Matcher link = LINK.matcher(text);
            while (link.find()) {
                links.add(link.group().replaceAll("\\s+", " "));
            }
            Matcher definition = DEFINITION.matcher(text);
            while (definition.find()) {
                links.add("[](" + definition.group(1) + ")");
            }
        }
        return links;
    }

    /** The target of "[text](target)", without angle brackets; null when there is none. */
    static String destination(String link) {
        Matcher m = LINK.matcher(link);
        if (!m.matches()) {
            return null;
        }
        String target = m.group(1);
        return target.startsWith("<") ? target.substring(1, target.length() - 1) : target;
    }

    static boolean external(String target) {
        return target.matches("(?i)^[a-z][a-z0-9+.-]*:.*") || target.startsWith("//");
    }

    /** The anchors of the page's headings (ATX headings outside fenced code), as GitHub makes them. */
    static Set<String> headings(String markdown) {
        Set<String> anchors = new LinkedHashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String line : prose(markdown).split("\\n")) {
            Matcher heading = HEADING.matcher(line);
            if (heading.matches()) {
                String slug = slug(heading.group(2));
                int n = seen.merge(slug, 1, Integer::sum) - 1;
                anchors.add(n == 0 ? slug : slug + "-" + n);
            }
        }
        return anchors;
    }

    /** GitHub's anchor of a heading: its text as shown, lower case, punctuation dropped, each space a hyphen. */
    static String slug(String heading) {
        String text = heading.replaceAll("!?\\[([^\\]]*)\\]\\([^)]*\\)", "$1").replace("`", "").toLowerCase(Locale.ROOT);
        StringBuilder slug = new StringBuilder();
        text.codePoints().forEach(c -> {
            if (c == ' ') {
                slug.append('-');
            } else if (Character.isLetterOrDigit(c) || c == '-' || c == '_'
                    || Character.getType(c) == Character.NON_SPACING_MARK || Character.getType(c) == Character.COMBINING_SPACING_MARK) {
                slug.appendCodePoint(c);
            }
        });
        return slug.toString();
    }

    /** The page with every fenced code block blanked out (its lines kept, empty). */
    static String prose(String markdown) {
        StringBuilder prose = new StringBuilder();
        boolean fenced = false;
        for (String line : markdown.split("\\n", -1)) {
            if (FENCE.matcher(line).find()) {
                fenced = !fenced;
                prose.append('\n');
            } else {
                prose.append(fenced ? "" : line).append('\n');
            }
        }
        return prose.toString();
    }

    static String decode(String s) {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    static String name(Path root, Path page) {
        return root.relativize(page).toString().replace('\\', '/');
    }

    static String read(Path page) {
        try {
            return Files.readString(page, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Path> list(Path dir) {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

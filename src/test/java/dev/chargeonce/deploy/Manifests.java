package dev.chargeonce.deploy;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Every YAML document under {@code k8s/}, each with the file it came from (relative to {@code k8s/}, with '/'),
 * parsed strictly: a duplicate key fails the load instead of silently keeping the last value.
 */
final class Manifests {

    static final Path K8S = Path.of("k8s");

    private static final YAMLMapper YAML = YAMLMapper.builder().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION).build();

    /** One YAML document: its file relative to k8s/ ("base/deployment.yaml"), its index in the file, its body. */
    record Document(String file, int index, ObjectNode body) {

        String kind() {
            return body.path("kind").asText("");
        }

        String apiVersion() {
            return body.path("apiVersion").asText("");
        }

        String name() {
            return body.path("metadata").path("name").asText("");
        }

        @Override
        public String toString() {
            return file + "#" + index + " (" + kind() + "/" + name() + ")";
        }
    }

    private final List<Document> documents;

    private Manifests(List<Document> documents) {
        this.documents = documents;
    }

    static Manifests load(Path root) {
        List<Document> documents = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.filter(Manifests::isManifest).sorted().toList()) {
                documents.addAll(parse(root.relativize(file).toString().replace('\\', '/'), Files.readString(file)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return new Manifests(documents);
    }

    private static boolean isManifest(Path file) {
        String name = file.getFileName().toString();
        boolean yaml = name.endsWith(".yaml") || name.endsWith(".yml");
        return yaml && Files.isRegularFile(file) && !file.toString().contains("node_modules");
    }

    static List<Document> parse(String file, String yaml) {
        List<Document> documents = new ArrayList<>();
        try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(yaml)) {
            int index = 0;
            while (it.hasNextValue()) {
                JsonNode node = it.nextValue();
                if (node instanceof ObjectNode object) {
                    documents.add(new Document(file, index, object));
                } else if (node != null && !node.isNull() && !node.isMissingNode()) {
                    throw new IllegalArgumentException(file + "#" + index + " is not a mapping: " + node);
                }
                index++;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(file + " is not valid YAML", e);
        }
        return documents;
    }

    /** A deep copy, for tests that break one document and check that a rule notices. */
    Manifests copy() {
        return new Manifests(documents.stream().map(d -> new Document(d.file(), d.index(), d.body().deepCopy())).toList());
    }

    List<Document> all() {
        return documents;
    }

    List<Document> inFile(String file) {
        return documents.stream().filter(d -> d.file().equals(file)).toList();
    }

    List<Document> inFiles(List<String> files) {
        return documents.stream().filter(d -> files.contains(d.file())).toList();
    }

    /** The one document of this kind among these; fails when there is none or more than one. */
    static Document single(List<Document> documents, String kind) {
        List<Document> matches = documents.stream().filter(d -> d.kind().equals(kind)).toList();
        if (matches.size() != 1) {
            throw new AssertionError("expected exactly one " + kind + ", found " + matches);
        }
        return matches.get(0);
    }

    static List<Document> ofKind(List<Document> documents, String kind) {
        return documents.stream().filter(d -> d.kind().equals(kind)).toList();
    }
}

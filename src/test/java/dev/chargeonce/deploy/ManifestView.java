package dev.chargeonce.deploy;

import static dev.chargeonce.deploy.Manifests.single;

import com.fasterxml.jackson.databind.JsonNode;
import dev.chargeonce.deploy.Manifests.Document;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.StreamSupport;

/**
 * The manifests under {@code k8s/} as the service they deploy sees them: the base's resources by kind, the
 * Deployment's pod and container, its environment (ConfigMap and Secret references followed), application.properties
 * with that environment on top, and the ports and paths that follow from it. No rule of its own: the rules read the
 * manifests through it ({@link ManifestChecks}, {@link NetworkAndMonitoringChecks}).
 */
abstract class ManifestView {

    static final String BASE_KUSTOMIZATION = "base/kustomization.yaml";
    static final String SECRET_TEMPLATE = "base/secret.template.yaml";
    static final String OVERLAY_KUSTOMIZATION = "overlays/production/kustomization.yaml";

    final Manifests manifests;
    final QuarkusProperties applicationProperties;
    final String dockerfile;
    final String mainSources;

    /**
     * @param applicationProperties application.properties for the prod profile
     * @param dockerfile            the text of src/main/docker/Dockerfile.jvm
     * @param mainSources           the text of src/main/java, where metric names are registered
     */
    ManifestView(Manifests manifests, QuarkusProperties applicationProperties, String dockerfile, String mainSources) {
        this.manifests = manifests;
        this.applicationProperties = applicationProperties;
        this.dockerfile = dockerfile;
        this.mainSources = mainSources;
    }

    // --- Accessors -----------------------------------------------------------------------------------------------

    /**
     * The base's resources but the Grafana dashboards (ConfigMaps for Grafana's sidecar, not for the service: they
     * are checked by DashboardTest and k8s/validate.mjs).
     */
    List<Document> baseResources() {
        return allBaseResources().stream().filter(d -> !isDashboard(d)).toList();
    }

    private List<Document> allBaseResources() {
        Document kustomization = single(manifests.inFile(BASE_KUSTOMIZATION), "Kustomization");
        return manifests.inFiles(texts(kustomization.body().path("resources")).stream().map(r -> "base/" + r).toList());
    }

    static boolean isDashboard(Document d) {
        return d.kind().equals("ConfigMap") && d.body().at("/metadata/labels/grafana_dashboard").isTextual();
    }

    /** The dashboards of the base (exactly one is expected: see {@link ManifestChecks#kinds}). */
    List<Document> dashboards() {
        return allBaseResources().stream().filter(ManifestView::isDashboard).toList();
    }

    Document deployment() {
        return single(baseResources(), "Deployment");
    }

    Document service() {
        return single(baseResources(), "Service");
    }

    Document configMap() {
        return single(baseResources(), "ConfigMap");
    }

    Document hpa() {
        return single(baseResources(), "HorizontalPodAutoscaler");
    }

    Document pdb() {
        return single(baseResources(), "PodDisruptionBudget");
    }

    Document networkPolicyDocument() {
        return single(baseResources(), "NetworkPolicy");
    }

    Document serviceMonitor() {
        return single(baseResources(), "ServiceMonitor");
    }

    Document prometheusRule() {
        return single(baseResources(), "PrometheusRule");
    }

    Document cluster() {
        return single(baseResources(), "Cluster");
    }

    JsonNode podSpec() {
        return deployment().body().at("/spec/template/spec");
    }

    JsonNode container() {
        JsonNode containers = podSpec().path("containers");
        if (containers.size() != 1) {
            throw new AssertionError("expected one container in the Deployment, found " + containers.size());
        }
        return containers.get(0);
    }

    /** application.properties as the pod sees it: with the Deployment's environment on top. */
    QuarkusProperties effectiveProperties() {
        return applicationProperties.withEnvironment(podEnvironment(new Problems()));
    }

    int httpPort() {
        return effectiveProperties().value("quarkus.http.port").map(Integer::parseInt).orElse(8080);
    }

    boolean managementEnabled() {
        return Boolean.parseBoolean(applicationProperties.value("quarkus.management.enabled").orElse("false"));
    }

    int managementPort() {
        return effectiveProperties().value("quarkus.management.port").map(Integer::parseInt).orElse(9000);
    }

    /** Where health and metrics are served: under the management interface's root path when it is enabled. */
    String managementRoot() {
        return managementEnabled() ? "/" + trimSlashes(applicationProperties.value("quarkus.management.root-path").orElse("q"))
                : "/" + trimSlashes(applicationProperties.value("quarkus.http.non-application-root-path").orElse("q"));
    }

    /** The container port a probe's or Service's port refers to: a number, or the name of a container port. */
    OptionalInt containerPort(JsonNode reference) {
        if (reference.isInt()) {
            return OptionalInt.of(reference.asInt());
        }
        for (JsonNode port : container().path("ports")) {
            if (reference.isTextual() && port.path("name").asText().equals(reference.asText())) {
                return OptionalInt.of(port.path("containerPort").asInt());
            }
        }
        return OptionalInt.empty();
    }

    /**
     * The container's environment: name -> value, where a value from a Secret reads {@code <secret:name/key>}.
     * References that lead nowhere (missing ConfigMap, Secret or key) are problems.
     */
    Map<String, String> podEnvironment(Problems problems) {
        Map<String, String> environment = new LinkedHashMap<>();
        for (JsonNode from : container().path("envFrom")) {
            if (from.has("configMapRef")) {
                String name = from.at("/configMapRef/name").asText();
                Optional<Document> configMap = baseResources().stream().filter(d -> d.kind().equals("ConfigMap") && d.name().equals(name)).findFirst();
                problems.check(configMap.isPresent(), "envFrom ConfigMap %s is not in the base", name);
                configMap.ifPresent(c -> c.body().path("data").properties().forEach(e -> environment.put(e.getKey(), e.getValue().asText())));
            } else {
                problems.add("envFrom " + from + ": only ConfigMaps; secrets go by key (env[].valueFrom.secretKeyRef)");
            }
        }
        for (JsonNode env : container().path("env")) {
            String name = env.path("name").asText();
            JsonNode secretRef = env.at("/valueFrom/secretKeyRef");
            if (!secretRef.isMissingNode()) {
                String secret = secretRef.path("name").asText();
                String key = secretRef.path("key").asText();
                problems.check(secretTemplateKeys(secret).contains(key), "env %s: secret %s has no key %s in %s", name, secret, key, SECRET_TEMPLATE);
                environment.put(name, "<secret:" + secret + "/" + key + ">");
            } else if (env.has("value")) {
                environment.put(name, env.path("value").asText());
            } else {
                problems.add("env " + name + ": only plain values and secretKeyRef are expected");
            }
        }
        return environment;
    }

    Set<String> secretTemplateKeys(String secretName) {
        Set<String> keys = new HashSet<>();
        manifests.inFile(SECRET_TEMPLATE).stream().filter(d -> d.name().equals(secretName))
                .forEach(d -> d.body().path("stringData").properties().forEach(e -> keys.add(e.getKey())));
        return keys;
    }

    static String imageName(String image) {
        String withoutDigest = image.contains("@") ? image.substring(0, image.indexOf('@')) : image;
        int colon = withoutDigest.lastIndexOf(':');
        return colon > withoutDigest.lastIndexOf('/') ? withoutDigest.substring(0, colon) : withoutDigest;
    }

    /** A Kubernetes quantity as a number: CPU in cores ("250m" = 0.25), memory in bytes ("512Mi"). */
    static double quantity(String value) {
        Matcher m = Pattern.compile("([0-9.]+)(m|Ki|Mi|Gi|Ti|k|M|G|T)?").matcher(value);
        if (!m.matches()) {
            throw new AssertionError("not a quantity: " + value);
        }
        double amount = Double.parseDouble(m.group(1));
        String unit = m.group(2) == null ? "" : m.group(2);
        return amount * switch (unit) {
            case "m" -> 0.001;
            case "Ki" -> 1024d;
            case "Mi" -> 1024d * 1024;
            case "Gi" -> 1024d * 1024 * 1024;
            case "Ti" -> 1024d * 1024 * 1024 * 1024;
            case "k" -> 1e3;
            case "M" -> 1e6;
            case "G" -> 1e9;
            case "T" -> 1e12;
            default -> 1d;
        };
    }

    static String trimSlashes(String path) {
        return path.replaceAll("^/+|/+$", "");
    }

    static List<String> texts(JsonNode array) {
        return StreamSupport.stream(array.spliterator(), false).map(JsonNode::asText).toList();
    }

    /** A list of problems with a conditional add. */
    static final class Problems extends ArrayList<String> {

        void check(boolean ok, String format, Object... args) {
            if (!ok) {
                add(String.format(format, args));
            }
        }
    }
}

package dev.chargeonce.deploy;

import static dev.chargeonce.deploy.Manifests.single;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.chargeonce.deploy.Manifests.Document;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The rules the manifests under {@code k8s/} must follow, each a method that returns the problems it finds (empty:
 * the rule holds). Kept apart from the test so that a test can break an in-memory copy of the manifests and see
 * each rule fail. The workload's rules: kinds, kustomizations, labels, ports, probes, image, environment, security,
 * shutdown, capacity, database and secrets; the network policy's and monitoring's are
 * {@link NetworkAndMonitoringChecks}; both read the manifests through {@link ManifestView}.
 */
final class ManifestChecks extends ManifestView {

    /** apiVersion of every kind the base must hold, exactly once each. */
    static final Map<String, String> BASE_KINDS = Map.of(
            "ConfigMap", "v1",
            "Deployment", "apps/v1",
            "Service", "v1",
            "HorizontalPodAutoscaler", "autoscaling/v2",
            "PodDisruptionBudget", "policy/v1",
            "NetworkPolicy", "networking.k8s.io/v1",
            "ServiceMonitor", "monitoring.coreos.com/v1",
            "PrometheusRule", "monitoring.coreos.com/v1",
            "Cluster", "postgresql.cnpg.io/v1");

    /**
     * Quarkus properties the Deployment may set although application.properties does not mention them. The
     * {@code replica} datasource is the named read-replica datasource (quarkus.datasource.replica.*).
     */
    static final Set<String> KNOWN_QUARKUS_PROPERTIES = Set.of(
            "quarkus.profile",
            "quarkus.http.port",
            "quarkus.http.proxy.proxy-address-forwarding",
            "quarkus.http.proxy.allow-x-forwarded",
            "quarkus.http.proxy.trusted-proxies",
            "quarkus.log.level",
            "quarkus.datasource.jdbc.url",
            "quarkus.datasource.username",
            "quarkus.datasource.password",
            "quarkus.datasource.replica.active",
            "quarkus.datasource.replica.jdbc.url",
            "quarkus.datasource.replica.username",
            "quarkus.datasource.replica.password",
            "quarkus.flyway.migrate-at-start");

    /** Variables read by the base image's run-java.sh: accepted when Dockerfile.jvm documents them. */
    private static final Pattern IMAGE_VARIABLE = Pattern.compile("(JAVA|GC|CONTAINER)_[A-Z0-9_]+");

    ManifestChecks(Manifests manifests, QuarkusProperties applicationProperties, String dockerfile, String mainSources) {
        super(manifests, applicationProperties, dockerfile, mainSources);
    }

    // --- Kinds and kustomizations --------------------------------------------------------------------------------

    List<String> kinds() {
        Problems problems = new Problems();
        Map<String, Integer> counts = new HashMap<>();
        for (Document d : baseResources()) {
            counts.merge(d.kind(), 1, Integer::sum);
            String expected = BASE_KINDS.get(d.kind());
            problems.check(expected != null, "%s: kind %s does not belong in the base", d, d.kind());
            problems.check(expected == null || expected.equals(d.apiVersion()), "%s: apiVersion %s, expected %s", d, d.apiVersion(), expected);
        }
        BASE_KINDS.keySet().forEach(kind -> problems.check(counts.getOrDefault(kind, 0) == 1,
                "base must hold exactly one %s, holds %d", kind, counts.getOrDefault(kind, 0)));
        problems.check(dashboards().size() == 1, "base must hold exactly one Grafana dashboard (a ConfigMap labelled grafana_dashboard), holds %d",
                dashboards().size());
        for (Document d : manifests.all()) {
            boolean kustomization = d.file().endsWith("kustomization.yaml");
            boolean known = kustomization ? d.apiVersion().startsWith("kustomize.config.k8s.io/") && d.kind().equals("Kustomization")
                    : d.apiVersion().equals(BASE_KINDS.get(d.kind())) || (d.kind().equals("Secret") && d.apiVersion().equals("v1"));
            problems.check(known, "%s: unexpected apiVersion/kind %s/%s", d, d.apiVersion(), d.kind());
            problems.check(kustomization || !d.name().isEmpty(), "%s: metadata.name missing", d);
        }
        return problems;
    }

    List<String> kustomizations() {
        Problems problems = new Problems();
        Document base = single(manifests.inFile(BASE_KUSTOMIZATION), "Kustomization");
        Set<String> resources = new TreeSet<>(texts(base.body().path("resources")));
        Set<String> baseFiles = new TreeSet<>();
        manifests.all().stream().map(Document::file).filter(f -> f.startsWith("base/")).forEach(f -> baseFiles.add(f.substring("base/".length())));
        baseFiles.remove("kustomization.yaml");
        baseFiles.remove(SECRET_TEMPLATE.substring("base/".length()));
        problems.check(resources.equals(baseFiles), "%s resources %s must list exactly the base manifests %s", BASE_KUSTOMIZATION, resources, baseFiles);
        problems.check(!resources.contains("secret.template.yaml"),
                "the secret template must not be a kustomize resource: `kubectl apply -k` would overwrite real secrets with placeholders");

        Document overlay = single(manifests.inFile(OVERLAY_KUSTOMIZATION), "Kustomization");
        problems.check(texts(overlay.body().path("resources")).contains("../../base"), "%s must build on ../../base", OVERLAY_KUSTOMIZATION);
        for (JsonNode patch : overlay.body().path("patches")) {
            String file = "overlays/production/" + patch.path("path").asText();
            List<Document> patchDocuments = manifests.inFile(file);
            problems.check(!patchDocuments.isEmpty(), "%s: patch %s does not exist", OVERLAY_KUSTOMIZATION, file);
            for (Document p : patchDocuments) {
                boolean targetExists = baseResources().stream().anyMatch(d -> d.kind().equals(p.kind()) && d.name().equals(p.name()));
                problems.check(targetExists, "%s patches %s/%s, which the base does not have", p, p.kind(), p.name());
            }
        }
        for (JsonNode replicas : overlay.body().path("replicas")) {
            problems.check(replicas.path("name").asText().equals(deployment().name()),
                    "%s: replicas for %s, but the Deployment is %s", OVERLAY_KUSTOMIZATION, replicas.path("name").asText(), deployment().name());
        }
        return problems;
    }

    // --- Labels and selectors ------------------------------------------------------------------------------------

    List<String> labelsAndSelectors() {
        Problems problems = new Problems();
        JsonNode podLabels = deployment().body().at("/spec/template/metadata/labels");
        problems.addAll(selects("Deployment spec.selector", deployment().body().at("/spec/selector/matchLabels"), podLabels));
        problems.check(!deployment().body().at("/spec/selector").has("matchExpressions"), "Deployment selector: use matchLabels only");
        problems.addAll(selects("Service spec.selector", service().body().at("/spec/selector"), podLabels));
        problems.addAll(selects("PodDisruptionBudget selector", pdb().body().at("/spec/selector/matchLabels"), podLabels));
        problems.addAll(selects("NetworkPolicy podSelector", networkPolicyDocument().body().at("/spec/podSelector/matchLabels"), podLabels));
        for (JsonNode constraint : podSpec().path("topologySpreadConstraints")) {
            problems.addAll(selects("topologySpreadConstraints labelSelector", constraint.at("/labelSelector/matchLabels"), podLabels));
        }
        // The ServiceMonitor selects Services, not pods.
        problems.addAll(selects("ServiceMonitor selector", serviceMonitor().body().at("/spec/selector/matchLabels"), service().body().at("/metadata/labels")));
        JsonNode target = hpa().body().at("/spec/scaleTargetRef");
        problems.check(target.path("kind").asText().equals("Deployment") && target.path("apiVersion").asText().equals("apps/v1")
                && target.path("name").asText().equals(deployment().name()),
                "HorizontalPodAutoscaler scaleTargetRef %s must be apps/v1 Deployment %s", target, deployment().name());
        return problems;
    }

    /** Problems unless every label of the (non-empty) selector is on the target with the same value. */
    static List<String> selects(String what, JsonNode selector, JsonNode labels) {
        Problems problems = new Problems();
        if (!selector.isObject() || selector.isEmpty()) {
            problems.add(what + " is empty or missing: it would select everything (or nothing)");
            return problems;
        }
        selector.properties().forEach(e -> problems.check(e.getValue().asText().equals(labels.path(e.getKey()).asText(null)),
                "%s: %s=%s is not among the labels %s", what, e.getKey(), e.getValue().asText(), labels));
        return problems;
    }

    // --- Ports and probes ----------------------------------------------------------------------------------------

    List<String> ports() {
        Problems problems = new Problems();
        int httpPort = httpPort();
        int managementPort = managementPort();
        problems.check(managementEnabled(), "quarkus.management.enabled must be true: health and metrics belong on the management port");
        JsonNode ports = container().path("ports");
        problems.check(ports.size() == 2, "the container exposes %d ports, expected the HTTP port and the management port", ports.size());
        problems.check(containerPort(TextNode.valueOf("http")).orElse(-1) == httpPort,
                "container port `http` must be quarkus.http.port %d, is %s", httpPort, ports);
        problems.check(containerPort(TextNode.valueOf("management")).orElse(-1) == managementPort,
                "container port `management` must be quarkus.management.port %d, is %s", managementPort, ports);
        JsonNode servicePorts = service().body().at("/spec/ports");
        problems.check(!servicePorts.isEmpty(), "the Service has no ports");
        for (JsonNode port : servicePorts) {
            int target = containerPort(port.path("targetPort")).orElse(-1);
            problems.check(target == httpPort || target == managementPort,
                    "Service port %s: targetPort must lead to container port %d (API) or %d (management)", port, httpPort, managementPort);
        }
        // Health is served on the management interface only: a probe on the API port gets a 404 and kills the pod.
        for (String probe : List.of("startupProbe", "readinessProbe", "livenessProbe")) {
            JsonNode port = container().path(probe).at("/httpGet/port");
            problems.check(containerPort(port).orElse(-1) == managementPort, "%s port %s must be the management port %d", probe, port, managementPort);
        }
        return problems;
    }

    List<String> probes() {
        Problems problems = new Problems();
        String health = managementRoot() + "/" + trimSlashes(applicationProperties.value("quarkus.smallrye-health.root-path").orElse("health"));
        Map<String, String> expected = new LinkedHashMap<>();
        expected.put("startupProbe", health + "/" + trimSlashes(applicationProperties.value("quarkus.smallrye-health.startup-path").orElse("started")));
        expected.put("readinessProbe", health + "/" + trimSlashes(applicationProperties.value("quarkus.smallrye-health.readiness-path").orElse("ready")));
        expected.put("livenessProbe", health + "/" + trimSlashes(applicationProperties.value("quarkus.smallrye-health.liveness-path").orElse("live")));
        expected.forEach((probe, path) -> {
            JsonNode httpGet = container().path(probe).path("httpGet");
            problems.check(path.equals(httpGet.path("path").asText()), "%s must GET %s, gets %s", probe, path, httpGet.path("path"));
            problems.check(container().path(probe).path("timeoutSeconds").asInt(1) >= 1, "%s: timeoutSeconds must be >= 1", probe);
        });
        // Start-up includes Flyway waiting on another pod's migration lock: give it a real budget.
        JsonNode startup = container().path("startupProbe");
        int startupBudget = startup.path("periodSeconds").asInt(10) * startup.path("failureThreshold").asInt(3);
        problems.check(startupBudget >= 60, "startupProbe allows %d s, expected >= 60 s (Flyway may wait for another pod's migration)", startupBudget);
        return problems;
    }

    // --- Images and environment ----------------------------------------------------------------------------------

    List<String> images() {
        Problems problems = new Problems();
        String image = container().path("image").asText();
        String imageName = imageName(image);
        problems.check(!image.isEmpty() && !image.endsWith(":latest") && image.contains(":"), "base image %s must carry an explicit tag", image);
        Document overlay = single(manifests.inFile(OVERLAY_KUSTOMIZATION), "Kustomization");
        JsonNode images = overlay.body().path("images");
        problems.check(!images.isEmpty(), "%s must pin the image", OVERLAY_KUSTOMIZATION);
        for (JsonNode entry : images) {
            problems.check(entry.path("name").asText().equals(imageName),
                    "%s images[].name %s must equal the base image name %s, or kustomize changes nothing", OVERLAY_KUSTOMIZATION, entry.path("name").asText(), imageName);
            String tag = entry.path("newTag").asText(entry.path("digest").asText(""));
            problems.check(!tag.isEmpty() && !tag.equals("latest"), "%s: overlay image needs a fixed newTag or digest", OVERLAY_KUSTOMIZATION);
        }
        return problems;
    }

    List<String> environment() {
        Problems problems = new Problems();
        Set<String> meaningful = applicationProperties.environmentVariableNames();
        Set<String> knownQuarkus = new HashSet<>();
        KNOWN_QUARKUS_PROPERTIES.forEach(p -> knownQuarkus.add(QuarkusProperties.envName(p)));
        Map<String, String> environment = podEnvironment(problems);
        for (String name : environment.keySet()) {
            boolean imageVariable = IMAGE_VARIABLE.matcher(name).matches() && Pattern.compile("\\b" + name + "\\b").matcher(dockerfile).find();
            problems.check(meaningful.contains(name) || knownQuarkus.contains(name) || imageVariable,
                    "env %s means nothing to the service: not in application.properties (as property or ${%s}), not a known Quarkus property, "
                            + "not a variable Dockerfile.jvm documents", name, name);
        }
        for (String required : applicationProperties.requiredEnvironmentVariables()) {
            problems.check(environment.containsKey(required), "application.properties needs ${%s} in prod, the Deployment does not set it", required);
        }
        problems.check("prod".equals(environment.get("QUARKUS_PROFILE")), "QUARKUS_PROFILE must be prod, is %s", environment.get("QUARKUS_PROFILE"));
        return problems;
    }

    // --- Security and shutdown -----------------------------------------------------------------------------------

    List<String> securityContext() {
        Problems problems = new Problems();
        JsonNode pod = podSpec().path("securityContext");
        JsonNode c = container().path("securityContext");
        problems.check(pod.path("runAsNonRoot").asBoolean(false) || c.path("runAsNonRoot").asBoolean(false), "runAsNonRoot must be true");
        JsonNode uid = c.has("runAsUser") ? c.path("runAsUser") : pod.path("runAsUser");
        problems.check(uid.isIntegralNumber() && uid.asInt() > 0, "runAsUser must be a non-zero number, is %s", uid);
        Matcher dockerUser = Pattern.compile("(?m)^USER\\s+(\\S+)").matcher(dockerfile);
        String imageUser = null;
        while (dockerUser.find()) {
            imageUser = dockerUser.group(1);
        }
        problems.check(uid.asText().equals(imageUser), "runAsUser %s must be the image's USER %s", uid, imageUser);
        problems.check(c.has("allowPrivilegeEscalation") && !c.path("allowPrivilegeEscalation").asBoolean(true), "allowPrivilegeEscalation must be false");
        problems.check(c.path("readOnlyRootFilesystem").asBoolean(false), "readOnlyRootFilesystem must be true");
        problems.check(!c.path("privileged").asBoolean(false), "the container must not be privileged");
        problems.check(texts(c.at("/capabilities/drop")).contains("ALL"), "capabilities.drop must contain ALL");
        problems.check(c.at("/capabilities/add").isMissingNode() || c.at("/capabilities/add").isEmpty(), "no capabilities may be added");
        String seccomp = c.at("/seccompProfile/type").asText(pod.at("/seccompProfile/type").asText(""));
        problems.check(seccomp.equals("RuntimeDefault"), "seccompProfile must be RuntimeDefault, is '%s'", seccomp);
        problems.check(!podSpec().path("hostNetwork").asBoolean(false) && !podSpec().path("hostPID").asBoolean(false), "no host namespaces");
        // A read-only root needs a writable java.io.tmpdir.
        String tmpVolume = null;
        for (JsonNode mount : container().path("volumeMounts")) {
            if (mount.path("mountPath").asText().equals("/tmp")) {
                tmpVolume = mount.path("name").asText();
            }
        }
        boolean emptyDir = false;
        for (JsonNode volume : podSpec().path("volumes")) {
            emptyDir |= volume.path("name").asText().equals(tmpVolume) && volume.has("emptyDir");
        }
        problems.check(emptyDir, "/tmp must be an emptyDir volume (read-only root filesystem)");
        return problems;
    }

    List<String> shutdown() {
        Problems problems = new Problems();
        QuarkusProperties effective = effectiveProperties();
        Duration grace = effective.duration("chargeonce.shutdown.grace");
        Duration httpDrain = effective.value("quarkus.shutdown.timeout").map(QuarkusProperties::parseDuration).orElse(Duration.ZERO);
        int preStop = preStopSleepSeconds();
        problems.check(preStop >= 5, "a preStop sleep of at least 5 s must cover endpoint removal, found %d s", preStop);
        long termination = podSpec().path("terminationGracePeriodSeconds").asLong(30);
        // Quarkus drains HTTP (quarkus.shutdown.timeout) and then fires ShutdownEvent (GracefulShutdown waits for
        // chargeonce.shutdown.grace): one after the other. The preStop sleep runs before SIGTERM, inside the period.
        long needed = preStop + httpDrain.toSeconds() + grace.toSeconds();
        problems.check(termination > needed, "terminationGracePeriodSeconds %d must exceed preStop %d s + quarkus.shutdown.timeout %s + chargeonce.shutdown.grace %s",
                termination, preStop, httpDrain, grace);
        problems.check(termination > grace.toSeconds(), "terminationGracePeriodSeconds %d must exceed chargeonce.shutdown.grace %s", termination, grace);
        return problems;
    }

    int preStopSleepSeconds() {
        JsonNode preStop = container().at("/lifecycle/preStop");
        if (preStop.has("sleep")) {
            return preStop.at("/sleep/seconds").asInt(0);
        }
        List<String> command = texts(preStop.at("/exec/command"));
        if (command.size() == 2 && command.get(0).endsWith("sleep") && command.get(1).matches("\\d+")) {
            return Integer.parseInt(command.get(1));
        }
        return 0;
    }

    // --- Capacity: replicas, autoscaling, disruption, resources, database connections -----------------------------

    List<String> capacity() {
        Problems problems = new Problems();
        int replicas = deployment().body().at("/spec/replicas").asInt(1);
        int min = hpa().body().at("/spec/minReplicas").asInt(1);
        int max = hpa().body().at("/spec/maxReplicas").asInt(0);
        problems.check(replicas >= 2, "several replicas expected, Deployment has %d", replicas);
        problems.check(min >= 2 && min <= max, "HPA minReplicas %d must be >= 2 and <= maxReplicas %d", min, max);
        problems.check(!hpa().body().at("/spec/metrics").isEmpty(), "the HPA needs a metric");
        JsonNode pdb = pdb().body().path("spec");
        if (pdb.has("maxUnavailable")) {
            problems.check(pdb.path("maxUnavailable").isInt() && pdb.path("maxUnavailable").asInt() >= 1 && pdb.path("maxUnavailable").asInt() < min,
                    "PDB maxUnavailable %s must be >= 1 (drains must progress) and < minReplicas %d", pdb.path("maxUnavailable"), min);
        } else {
            problems.check(pdb.path("minAvailable").asInt(Integer.MAX_VALUE) < min, "PDB minAvailable must be < minReplicas %d", min);
        }
        problems.check(deployment().body().at("/spec/strategy/rollingUpdate/maxUnavailable").asInt(-1) == 0,
                "rollouts must not reduce capacity (maxUnavailable 0)");
        problems.addAll(resources("base Deployment", container().path("resources")));
        for (Document patch : manifests.all()) {
            if (patch.file().startsWith("overlays/") && patch.kind().equals("Deployment")) {
                for (JsonNode c : patch.body().at("/spec/template/spec/containers")) {
                    if (c.has("resources")) {
                        problems.addAll(resources(patch.toString(), c.path("resources")));
                    }
                }
            }
            if (patch.file().startsWith("overlays/") && patch.kind().equals("HorizontalPodAutoscaler")) {
                int overlayMax = patch.body().at("/spec/maxReplicas").asInt(max);
                problems.check(patch.body().at("/spec/minReplicas").asInt(min) <= overlayMax, "%s: minReplicas above maxReplicas", patch);
                problems.addAll(connectionBudget(overlayMax));
            }
        }
        problems.addAll(connectionBudget(max));
        return problems;
    }

    /** The primary's connections: every pod's pool at its maximum, with one extra pod during a rollout. */
    private List<String> connectionBudget(int maxReplicas) {
        Problems problems = new Problems();
        int surge = deployment().body().at("/spec/strategy/rollingUpdate/maxSurge").asInt(1);
        int pool = effectiveProperties().value("quarkus.datasource.jdbc.max-size").map(Integer::parseInt).orElse(20);
        String maxConnections = cluster().body().at("/spec/postgresql/parameters/max_connections").asText("100");
        int reserved = 20; // superuser slots, the operator, monitoring, a human with psql
        int needed = (maxReplicas + surge) * pool;
        problems.check(needed <= Integer.parseInt(maxConnections) - reserved,
                "(maxReplicas %d + maxSurge %d) x pool %d = %d connections, but the primary's max_connections %s leaves %d",
                maxReplicas, surge, pool, needed, maxConnections, Integer.parseInt(maxConnections) - reserved);
        return problems;
    }

    static List<String> resources(String where, JsonNode resources) {
        Problems problems = new Problems();
        for (String resource : List.of("cpu", "memory")) {
            JsonNode request = resources.at("/requests/" + resource);
            JsonNode limit = resources.at("/limits/" + resource);
            problems.check(!request.isMissingNode() && !limit.isMissingNode(), "%s: %s needs a request and a limit", where, resource);
            if (!request.isMissingNode() && !limit.isMissingNode()) {
                problems.check(quantity(limit.asText()) >= quantity(request.asText()), "%s: %s limit %s below request %s", where, resource, limit.asText(), request.asText());
            }
        }
        return problems;
    }

    // --- Database ------------------------------------------------------------------------------------------------

    List<String> database() {
        Problems problems = new Problems();
        Map<String, String> environment = podEnvironment(new Problems());
        String cluster = cluster().name();
        String database = cluster().body().at("/spec/bootstrap/initdb/database").asText();
        String owner = cluster().body().at("/spec/bootstrap/initdb/owner").asText();
        String credentials = cluster().body().at("/spec/bootstrap/initdb/secret/name").asText();
        problems.addAll(jdbcUrl("QUARKUS_DATASOURCE_JDBC_URL", environment.get("QUARKUS_DATASOURCE_JDBC_URL"), cluster + "-rw", database));
        problems.addAll(jdbcUrl("QUARKUS_DATASOURCE_REPLICA_JDBC_URL", environment.get("QUARKUS_DATASOURCE_REPLICA_JDBC_URL"), cluster + "-ro", database));
        problems.check("true".equals(environment.get("QUARKUS_DATASOURCE_REPLICA_ACTIVE")), "QUARKUS_DATASOURCE_REPLICA_ACTIVE must be true");
        for (String prefix : List.of("QUARKUS_DATASOURCE_", "QUARKUS_DATASOURCE_REPLICA_")) {
            problems.check(("<secret:" + credentials + "/username>").equals(environment.get(prefix + "USERNAME")),
                    "%sUSERNAME must come from the Cluster's credentials %s/username, is %s", prefix, credentials, environment.get(prefix + "USERNAME"));
            problems.check(("<secret:" + credentials + "/password>").equals(environment.get(prefix + "PASSWORD")),
                    "%sPASSWORD must come from the Cluster's credentials %s/password", prefix, credentials);
        }
        Optional<Document> secret = manifests.inFile(SECRET_TEMPLATE).stream().filter(d -> d.name().equals(credentials)).findFirst();
        problems.check(secret.isPresent(), "the Cluster's credentials %s are not in %s", credentials, SECRET_TEMPLATE);
        secret.ifPresent(s -> {
            problems.check(s.body().path("type").asText().equals("kubernetes.io/basic-auth"), "%s must be kubernetes.io/basic-auth (CloudNativePG requires it)", s);
            problems.check(s.body().at("/stringData/username").asText().equals(owner), "%s username must be the database owner %s", s, owner);
        });
        int instances = cluster().body().at("/spec/instances").asInt(0);
        problems.check(instances >= 2, "the Cluster needs a standby for the -ro service, has %d instances", instances);
        return problems;
    }

    private static List<String> jdbcUrl(String variable, String url, String host, String database) {
        Problems problems = new Problems();
        if (url == null || !url.startsWith("jdbc:postgresql://")) {
            problems.add(variable + " must be a jdbc:postgresql:// URL, is " + url);
            return problems;
        }
        URI uri = URI.create(url.substring("jdbc:".length()));
        problems.check(host.equals(uri.getHost()), "%s host must be %s, is %s", variable, host, uri.getHost());
        problems.check(uri.getPort() == -1 || uri.getPort() == 5432, "%s port must be 5432 (the NetworkPolicy's), is %d", variable, uri.getPort());
        problems.check(("/" + database).equals(uri.getPath()), "%s database must be %s, is %s", variable, database, uri.getPath());
        return problems;
    }

    // --- Secrets -------------------------------------------------------------------------------------------------

    List<String> secretTemplate() {
        Problems problems = new Problems();
        for (Document d : manifests.all()) {
            problems.check(!d.kind().equals("Secret") || d.file().equals(SECRET_TEMPLATE), "%s: Secrets live only in %s (placeholders)", d, SECRET_TEMPLATE);
        }
        List<Document> secrets = manifests.inFile(SECRET_TEMPLATE);
        problems.check(!secrets.isEmpty(), "%s holds no Secret", SECRET_TEMPLATE);
        for (Document secret : secrets) {
            problems.check(secret.kind().equals("Secret"), "%s is not a Secret", secret);
            problems.check(!secret.body().has("data"), "%s: base64 `data` could hide a real value; placeholders go in stringData", secret);
            secret.body().path("stringData").properties().forEach(e -> {
                boolean basicAuthUser = secret.body().path("type").asText().equals("kubernetes.io/basic-auth") && e.getKey().equals("username");
                problems.check(basicAuthUser || e.getValue().asText().startsWith("REPLACE_ME"),
                        "%s: %s must be a REPLACE_ME placeholder, never a real value", secret, e.getKey());
            });
        }
        Set<String> keys = secretTemplateKeys("chargeonce-secrets");
        for (String key : List.of("STRIPE_API_KEY", "STRIPE_WEBHOOK_SECRET", "CHARGEONCE_CLIENTS")) {
            problems.check(keys.contains(key), "the secret template must have a %s placeholder", key);
        }
        return problems;
    }
}

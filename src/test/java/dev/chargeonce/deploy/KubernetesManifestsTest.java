package dev.chargeonce.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.chargeonce.deploy.Manifests.Document;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * Validates every manifest under {@code k8s/} against the service it deploys: kinds, labels and selectors, ports,
 * probes, image, environment names (against application.properties), security context, shutdown timing, capacity,
 * database wiring, secrets, network policy and monitoring. The {@link Broken} tests break an in-memory copy for
 * each rule and check that the rule notices: a rule that cannot fail proves nothing. Type validation against the
 * Kubernetes API schemas is k8s/validate.mjs (run by .ci/run).
 */
class KubernetesManifestsTest {

    static Manifests manifests;
    static QuarkusProperties properties;
    static String applicationPropertiesText;
    static String dockerfile;
    static String mainSources;

    @BeforeAll
    static void load() throws IOException {
        manifests = Manifests.load(Manifests.K8S);
        applicationPropertiesText = Files.readString(QuarkusProperties.APPLICATION_PROPERTIES);
        properties = QuarkusProperties.parse(applicationPropertiesText, "prod");
        dockerfile = Files.readString(DockerfileIT.DOCKERFILE);
        try (Stream<Path> files = Files.walk(Path.of("src", "main", "java"))) {
            mainSources = files.filter(f -> f.toString().endsWith(".java")).map(KubernetesManifestsTest::read).collect(Collectors.joining("\n"));
        }
    }

    static ManifestChecks checks(Manifests m) {
        return new ManifestChecks(m, properties, dockerfile, mainSources);
    }

    static NetworkAndMonitoringChecks networkAndMonitoringChecks(Manifests m) {
        return new NetworkAndMonitoringChecks(m, properties, dockerfile, mainSources);
    }

    @Test
    void manifestsAreThere() {
        // Guards every other test against passing on an empty directory.
        assertTrue(manifests.all().size() >= 14, "k8s/ holds " + manifests.all().size() + " documents");
        assertFalse(manifests.inFile(ManifestChecks.OVERLAY_KUSTOMIZATION).isEmpty());
    }

    @Test
    void kinds() {
        assertEquals(List.of(), checks(manifests).kinds());
    }

    @Test
    void kustomizations() {
        assertEquals(List.of(), checks(manifests).kustomizations());
    }

    @Test
    void labelsAndSelectorsMatch() {
        assertEquals(List.of(), checks(manifests).labelsAndSelectors());
    }

    @Test
    void portsAgree() {
        assertEquals(8080, checks(manifests).httpPort());
        assertEquals(9000, checks(manifests).managementPort());
        assertEquals(List.of(), checks(manifests).ports());
    }

    @Test
    void probesPointAtQuarkusHealthPaths() {
        assertEquals(List.of(), checks(manifests).probes());
    }

    @Test
    void imageNameAgreesBetweenBaseAndOverlay() {
        assertEquals(List.of(), checks(manifests).images());
    }

    @Test
    void environmentNamesMeanSomethingToTheService() {
        assertEquals(List.of(), checks(manifests).environment());
    }

    @Test
    void securityContext() {
        assertEquals(List.of(), checks(manifests).securityContext());
    }

    @Test
    void terminationGraceCoversTheGracefulShutdown() {
        assertEquals(List.of(), checks(manifests).shutdown());
    }

    @Test
    void capacity() {
        assertEquals(List.of(), checks(manifests).capacity());
    }

    @Test
    void databaseWiring() {
        assertEquals(List.of(), checks(manifests).database());
    }

    @Test
    void secretTemplateHoldsPlaceholdersOnly() {
        assertEquals(List.of(), checks(manifests).secretTemplate());
    }

    @Test
    void networkPolicy() {
        assertEquals(List.of(), networkAndMonitoringChecks(manifests).networkPolicy());
    }

    @Test
    void monitoring() {
        assertEquals(List.of(), networkAndMonitoringChecks(manifests).monitoring());
    }

    /** Each rule, shown a broken copy of the manifests or of application.properties, reports it. */
    @Nested
    class Broken {

        @Test
        void kindWithTheWrongApiVersion() {
            assertNoticed(ManifestChecks::kinds, "HorizontalPodAutoscaler", hpa -> hpa.put("apiVersion", "autoscaling/v1"), "apiVersion autoscaling/v1");
        }

        @Test
        void secretTemplateListedAsResource() {
            Manifests broken = manifests.copy();
            Document kustomization = Manifests.single(broken.inFile(ManifestChecks.BASE_KUSTOMIZATION), "Kustomization");
            ((ArrayNode) kustomization.body().path("resources")).add("secret.template.yaml");
            assertMentions(checks(broken).kustomizations(), "must not be a kustomize resource");
        }

        @Test
        void podLabelsThatNoSelectorMatches() {
            assertNoticed(ManifestChecks::labelsAndSelectors, "Deployment",
                    d -> ((ObjectNode) d.at("/spec/template/metadata/labels")).put("app.kubernetes.io/component", "worker"), "Service spec.selector");
        }

        @Test
        void serviceMonitorSelectingPodLabelsTheServiceLacks() {
            assertNoticed(ManifestChecks::labelsAndSelectors, "ServiceMonitor",
                    m -> ((ObjectNode) m.at("/spec/selector/matchLabels")).put("tier", "web"), "ServiceMonitor selector");
        }

        @Test
        void hpaTargetingAnotherDeployment() {
            assertNoticed(ManifestChecks::labelsAndSelectors, "HorizontalPodAutoscaler",
                    h -> ((ObjectNode) h.at("/spec/scaleTargetRef")).put("name", "chargeonce-api"), "scaleTargetRef");
        }

        @Test
        void serviceTargetPortElsewhere() {
            assertNoticed(ManifestChecks::ports, "Service", s -> ((ObjectNode) s.at("/spec/ports/0")).put("targetPort", 9090), "targetPort");
        }

        @Test
        void httpPortChangedInApplicationProperties() {
            ManifestChecks checks = new ManifestChecks(manifests, QuarkusProperties.parse(applicationPropertiesText + "\nquarkus.http.port=9090\n", "prod"),
                    dockerfile, mainSources);
            assertMentions(checks.ports(), "quarkus.http.port 9090");
        }

        @Test
        void managementPortChangedInApplicationProperties() {
            ManifestChecks checks = new ManifestChecks(manifests, QuarkusProperties.parse(applicationPropertiesText + "\nquarkus.management.port=9100\n", "prod"),
                    dockerfile, mainSources);
            assertMentions(checks.ports(), "quarkus.management.port 9100");
        }

        @Test
        void managementInterfaceTurnedOff() {
            ManifestChecks checks = new ManifestChecks(manifests, QuarkusProperties.parse(applicationPropertiesText + "\nquarkus.management.enabled=false\n", "prod"),
                    dockerfile, mainSources);
            assertMentions(checks.ports(), "quarkus.management.enabled must be true");
        }

        @Test
        void probeOnTheApiPort() {
            assertNoticed(ManifestChecks::ports, "Deployment",
                    d -> ((ObjectNode) container(d).at("/livenessProbe/httpGet")).put("port", "http"), "livenessProbe port \"http\" must be the management port 9000");
        }

        @Test
        void probeOnAPathQuarkusDoesNotServe() {
            assertNoticed(ManifestChecks::probes, "Deployment",
                    d -> ((ObjectNode) container(d).at("/readinessProbe/httpGet")).put("path", "/health/ready"), "readinessProbe must GET /q/health/ready");
        }

        @Test
        void overlayImageNameThatMatchesNothing() {
            Manifests broken = manifests.copy();
            Document overlay = Manifests.single(broken.inFile(ManifestChecks.OVERLAY_KUSTOMIZATION), "Kustomization");
            ((ObjectNode) overlay.body().at("/images/0")).put("name", "chargeonce-api");
            assertMentions(checks(broken).images(), "must equal the base image name chargeonce");
        }

        @Test
        void environmentVariableWithATypo() {
            assertNoticed(ManifestChecks::environment, "ConfigMap",
                    c -> ((ObjectNode) c.path("data")).put("QUARKUS_DATASOURCE_JDBC_URLL", "jdbc:postgresql://x/y"), "env QUARKUS_DATASOURCE_JDBC_URLL means nothing");
        }

        @Test
        void requiredSecretNotPassed() {
            assertNoticed(ManifestChecks::environment, "Deployment", d -> {
                ArrayNode env = (ArrayNode) container(d).path("env");
                for (int i = 0; i < env.size(); i++) {
                    if (env.get(i).path("name").asText().equals("STRIPE_API_KEY")) {
                        env.remove(i);
                        return;
                    }
                }
            }, "needs ${STRIPE_API_KEY}");
        }

        @Test
        void secretKeyMissingFromTheTemplate() {
            assertNoticed(ManifestChecks::environment, "Deployment",
                    d -> ((ObjectNode) container(d).at("/env/0/valueFrom/secretKeyRef")).put("key", "STRIPE_KEY"), "has no key STRIPE_KEY");
        }

        @Test
        void writableRootFilesystem() {
            assertNoticed(ManifestChecks::securityContext, "Deployment",
                    d -> ((ObjectNode) container(d).path("securityContext")).put("readOnlyRootFilesystem", false), "readOnlyRootFilesystem");
        }

        @Test
        void rootUser() {
            assertNoticed(ManifestChecks::securityContext, "Deployment",
                    d -> ((ObjectNode) container(d).path("securityContext")).put("runAsUser", 0), "runAsUser must be a non-zero number");
        }

        @Test
        void capabilitiesKept() {
            assertNoticed(ManifestChecks::securityContext, "Deployment",
                    d -> ((ObjectNode) container(d).at("/securityContext/capabilities")).putArray("drop").add("NET_RAW"), "capabilities.drop");
        }

        @Test
        void privilegeEscalationAllowed() {
            assertNoticed(ManifestChecks::securityContext, "Deployment",
                    d -> ((ObjectNode) container(d).path("securityContext")).remove("allowPrivilegeEscalation"), "allowPrivilegeEscalation");
        }

        @Test
        void terminationGraceShorterThanTheShutdown() {
            assertNoticed(ManifestChecks::shutdown, "Deployment",
                    d -> ((ObjectNode) d.at("/spec/template/spec")).put("terminationGracePeriodSeconds", 30), "terminationGracePeriodSeconds 30");
        }

        @Test
        void shutdownGraceRaisedInApplicationProperties() {
            ManifestChecks checks = new ManifestChecks(manifests,
                    QuarkusProperties.parse(applicationPropertiesText + "\nchargeonce.shutdown.grace=45s\n", "prod"), dockerfile, mainSources);
            assertMentions(checks.shutdown(), "must exceed");
        }

        @Test
        void noPreStopSleep() {
            assertNoticed(ManifestChecks::shutdown, "Deployment", d -> ((ObjectNode) container(d)).remove("lifecycle"), "preStop sleep");
        }

        @Test
        void moreReplicasThanThePrimaryHasConnectionsFor() {
            assertNoticed(ManifestChecks::capacity, "HorizontalPodAutoscaler",
                    h -> ((ObjectNode) h.path("spec")).put("maxReplicas", 20), "connections");
        }

        @Test
        void memoryLimitBelowRequest() {
            assertNoticed(ManifestChecks::capacity, "Deployment",
                    d -> ((ObjectNode) container(d).at("/resources/limits")).put("memory", "256Mi"), "memory limit 256Mi below request");
        }

        @Test
        void replicaDatasourceOnThePrimary() {
            assertNoticed(ManifestChecks::database, "ConfigMap",
                    c -> ((ObjectNode) c.path("data")).put("QUARKUS_DATASOURCE_REPLICA_JDBC_URL", "jdbc:postgresql://chargeonce-db-rw:5432/chargeonce"),
                    "host must be chargeonce-db-ro");
        }

        @Test
        void realLookingSecretValue() {
            Manifests broken = manifests.copy();
            Document secret = broken.inFile(ManifestChecks.SECRET_TEMPLATE).get(0);
            ((ObjectNode) secret.body().path("stringData")).put("STRIPE_API_KEY", "sk_live_51H8xyz");
            assertMentions(checks(broken).secretTemplate(), "STRIPE_API_KEY must be a REPLACE_ME placeholder");
        }

        @Test
        void egressToAnExtraPort() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::networkPolicy, "NetworkPolicy",
                    n -> ((ArrayNode) n.at("/spec/egress/2/ports")).addObject().put("protocol", "TCP").put("port", 80), "egress allows TCP/80");
        }

        @Test
        void ingressRuleWithoutPorts() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::networkPolicy, "NetworkPolicy",
                    n -> ((ObjectNode) n.at("/spec/ingress/0")).remove("ports"), "without ports opens every port");
        }

        @Test
        void managementPortOpenToEveryone() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::networkPolicy, "NetworkPolicy",
                    n -> ((ObjectNode) n.at("/spec/ingress/1")).remove("from"), "the management port 9000 is open to every peer");
        }

        @Test
        void managementPortInTheClientsRule() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::networkPolicy, "NetworkPolicy",
                    n -> ((ArrayNode) n.at("/spec/ingress/0/ports")).addObject().put("protocol", "TCP").put("port", 9000),
                    "the management port 9000 is open to every peer");
        }

        @Test
        void managementPortOpenToAnAddressRange() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::networkPolicy, "NetworkPolicy",
                    n -> ((ArrayNode) n.at("/spec/ingress/1/from")).addObject().putObject("ipBlock").put("cidr", "0.0.0.0/0"),
                    "allow the monitoring namespace only");
        }

        @Test
        void managementPortClosedToPrometheus() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::networkPolicy, "NetworkPolicy",
                    n -> ((ArrayNode) n.at("/spec/ingress")).remove(1), "no ingress rule lets the monitoring namespace reach the management port 9000");
        }

        @Test
        void scrapeOfTheApiPort() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::monitoring, "ServiceMonitor",
                    m -> ((ObjectNode) m.at("/spec/endpoints/0")).put("port", "http"), "not the management port 9000");
        }

        @Test
        void scrapeOnTheWrongPath() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::monitoring, "ServiceMonitor",
                    m -> ((ObjectNode) m.at("/spec/endpoints/0")).put("path", "/metrics"), "Quarkus serves /q/metrics");
        }

        @Test
        void alertOnASharedMetricWithoutJob() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::monitoring, "PrometheusRule", r -> {
                ObjectNode rule = (ObjectNode) r.at("/spec/groups/0/rules/0");
                rule.put("expr", "sum(rate(http_server_requests_seconds_count{status=~\"5..\"}[5m])) > 1");
            }, "filter it on job=\"chargeonce\"");
        }

        @Test
        void alertOnAMetricNobodyEmits() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::monitoring, "PrometheusRule",
                    r -> ((ObjectNode) r.at("/spec/groups/0/rules/0")).put("expr", "sum(increase(chargeonce_payouts_total[1h])) > 0"),
                    "uses chargeonce_payouts_total");
        }

        @Test
        void missingAlert() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::monitoring, "PrometheusRule", r -> {
                ArrayNode rules = (ArrayNode) r.at("/spec/groups/0/rules");
                for (int i = rules.size() - 1; i >= 0; i--) {
                    if (rules.get(i).path("expr").asText().contains("chargeonce_stripe_circuit_open")) {
                        rules.remove(i);
                    }
                }
            }, "no alert for circuit open");
        }

        @Test
        void alertOnFaultToleranceMetricsThatAreOff() {
            assertNetworkOrMonitoringNoticed(NetworkAndMonitoringChecks::monitoring, "PrometheusRule",
                    r -> ((ObjectNode) r.at("/spec/groups/0/rules/0")).put("expr",
                            "max by (method) (ft_circuitbreaker_state_current{job=\"chargeonce\", state=\"open\"}) > 0"),
                    "an alert uses ft_* metrics");
        }

        @Test
        void duplicateYamlKeyRefusedAtParse() {
            assertThrows(UncheckedIOException.class, () -> Manifests.parse("dup.yaml", "kind: Service\nkind: Deployment\n"));
        }

        private void assertNoticed(Function<ManifestChecks, List<String>> rule, String kind, Consumer<ObjectNode> breakIt, String expected) {
            assertBreakingNoticed(broken -> rule.apply(checks(broken)), kind, breakIt, expected);
        }

        private void assertNetworkOrMonitoringNoticed(Function<NetworkAndMonitoringChecks, List<String>> rule, String kind,
                                                      Consumer<ObjectNode> breakIt, String expected) {
            assertBreakingNoticed(broken -> rule.apply(networkAndMonitoringChecks(broken)), kind, breakIt, expected);
        }

        /** Breaks the one resource of that kind in a copy of the manifests and expects the rule to say so. */
        private void assertBreakingNoticed(Function<Manifests, List<String>> rule, String kind, Consumer<ObjectNode> breakIt, String expected) {
            Manifests broken = manifests.copy();
            Document target = Manifests.single(checks(broken).baseResources(), kind);
            breakIt.accept(target.body());
            assertMentions(rule.apply(broken), expected);
        }
    }

    @Nested
    class PropertiesTheQuarkusWay {

        @Test
        void environmentNames() {
            assertEquals("QUARKUS_DATASOURCE_JDBC_URL", QuarkusProperties.envName("quarkus.datasource.jdbc.url"));
            assertEquals("CHARGEONCE_SHUTDOWN_GRACE", QuarkusProperties.envName("chargeonce.shutdown.grace"));
            assertEquals("QUARKUS_DATASOURCE__REPLICA__JDBC_URL", QuarkusProperties.envName("quarkus.datasource.\"replica\".jdbc.url"));
        }

        @Test
        void placeholdersAndProfiles() {
            QuarkusProperties p = QuarkusProperties.parse("""
                    a.key=${A_SECRET}
                    b.key=${b.default:fallback}
                    grace=20s
                    timeout=${grace}
                    %dev.a.key=dev-value
                    %prod.c.key=${PROD_ONLY}
                    """, "prod");
            assertEquals(Set.of("A_SECRET", "PROD_ONLY"), p.requiredEnvironmentVariables());
            assertTrue(p.environmentVariableNames().containsAll(Set.of("A_KEY", "A_SECRET", "B_KEY", "C_KEY", "PROD_ONLY")));
            assertEquals(Duration.ofSeconds(20), p.duration("timeout"));
            assertEquals(Duration.ofSeconds(45), p.withEnvironment(Map.of("GRACE", "45s")).duration("timeout"));
            assertEquals("fallback", p.value("b.key").orElseThrow());
        }

        @Test
        void theRealFileNeedsTheStripeKeyAndTheClientsInProd() {
            assertTrue(properties.requiredEnvironmentVariables().containsAll(Set.of("STRIPE_API_KEY", "CHARGEONCE_CLIENTS")),
                    properties.requiredEnvironmentVariables().toString());
        }
    }

    static void assertMentions(List<String> problems, String expected) {
        assertTrue(problems.stream().anyMatch(p -> p.contains(expected)), "expected a problem mentioning '" + expected + "', got " + problems);
    }

    static JsonNode container(JsonNode deployment) {
        return deployment.at("/spec/template/spec/containers/0");
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

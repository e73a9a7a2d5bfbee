package dev.chargeonce.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The rules of the network policy (who may reach the API and the management port, and where the pod may go) and of
 * monitoring (what Prometheus scrapes, and the alerts: each one present, filtered, on metrics the code registers),
 * each a method that returns the problems it finds, like {@link ManifestChecks}'s.
 */
final class NetworkAndMonitoringChecks extends ManifestView {

    /** Alert metrics the service exports only when a feature is on (replica lag, reconciliation). */
    static final Set<String> METRICS_NOT_YET_EMITTED = Set.of();

    /** Metric names shared by every Quarkus service: alerts must filter them on the scrape's job. */
    private static final List<String> SHARED_METRICS = List.of("http_server_requests_seconds_count");

    private static final Set<String> STRIPE_EGRESS_EXCLUDED_RANGES = Set.of("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16");

    NetworkAndMonitoringChecks(Manifests manifests, QuarkusProperties applicationProperties, String dockerfile, String mainSources) {
        super(manifests, applicationProperties, dockerfile, mainSources);
    }

    // --- Network -------------------------------------------------------------------------------------------------

    List<String> networkPolicy() {
        Problems problems = new Problems();
        JsonNode spec = networkPolicyDocument().body().path("spec");
        problems.check(texts(spec.path("policyTypes")).containsAll(List.of("Ingress", "Egress")), "the NetworkPolicy must govern Ingress and Egress");
        int httpPort = httpPort();
        int managementPort = managementPort();
        problems.check(!spec.path("ingress").isEmpty(), "no ingress rule: the API would be unreachable");
        boolean apiOpen = false;
        boolean managementOpen = false;
        for (JsonNode rule : spec.path("ingress")) {
            problems.check(!rule.path("ports").isEmpty(), "ingress rule %s without ports opens every port", rule);
            for (JsonNode port : rule.path("ports")) {
                boolean tcp = port.path("protocol").asText("TCP").equals("TCP");
                boolean http = port.path("port").asInt(-1) == httpPort || port.path("port").asText().equals("http");
                boolean management = port.path("port").asInt(-1) == managementPort || port.path("port").asText().equals("management");
                problems.check((http || management) && tcp, "ingress allows %s; only TCP %d (API) and TCP %d (management) are expected",
                        port, httpPort, managementPort);
                apiOpen |= http && tcp;
                if (management && tcp) {
                    managementOpen = true;
                    // Health and metrics are for the monitoring namespace (and the kubelet, which no rule needs):
                    // never for every peer, never in the clients' rule.
                    problems.check(!rule.path("from").isEmpty(), "the management port %d is open to every peer (rule %s): allow the monitoring namespace only",
                            managementPort, rule);
                    for (JsonNode peer : rule.path("from")) {
                        problems.check(peer.has("namespaceSelector") && !peer.at("/namespaceSelector/matchLabels").isEmpty() && !peer.has("ipBlock"),
                                "the management port %d is open to %s: allow the monitoring namespace only (a namespaceSelector with matchLabels)",
                                managementPort, peer);
                    }
                }
            }
        }
        problems.check(apiOpen, "no ingress rule allows the API port %d", httpPort);
        problems.check(managementOpen, "no ingress rule lets the monitoring namespace reach the management port %d (Prometheus scrapes it)", managementPort);
        Set<String> egress = new HashSet<>();
        for (JsonNode rule : spec.path("egress")) {
            problems.check(!rule.path("ports").isEmpty(), "egress rule %s without ports opens every port", rule);
            problems.check(!rule.path("to").isEmpty(), "egress rule %s without `to` reaches every address", rule);
            for (JsonNode port : rule.path("ports")) {
                String protocolPort = port.path("protocol").asText("TCP") + "/" + port.path("port").asText();
                egress.add(protocolPort);
                switch (protocolPort) {
                    case "TCP/5432" -> problems.check(rule.path("to").size() == 1
                                    && cluster().name().equals(rule.at("/to/0/podSelector/matchLabels/cnpg.io~1cluster").asText()),
                            "PostgreSQL egress must go to the pods of Cluster %s only", cluster().name());
                    case "UDP/53", "TCP/53" -> problems.check(rule.path("to").size() == 1
                                    && "kube-dns".equals(rule.at("/to/0/podSelector/matchLabels/k8s-app").asText())
                                    && "kube-system".equals(rule.at("/to/0/namespaceSelector/matchLabels/kubernetes.io~1metadata.name").asText()),
                            "DNS egress must go to kube-dns in kube-system only");
                    case "TCP/443" -> {
                        for (JsonNode to : rule.path("to")) {
                            problems.check(to.has("ipBlock") && !to.has("podSelector") && !to.has("namespaceSelector"),
                                    "HTTPS egress (Stripe) goes to public addresses only");
                            if (to.at("/ipBlock/cidr").asText().equals("0.0.0.0/0")) {
                                problems.check(texts(to.at("/ipBlock/except")).containsAll(STRIPE_EGRESS_EXCLUDED_RANGES),
                                        "HTTPS egress must exclude the private ranges %s", STRIPE_EGRESS_EXCLUDED_RANGES);
                            }
                        }
                    }
                    default -> problems.add("egress allows " + protocolPort + ": only PostgreSQL, DNS and Stripe are expected");
                }
            }
        }
        problems.check(egress.containsAll(Set.of("TCP/5432", "UDP/53", "TCP/53", "TCP/443")),
                "egress must allow PostgreSQL (TCP 5432), DNS (UDP and TCP 53) and Stripe (TCP 443), allows %s", egress);
        return problems;
    }

    // --- Monitoring ----------------------------------------------------------------------------------------------

    List<String> monitoring() {
        Problems problems = new Problems();
        String metricsPath = managementRoot() + "/" + trimSlashes(applicationProperties.value("quarkus.micrometer.export.prometheus.path").orElse("metrics"));
        Map<String, JsonNode> servicePorts = new HashMap<>();
        service().body().at("/spec/ports").forEach(p -> servicePorts.put(p.path("name").asText(), p));
        JsonNode endpoints = serviceMonitor().body().at("/spec/endpoints");
        problems.check(!endpoints.isEmpty(), "the ServiceMonitor has no endpoints");
        for (JsonNode endpoint : endpoints) {
            JsonNode servicePort = servicePorts.get(endpoint.path("port").asText());
            problems.check(servicePort != null, "ServiceMonitor port %s is not a Service port name %s", endpoint.path("port"), servicePorts.keySet());
            int target = servicePort == null ? -1 : containerPort(servicePort.path("targetPort")).orElse(-1);
            problems.check(servicePort == null || target == managementPort(),
                    "ServiceMonitor scrapes Service port %s, which leads to container port %d, not the management port %d (the API port serves no metrics)",
                    endpoint.path("port"), target, managementPort());
            problems.check(endpoint.path("path").asText().equals(metricsPath), "ServiceMonitor path %s, Quarkus serves %s", endpoint.path("path"), metricsPath);
        }
        // Without jobLabel the Prometheus Operator names the job after the Service.
        String job = serviceMonitor().body().at("/spec/jobLabel").isMissingNode() ? service().name() : null;
        problems.check(job != null, "the alerts assume job=<Service name>: do not set spec.jobLabel");

        List<JsonNode> alerts = new ArrayList<>();
        prometheusRule().body().at("/spec/groups").forEach(g -> g.path("rules").forEach(alerts::add));
        String allExpressions = String.join("\n", alerts.stream().map(a -> a.path("expr").asText()).toList());
        Map<String, String> required = new LinkedHashMap<>();
        required.put("replica lag over 1 s", "chargeonce_replica_lag_seconds");
        required.put("duplicate or missing charges found by reconciliation", "chargeonce_reconciliation_findings_total");
        required.put("two payments or refunds for one key (open findings)", "chargeonce_reconciliation_open_findings{kind=~\"duplicate_payment_intents|duplicate_refunds\"}");
        required.put("reconciliation not running", "chargeonce_reconciliation_last_completed_timestamp_seconds");
        required.put("rows processing long after their claim (by age, not by lease)", "chargeonce_processing_overdue_rows");
        required.put("any row parked for reconciliation", "chargeonce_reconciliation_rows");
        required.put("rows left with an expired lease (no recovery worker)", "chargeonce_processing_expired_rows");
        required.put("rows past the key horizon", "chargeonce_reconciliation_parked_total");
        required.put("circuit open", "chargeonce_stripe_circuit_open");
        required.put("elevated 5xx", "http_server_requests_seconds_count");
        required.put("Kafka commands waiting (consumer lag)", "chargeonce_kafka_consumer_lag");
        required.put("Kafka results not published (outbox backlog)", "chargeonce_kafka_outbox_oldest_age_seconds");
        required.put("Kafka poison records", "chargeonce_kafka_dead_letters_total");
        required.forEach((what, metric) -> problems.check(allExpressions.contains(metric), "no alert for %s (%s)", what, metric));
        problems.check(allExpressions.matches("(?s).*chargeonce_replica_lag_seconds\\S*\\)?\\s*>\\s*1\\b.*"), "the replica lag alert must fire above 1 s");
        problems.check(allExpressions.contains("status=~\"5..\""), "the 5xx alert must select status=~\"5..\"");
        problems.check(allExpressions.matches("(?s).*chargeonce_stripe_circuit_open\\S*\\)?\\s*>\\s*0\\b.*"),
                "the circuit alert must fire while a circuit is open (chargeonce_stripe_circuit_open > 0)");
        // Fault Tolerance's own metrics are off (a registry lookup per Stripe call): an alert on them would never fire.
        problems.check(!applicationProperties.value("quarkus.fault-tolerance.metrics.enabled").orElse("true").equals("false")
                || !allExpressions.matches("(?s).*\\bft_[a-z_]+.*"), "an alert uses ft_* metrics, which quarkus.fault-tolerance.metrics.enabled=false turns off");
        for (JsonNode alert : alerts) {
            String name = alert.path("alert").asText("<recording rule>");
            String expr = alert.path("expr").asText();
            problems.check(Set.of("critical", "warning").contains(alert.at("/labels/severity").asText()), "alert %s needs severity critical or warning", name);
            problems.check(!alert.at("/annotations/summary").asText().isBlank(), "alert %s needs a summary", name);
            for (String shared : SHARED_METRICS) {
                Matcher use = Pattern.compile(shared + "(\\{[^}]*})?").matcher(expr);
                while (use.find()) {
                    problems.check(use.group(1) != null && use.group(1).contains("job=\"" + job + "\""),
                            "alert %s: %s is shared by every Quarkus service, filter it on job=\"%s\"", name, shared, job);
                }
            }
            Matcher ours = Pattern.compile("\\bchargeonce_[a-z0-9_]+").matcher(expr);
            while (ours.find()) {
                String metric = ours.group();
                problems.check(METRICS_NOT_YET_EMITTED.contains(metric) || emittedByCode(metric),
                        "alert %s uses %s, which no meter in src/main/java registers", name, metric);
            }
        }
        return problems;
    }

    /** Whether a Micrometer meter with this Prometheus name is registered in src/main/java (by its dotted name). */
    private boolean emittedByCode(String prometheusName) {
        String base = prometheusName.replaceFirst("_total$", "").replaceFirst("_seconds$", "");
        return mainSources.contains("\"" + base.replace('_', '.') + "\"") || mainSources.contains("\"" + prometheusName.replace('_', '.') + "\"");
    }
}

package dev.chargeonce.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleResponse;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import jakarta.ws.rs.HttpMethod;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * The contract's checks of the document itself: the service serves this very file, every endpoint it implements is
 * documented, the validator is strict enough to be worth something, and every error is the one error schema.
 */
abstract class ContractDocumentChecks extends ContractSupport {

    // ---- the document itself -------------------------------------------------------------------------------------

    @Test
    @Order(1)
    void theServiceServesThisFileAtQOpenapi() throws IOException {
        // The build copies the top-level file onto the classpath; it must be that file, not a stale copy.
        try (InputStream onClasspath = Thread.currentThread().getContextClassLoader().getResourceAsStream("META-INF/openapi.yaml")) {
            assertTrue(onClasspath != null, "META-INF/openapi.yaml is not on the classpath: the pom's copy step is missing");
            assertEquals(contractText, new String(onClasspath.readAllBytes(), StandardCharsets.UTF_8),
                    "META-INF/openapi.yaml differs from the top-level openapi.yaml");
        }
        Answer served = send(Call.document("/q/openapi").query("format", "json"));
        assertEquals(200, served.status());
        JsonNode servedTree = normalized(new ObjectMapper().readTree(served.body()));
        JsonNode fileTree = normalized(new ObjectMapper(new YAMLFactory()).readTree(contractText));
        // Annotation scanning is off (application.properties), so nothing is merged into the contract: the served
        // document is the file, operation for operation, status for status, schema for schema.
        assertEquals(fileTree, servedTree, "/q/openapi does not serve openapi.yaml as it is");
        assertEquals(Set.of(CHARGES, CHARGE, CHARGE_REFUNDS, REFUND, KEY, WEBHOOKS), fieldNames(servedTree.get("paths")));
        assertEquals(Set.of("post", "get"), fieldNames(servedTree.get("paths").get(CHARGE_REFUNDS)));
        assertEquals(Set.of("get"), fieldNames(servedTree.get("paths").get(REFUND)));
        assertEquals(Set.of("post"), fieldNames(servedTree.get("paths").get(WEBHOOKS)));
        assertEquals(Set.of("post", "get"), fieldNames(servedTree.get("paths").get(CHARGES)));
        assertEquals(Set.of("get"), fieldNames(servedTree.get("paths").get(CHARGE)));

        Answer yaml = send(Call.document("/q/openapi"));
        assertEquals(200, yaml.status());
        assertTrue(yaml.body().contains("/v1/charges/{id}:"), "the YAML form serves the documented paths");
    }

    @Test
    @Order(3)
    void everyEndpointTheServiceImplementsIsDocumented() throws Exception {
        // Annotation scanning is off, so Quarkus no longer notices a new endpoint for us: this test does. Every
        // JAX-RS resource method compiled into the application must be an operation of openapi.yaml, and back.
        Path classes = Path.of("target", "classes");
        Set<String> implemented = new TreeSet<>();
        List<Path> classFiles;
        try (Stream<Path> files = Files.walk(classes)) {
            classFiles = files.filter(file -> file.toString().endsWith(".class")).toList();
        }
        for (Path file : classFiles) {
            String name = classes.relativize(file).toString().replace(File.separatorChar, '.').replaceAll("\\.class$", "");
            Class<?> type = Class.forName(name, false, getClass().getClassLoader());
            jakarta.ws.rs.Path resource = type.getAnnotation(jakarta.ws.rs.Path.class);
            if (resource == null) {
                continue;
            }
            for (Method method : type.getDeclaredMethods()) {
                for (Annotation annotation : method.getAnnotations()) {
                    HttpMethod verb = annotation.annotationType().getAnnotation(HttpMethod.class);
                    if (verb != null) {
                        jakarta.ws.rs.Path sub = method.getAnnotation(jakarta.ws.rs.Path.class);
                        String path = ("/" + resource.value() + "/" + (sub == null ? "" : sub.value()))
                                .replaceAll("/+", "/").replaceAll("(.)/$", "$1");
                        // The operators' console and admin API are not the clients' contract: they answer only
                        // operator credentials, are documented in the README and tested by the reconcile suites.
                        if (!dev.chargeonce.auth.OperatorFilter.isOperatorPath(path)) {
                            implemented.add(verb.value() + " " + path);
                        }
                    }
                }
            }
        }
        Set<String> documented = new TreeSet<>();
        contract.getPaths().forEach((path, item) -> item.readOperationsMap().keySet()
                .forEach(method -> documented.add(method + " " + path)));
        assertEquals(documented, implemented, "openapi.yaml and the resource classes disagree on the endpoints");
    }

    @Test
    @Order(2)
    void theValidatorRefusesAnswersTheContractDoesNotDescribe() {
        // The checks below are only worth something if the validator is strict: answers that drifted must fail.
        // (A status the file does not list is caught by validate() itself, which requires the exact code.)
        String charge = "{\"id\":\"chg_4wsJL5cghxWtQEMpJldocjxa\",\"object\":\"charge\",\"status\":\"succeeded\","
                + "\"amount\":1000,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"customer\":null,"
                + "\"description\":null,\"metadata\":{},\"payment_intent\":\"pi_1\",\"amount_refunded\":0,\"refunded\":false,"
                + "\"created\":1796000509}";
        String inFlight = "{\"error\":{\"type\":\"idempotency_error\",\"code\":\"idempotency_key_in_use\","
                + "\"message\":\"m\",\"param\":\"Idempotency-Key\"}}";
        assertFalse(validator.validateResponse(CHARGES, Request.Method.POST, jsonAnswer(201, charge).build()).hasErrors(),
                "the reference answers are valid");
        assertFalse(validator.validateResponse(CHARGES, Request.Method.POST,
                jsonAnswer(409, inFlight).withHeader("Retry-After", "1").build()).hasErrors());

        Map<String, SimpleResponse> drifted = new LinkedHashMap<>();
        drifted.put("an undocumented field", jsonAnswer(201, charge.substring(0, charge.length() - 1) + ",\"captured\":true}").build());
        drifted.put("a missing field", jsonAnswer(201, charge.replace(",\"created\":1796000509", "")).build());
        drifted.put("an amount as a string", jsonAnswer(201, charge.replace("1000", "\"1000\"")).build());
        drifted.put("a body that is not JSON", SimpleResponse.Builder.status(201).withContentType("text/html").withBody("<p>ok</p>").build());
        drifted.put("409 without Retry-After", jsonAnswer(409, inFlight).build());
        drifted.put("an extra error field", jsonAnswer(409, inFlight.replace("}}", ",\"hint\":\"x\"}}"))
                .withHeader("Retry-After", "1").build());
        drifted.put("Idempotent-Replayed not true", jsonAnswer(201, charge).withHeader("Idempotent-Replayed", "yes").build());
        drifted.forEach((what, answer) -> assertTrue(
                validator.validateResponse(CHARGES, Request.Method.POST, answer).hasErrors(), "not caught: " + what));
        // type and code are open strings for clients; this test still holds every produced one to the known lists.
        assertTrue(knownErrorProblem(inFlight).isEmpty());
        assertFalse(knownErrorProblem(inFlight.replace("idempotency_key_in_use", "busy")).isEmpty(), "an undocumented code is caught");
        assertFalse(knownErrorProblem(inFlight.replace("idempotency_error", "mystery_error")).isEmpty(), "an undocumented type is caught");
        // So are the other open strings of answers.
        assertTrue(knownValuesProblem(CHARGES, Request.Method.POST, 201, charge).isEmpty());
        assertFalse(knownValuesProblem(CHARGES, Request.Method.POST, 201, charge.replace("succeeded", "disputed")).isEmpty(),
                "an undocumented status is caught");
        assertFalse(knownValuesProblem(CHARGES, Request.Method.GET, 200, "{\"object\":\"list\",\"has_more\":false,\"data\":["
                + charge.replace("\"charge\"", "\"charge_v2\"") + "]}").isEmpty(), "an undocumented object in a list is caught");
    }

    @Test
    @Order(4)
    void everyErrorAnswerIsTheOneErrorSchemaWithOpenCodes() throws IOException {
        // A generated client gets one error type for every status (and does not break when a code is added):
        // every 4xx/5xx answer with a body is #/components/schemas/ErrorResponse, whose type and code are plain strings.
        JsonNode tree = new ObjectMapper(new YAMLFactory()).readTree(contractText);
        List<String> notTheOne = new ArrayList<>();
        tree.path("paths").fields().forEachRemaining(path -> path.getValue().fields().forEachRemaining(op ->
                op.getValue().path("responses").fields().forEachRemaining(r -> {
                    JsonNode response = r.getValue();
                    if (response.has("$ref")) {
                        response = tree.at(response.get("$ref").asText().substring(1));
                    }
                    boolean error = r.getKey().equals("default") || r.getKey().startsWith("4") || r.getKey().startsWith("5");
                    JsonNode schema = response.at("/content/application~1json/schema/$ref");
                    if (error && response.has("content") && !"#/components/schemas/ErrorResponse".equals(schema.asText())) {
                        notTheOne.add(op.getKey() + " " + path.getKey() + " " + r.getKey() + " -> " + schema.asText());
                    }
                })));
        assertEquals(List.of(), notTheOne);
        JsonNode detail = tree.at("/components/schemas/ErrorDetail/properties");
        assertFalse(detail.path("type").has("enum") || detail.path("code").has("enum"), "type and code are open strings");
        Set<String> schemas = fieldNames(tree.at("/components/schemas"));
        // Not "Error": a generated Java client's model of that name hides java.lang.Error in every file that uses it.
        assertTrue(schemas.stream().filter(n -> n.startsWith("Error")).collect(Collectors.toSet()).equals(Set.of("ErrorResponse", "ErrorDetail")),
                "one error schema, ErrorResponse (and its detail): " + schemas);
        // Every enumerated value of an answer is an open string (a generated client's enum would throw on a new one),
        // its values listed in x-known-values, which validate() holds every answer to.
        List<String> closed = new ArrayList<>();
        tree.at("/components/schemas").fields().forEachRemaining(schema -> {
            if (!schema.getKey().endsWith("Request")) {
                schema.getValue().path("properties").fields().forEachRemaining(property -> {
                    if (property.getValue().has("enum") && !property.getValue().path("type").asText().equals("boolean")) {
                        closed.add(schema.getKey() + "." + property.getKey());
                    }
                });
            }
        });
        assertEquals(List.of(), closed, "closed enums in answers");
    }
}

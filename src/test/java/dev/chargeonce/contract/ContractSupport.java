package dev.chargeonce.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.atlassian.oai.validator.OpenApiInteractionValidator;
import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleResponse;
import com.atlassian.oai.validator.report.LevelResolver;
import com.atlassian.oai.validator.report.SimpleValidationReportFormat;
import com.atlassian.oai.validator.report.ValidationReport;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.Operation;
import io.swagger.v3.oas.models.PathItem;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import jakarta.inject.Inject;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/**
 * What every check of the contract shares ({@link OpenApiContractTest} runs them): the file, parsed and as the
 * validator reads it; the service's address, its database and the Stripe sandbox; and {@link #check}, which sends a
 * {@link Call} and validates its {@link Answer} against the file, noting which documented status it produced.
 */
abstract class ContractSupport {

    /** The contract as committed. Surefire runs in the project directory. */
    static final Path CONTRACT = Path.of("openapi.yaml");
    static final String CHARGES = "/v1/charges";
    static final String CHARGE = "/v1/charges/{id}";
    static final String WEBHOOKS = "/v1/webhooks/stripe";
    static final String CHARGE_REFUNDS = "/v1/charges/{id}/refunds";
    static final String REFUND = "/v1/refunds/{id}";
    static final String KEY = "/v1/idempotency-keys/{key}";
    static final String VISA = "{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", "
            + "\"metadata\": {\"order_id\": \"O-123\"}}";
    static final String FRESH_KEY = "(a new key)";
    static final String NO_KEY = null;

    static String contractText;
    static OpenAPI contract;
    static OpenApiInteractionValidator validator;
    /** Every validated answer, as "METHOD /documented/path status". */
    static final Set<String> produced = ConcurrentHashMap.newKeySet();

    @TestHTTPResource("/")
    URL root;

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Inject
    AgroalDataSource primary;

    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    SandboxControl stripe;

    @BeforeAll
    static void loadContract() throws IOException {
        contractText = Files.readString(CONTRACT);
        ParseOptions options = new ParseOptions();
        options.setResolve(true);
        SwaggerParseResult parsed = new OpenAPIV3Parser().readContents(contractText, null, options);
        assertTrue(parsed.getMessages() == null || parsed.getMessages().isEmpty(),
                "openapi.yaml does not parse cleanly: " + parsed.getMessages());
        contract = parsed.getOpenAPI();
        // Every finding is an error: nothing the validator notices is waved through. The one key set to IGNORE is
        // not a finding but a switch: unless it is ignored, the validator injects "additionalProperties: false"
        // into every schema, which breaks allOf (each member would refuse the others' fields). The contract states
        // additionalProperties: false itself wherever it means it, and those are enforced (see
        // theValidatorRefusesAnswersTheContractDoesNotDescribe).
        validator = OpenApiInteractionValidator.createForInlineApiSpecification(contractText)
                .withLevelResolver(LevelResolver.create()
                        .withDefaultLevel(ValidationReport.Level.ERROR)
                        .withLevel("validation.schema.additionalProperties", ValidationReport.Level.IGNORE)
                        .build())
                .build();
    }

    @BeforeEach
    void sandbox() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
    }

    @AfterEach
    void clearFaults() {
        stripe.clearFaults();
    }

    // ---- plumbing ------------------------------------------------------------------------------------------------

    /** Sends the call, then validates its answer: the expected status, documented by that exact code, valid. */
    Answer check(Call call, int expectedStatus) {
        return validate(call, send(call), expectedStatus);
    }

    Answer validate(Call call, Answer answer, int expectedStatus) {
        assertEquals(expectedStatus, answer.status(), () -> call + " answered " + answer);
        Operation operation = operation(call.method, call.template);
        // Not through `default`: every answer a request can get is documented by its own status code.
        assertTrue(operation.getResponses().containsKey(Integer.toString(expectedStatus)),
                () -> call + ": status " + expectedStatus + " is not documented in openapi.yaml");
        SimpleResponse.Builder response = SimpleResponse.Builder.status(answer.status()).withBody(answer.body());
        // (The JDK client reports the status line as a pseudo-header ":status"; it is no header of the answer.)
        answer.headers().forEach((name, values) -> {
            if (!name.startsWith(":")) {
                response.withHeader(name, values);
            }
        });
        ValidationReport report = validator.validateResponse(call.path, call.method, response.build());
        assertFalse(report.hasErrors(), () -> call + " answered " + answer + "\nwhich openapi.yaml does not describe:\n"
                + SimpleValidationReportFormat.getInstance().apply(report));
        if (expectedStatus >= 400 && !answer.body().isEmpty()) {
            String problem = knownErrorProblem(answer.body());
            assertTrue(problem.isEmpty(), () -> call + " answered " + answer + ": " + problem);
        }
        if (expectedStatus < 300 && !answer.body().isEmpty()) {
            String problem = knownValuesProblem(call.template, call.method, expectedStatus, answer.body());
            assertTrue(problem.isEmpty(), () -> call + " answered " + answer + ": " + problem);
        }
        produced.add(call.method + " " + call.template + " " + expectedStatus);
        return answer;
    }

    /**
     * An error's type and code against the lists the contract publishes ({@code x-known-types}, {@code x-known-codes}
     * of ErrorDetail): empty when both are listed. Stripe's own codes of a stored refusal pass through as they are.
     */
    static String knownErrorProblem(String body) {
        JsonNode error;
        try {
            error = new ObjectMapper().readTree(body).path("error");
        } catch (IOException e) {
            return "not JSON: " + body;
        }
        JsonNode detail;
        try {
            detail = new ObjectMapper(new YAMLFactory()).readTree(contractText).at("/components/schemas/ErrorDetail");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        Set<String> types = new TreeSet<>();
        detail.path("x-known-types").forEach(t -> types.add(t.asText()));
        Set<String> codes = new TreeSet<>();
        detail.path("x-known-codes").forEach(c -> codes.add(c.asText()));
        if (types.isEmpty() || codes.isEmpty()) {
            return "openapi.yaml lists no x-known-types or x-known-codes";
        }
        if (!types.contains(error.path("type").asText())) {
            return "type " + error.path("type") + " is not in x-known-types";
        }
        if (!codes.contains(error.path("code").asText())) {
            return "code " + error.path("code") + " is not in x-known-codes";
        }
        return "";
    }

    static JsonNode contractTree;

    /**
     * The open strings of an answer (status, object, reason, operation) against the values the contract lists for
     * them ({@code x-known-values}): empty when every one is listed. Clients accept any value; this test still
     * holds the service to the list, so a new value is added to the contract first.
     */
    static String knownValuesProblem(String template, Request.Method method, int status, String body) {
        try {
            if (contractTree == null) {
                contractTree = new ObjectMapper(new YAMLFactory()).readTree(contractText);
            }
            JsonNode response = resolve(contractTree.path("paths").path(template).path(method.name().toLowerCase(Locale.ROOT))
                    .path("responses").path(Integer.toString(status)));
            List<String> problems = new ArrayList<>();
            knownValues(response.path("content").path("application/json").path("schema"), new ObjectMapper().readTree(body), "", problems);
            return String.join("; ", problems);
        } catch (IOException e) {
            return "not JSON: " + body;
        }
    }

    private static void knownValues(JsonNode schema, JsonNode value, String at, List<String> problems) {
        JsonNode resolved = resolve(schema);
        if (resolved.has("x-known-values") && value.isTextual()) {
            Set<String> known = new TreeSet<>();
            resolved.get("x-known-values").forEach(v -> known.add(v.asText()));
            if (!known.contains(value.asText())) {
                problems.add(at + " " + value + " is not in x-known-values " + known);
            }
        }
        if (value.isObject()) {
            resolved.path("properties").fields().forEachRemaining(p -> {
                if (value.has(p.getKey())) {
                    knownValues(p.getValue(), value.get(p.getKey()), at + "." + p.getKey(), problems);
                }
            });
        }
        if (value.isArray() && resolved.has("items")) {
            for (int i = 0; i < value.size(); i++) {
                knownValues(resolved.get("items"), value.get(i), at + "[" + i + "]", problems);
            }
        }
    }

    private static JsonNode resolve(JsonNode node) {
        while (node.has("$ref")) {
            node = contractTree.at(node.get("$ref").asText().substring(1));
        }
        return node;
    }

    static void assertSpecAccepts(Call call) {
        ValidationReport report = validator.validateRequest(call.asValidatorRequest());
        assertFalse(report.hasErrors(), () -> call + " is valid for the service but openapi.yaml refuses it:\n"
                + SimpleValidationReportFormat.getInstance().apply(report));
    }

    static void assertSpecRejects(Call call) {
        assertTrue(validator.validateRequest(call.asValidatorRequest()).hasErrors(),
                () -> call + " is refused by the service but openapi.yaml accepts it");
    }

    static Operation operation(Request.Method method, String template) {
        PathItem item = contract.getPaths().get(template);
        if (item == null) {
            fail("openapi.yaml has no path " + template);
        }
        Operation operation = item.readOperationsMap().get(PathItem.HttpMethod.valueOf(method.name()));
        if (operation == null) {
            fail("openapi.yaml has no " + method + " " + template);
        }
        return operation;
    }

    Answer send(Call call) {
        URI base = URI.create(root.toString());
        try {
            if (call.needsRawBytes()) {
                return sendRaw(base, call);
            }
            HttpResponse<String> response = http.send(call.asHttpRequest(base), HttpResponse.BodyHandlers.ofString());
            return new Answer(response.statusCode(), response.headers().map(), response.body());
        } catch (IOException e) {
            throw new IllegalStateException(call + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * HTTP/1.1 over a plain socket, for header values the JDK client would not send as they are (it writes header
     * values as US-ASCII, so "clé" would leave as "cl?", a valid key). Here every character goes out as one
     * ISO-8859-1 byte, the way a client that sends a non-ASCII key does.
     */
    static Answer sendRaw(URI base, Call call) throws IOException {
        byte[] body = call.body == null ? new byte[0] : call.body.getBytes(StandardCharsets.UTF_8);
        StringBuilder head = new StringBuilder(call.method + " " + call.pathAndQuery() + " HTTP/1.1\r\n")
                .append("Host: ").append(base.getHost()).append(':').append(base.getPort()).append("\r\n");
        call.headers.forEach((name, value) -> head.append(name).append(": ").append(value).append("\r\n"));
        head.append("Content-Length: ").append(body.length).append("\r\nConnection: close\r\n\r\n");
        byte[] received;
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
            received = socket.getInputStream().readAllBytes();
        }
        String text = new String(received, StandardCharsets.ISO_8859_1);
        int endOfHead = text.indexOf("\r\n\r\n");
        assertTrue(endOfHead > 0, "no HTTP answer: " + text);
        String[] lines = text.substring(0, endOfHead).split("\r\n");
        Map<String, List<String>> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.computeIfAbsent(lines[i].substring(0, colon).trim(), name -> new ArrayList<>())
                    .add(lines[i].substring(colon + 1).trim());
        }
        return new Answer(Integer.parseInt(lines[0].split(" ")[1]), headers,
                new String(received, endOfHead + 4, received.length - endOfHead - 4, StandardCharsets.UTF_8));
    }

    static String newKey() {
        return "contract-" + UUID.randomUUID();
    }

    static Set<String> fieldNames(JsonNode node) {
        Set<String> names = new TreeSet<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }

    /** allOf/anyOf/oneOf are sets: their order carries no meaning and the served document may reorder them. */
    static JsonNode normalized(JsonNode node) {
        if (node instanceof ObjectNode object) {
            ObjectNode copy = object.objectNode();
            object.fields().forEachRemaining(field -> {
                JsonNode value = normalized(field.getValue());
                if (Set.of("allOf", "anyOf", "oneOf").contains(field.getKey()) && value instanceof ArrayNode array) {
                    List<JsonNode> members = new ArrayList<>();
                    array.forEach(members::add);
                    members.sort(Comparator.comparing(JsonNode::toString));
                    ArrayNode sorted = array.arrayNode();
                    members.forEach(sorted::add);
                    value = sorted;
                }
                copy.set(field.getKey(), value);
            });
            return copy;
        }
        if (node instanceof ArrayNode array) {
            ArrayNode copy = array.arrayNode();
            array.forEach(member -> copy.add(normalized(member)));
            return copy;
        }
        return node;
    }

    static SimpleResponse.Builder jsonAnswer(int status, String body) {
        return SimpleResponse.Builder.status(status).withContentType("application/json").withBody(body);
    }

    /** The event signed as Stripe signs it, with the webhook secret the test resource gave the service. */
    static String signed(String event) {
        return dev.chargeonce.sandbox.SandboxWebhooks.signatureHeader(event,
                dev.chargeonce.testing.PostgresAndSandbox.WEBHOOK_SECRET, System.currentTimeMillis() / 1000);
    }

    /** A charge of 1000 that succeeded: what a refund test starts from. */
    String succeededCharge() {
        return check(Call.createCharge(newKey(), VISA), 201).json().get("id").asText();
    }

    /** A request's head as given, over a plain socket; the answer as received. */
    static Answer rawAnswer(URI base, String head) throws IOException {
        byte[] received;
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(15_000);
            socket.getOutputStream().write(head.getBytes(StandardCharsets.ISO_8859_1));
            socket.getOutputStream().flush();
            received = socket.getInputStream().readAllBytes();
        }
        String text = new String(received, StandardCharsets.ISO_8859_1);
        int endOfHead = text.indexOf("\r\n\r\n");
        assertTrue(endOfHead > 0, "no HTTP answer: " + text);
        String[] lines = text.substring(0, endOfHead).split("\r\n");
        Map<String, List<String>> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.computeIfAbsent(lines[i].substring(0, colon).trim(), name -> new ArrayList<>()).add(lines[i].substring(colon + 1).trim());
        }
        return new Answer(Integer.parseInt(lines[0].split(" ")[1]), headers, text.substring(endOfHead + 4));
    }
}

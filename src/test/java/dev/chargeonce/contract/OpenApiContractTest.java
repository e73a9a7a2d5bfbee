package dev.chargeonce.contract;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static dev.chargeonce.testing.TestClients.GLOBEX_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.atlassian.oai.validator.OpenApiInteractionValidator;
import com.atlassian.oai.validator.model.Request;
import com.atlassian.oai.validator.model.SimpleRequest;
import com.atlassian.oai.validator.model.SimpleResponse;
import com.atlassian.oai.validator.report.LevelResolver;
import com.atlassian.oai.validator.report.SimpleValidationReportFormat;
import com.atlassian.oai.validator.report.ValidationReport;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.common.http.TestHTTPResource;
import io.quarkus.test.junit.QuarkusTest;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.Operation;
import io.swagger.v3.oas.models.PathItem;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import jakarta.inject.Inject;
import jakarta.ws.rs.HttpMethod;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.net.Socket;
import java.net.URI;
import java.net.URL;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The top-level {@code openapi.yaml} is the contract, and this test keeps it true: it makes the running service
 * produce every status that the file documents for every endpoint, with real requests, and validates each answer
 * (status, headers, body) against the file with Atlassian's swagger-request-validator. A documented status that no
 * request produced fails the last test; an answer the file does not describe fails where it happens.
 *
 * <p>It also checks the request side where OpenAPI can express the rule: what the service refuses with a 400,
 * the file's request schema refuses too, and the largest valid charge passes both. And it checks that the service
 * serves this very file at {@code /q/openapi}.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OpenApiContractTest {

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

    static SimpleResponse.Builder jsonAnswer(int status, String body) {
        return SimpleResponse.Builder.status(status).withContentType("application/json").withBody(body);
    }

    // ---- POST /v1/charges ----------------------------------------------------------------------------------------

    @Test
    @Order(10)
    void chargeIs201AndEveryRetryIsTheIdenticalReplay() {
        Call create = Call.createCharge(newKey(), VISA);
        assertSpecAccepts(create);

        Answer first = check(create, 201);
        assertNull(first.header("Idempotent-Replayed"), "a first answer is not a replay");
        JsonNode charge = first.json();
        assertEquals("succeeded", charge.get("status").asText());

        Answer replay = check(create, 201);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body(), "a replay is byte for byte the first answer");

        String id = charge.get("id").asText();
        Answer read = check(Call.getCharge(id), 200);
        assertEquals(id, read.json().get("id").asText());

        Answer page = check(Call.listCharges().query("limit", "5"), 200);
        assertEquals(id, page.json().get("data").get(0).get("id").asText(), "newest first");
        check(Call.listCharges(), 200);
    }

    @Test
    @Order(11)
    void theLargestValidChargePassesTheSchemaAndTheService() {
        // Every limit at its maximum: the schema and the parser agree on where valid ends.
        StringBuilder metadata = new StringBuilder("{");
        for (int i = 0; i < 47; i++) {
            String key = String.format("k%02d", i) + "x".repeat(37);
            metadata.append(i == 0 ? "" : ",").append('"').append(key).append("\":\"").append("v".repeat(500)).append('"');
        }
        metadata.append('}');
        String body = "{\"amount\": 99999999, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", "
                + "\"customer\": \"cus_" + "C".repeat(251) + "\", \"description\": \"" + "d".repeat(1000) + "\", "
                + "\"metadata\": " + metadata + "}";
        // 255 printable ASCII characters (space to tilde); not starting or ending with a space, which HTTP trims.
        StringBuilder key = new StringBuilder();
        for (int c = 0x21; key.length() < 255; c = c == 0x7e ? 0x20 : c + 1) {
            key.append((char) c);
        }
        key.setCharAt(254, 'Z');
        Call create = Call.createCharge(key.toString(), body);
        assertSpecAccepts(create);
        stripe.customer("cus_" + "C".repeat(251), dev.chargeonce.testing.TestClients.ACME); // the client's own customer
        check(create, 201);
    }

    @Test
    @Order(20)
    void declineIs402AndIsReplayedLikeASuccess() {
        Call declined = Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_card_visa_chargeDeclinedInsufficientFunds"));
        assertSpecAccepts(declined);
        Answer first = check(declined, 402);
        JsonNode error = first.json().get("error");
        assertEquals("card_error", error.get("type").asText());
        assertEquals("insufficient_funds", error.get("decline_code").asText());
        Answer replay = check(declined, 402);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body());

        // The declined charge is readable, as failed.
        JsonNode charge = check(Call.getCharge(error.get("charge").asText()), 200).json();
        assertEquals("failed", charge.get("status").asText());
    }

    @Test
    @Order(22)
    void threeDSecureAndBankDebitsAre202AndReplayed() {
        Call needsAction = Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_card_authenticationRequired"));
        Answer first = check(needsAction, 202);
        assertEquals("requires_action", first.json().get("status").asText());
        assertTrue(first.json().hasNonNull("client_secret"));
        Answer replay = check(needsAction, 202);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body());
        // Readable while the customer has not authenticated.
        assertEquals("requires_action", check(Call.getCharge(first.json().get("id").asText()), 200).json().get("status").asText());

        Answer debit = check(Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_sandbox_processing")), 202);
        assertEquals("processing", debit.json().get("status").asText());
    }

    // ---- POST /v1/webhooks/stripe -----------------------------------------------------------------------------------

    @Test
    @Order(23)
    void aSignedEventIs200AndABadSignatureIs400() {
        String event = "{\"id\":\"evt_contract" + newKey().substring(0, 8) + "\",\"object\":\"event\",\"api_version\":\""
                + dev.chargeonce.sandbox.SandboxWebhooks.DEFAULT_API_VERSION + "\",\"created\":" + System.currentTimeMillis() / 1000
                + ",\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_contract\",\"object\":\"payment_intent\","
                + "\"status\":\"succeeded\",\"metadata\":{}}}}";
        Answer accepted = check(Call.webhook(event, signed(event)), 200);
        assertFalse(accepted.json().get("duplicate").asBoolean());
        assertTrue(check(Call.webhook(event, signed(event)), 200).json().get("duplicate").asBoolean(), "a redelivery");
        Answer refused = check(Call.webhook(event, "t=1,v1=00"), 400);
        assertEquals("Stripe-Signature", refused.json().get("error").get("param").asText());
        Call unsigned = Call.webhook(event, null);
        assertSpecRejects(unsigned);
        assertEquals("signature_missing", check(unsigned, 400).json().get("error").get("code").asText());
    }

    static String signed(String event) {
        return dev.chargeonce.sandbox.SandboxWebhooks.signatureHeader(event,
                dev.chargeonce.testing.PostgresAndSandbox.WEBHOOK_SECRET, System.currentTimeMillis() / 1000);
    }

    @Test
    @Order(21)
    void aChargeStripeRefusesIsAFinal400NamingTheCharge() {
        // Valid for this service, unknown to Stripe: Stripe's refusal is final, stored and replayed.
        Call refused = Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_card_doesNotExist"));
        assertSpecAccepts(refused);
        Answer first = check(refused, 400);
        JsonNode error = first.json().get("error");
        assertEquals("resource_missing", error.get("code").asText());
        assertEquals("payment_method", error.get("param").asText());
        Answer replay = check(refused, 400);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body());

        JsonNode charge = check(Call.getCharge(error.get("charge").asText()), 200).json();
        assertEquals("failed", charge.get("status").asText());
        assertTrue(charge.get("payment_intent").isNull());
    }

    @Test
    @Order(30)
    void sameKeyInFlightIs409WithRetryAfter() throws Exception {
        Call create = Call.createCharge(newKey(), VISA);
        long createsBefore = stripe.createRequests();
        stripe.faults("latency_ms=1500");
        try {
            CompletableFuture<Answer> first = CompletableFuture.supplyAsync(() -> send(create));
            // The first request holds the claim once its Stripe call has started.
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (stripe.createRequests() == createsBefore) {
                assertTrue(System.nanoTime() < deadline, "the first request never reached Stripe");
                Thread.sleep(20);
            }
            Answer conflict = check(create, 409);
            assertTrue(Integer.parseInt(conflict.header("Retry-After")) >= 1);
            assertEquals("idempotency_key_in_use", conflict.json().get("error").get("code").asText());

            validate(create, first.get(30, TimeUnit.SECONDS), 201);
        } finally {
            stripe.clearFaults();
        }
    }

    @Test
    @Order(31)
    void sameKeyWithAnotherBodyIs422() {
        String key = newKey();
        check(Call.createCharge(key, VISA), 201);
        long createsBefore = stripe.createRequests();
        Call reused = Call.createCharge(key, VISA.replace("1000", "2000"));
        assertSpecAccepts(reused);
        Answer mismatch = check(reused, 422);
        assertEquals("idempotency_key_reused", mismatch.json().get("error").get("code").asText());
        assertEquals(createsBefore, stripe.createRequests(), "a 422 never reaches Stripe");
    }

    static final String FRESH_KEY = "(a new key)";
    static final String NO_KEY = null;

    /** Every kind of 400 the service answers before claiming anything. */
    static Stream<Arguments> invalidRequests() {
        String visaWith = "{\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", ";
        StringBuilder tooManyMetadata = new StringBuilder("{");
        for (int i = 0; i < 51; i++) {
            tooManyMetadata.append(i == 0 ? "" : ",").append("\"k").append(i).append("\":\"v\"");
        }
        tooManyMetadata.append('}');
        return Stream.of(
                // name, Idempotency-Key, body, expected code and param, whether openapi.yaml can express the rule
                Arguments.of("no key", NO_KEY, VISA, "idempotency_key_missing", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("empty key", "", VISA, "idempotency_key_missing", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("key of 256", "k".repeat(256), VISA, "idempotency_key_invalid", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("key with a tab", "tab\there", VISA, "idempotency_key_invalid", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("key not ASCII", "cl\u00e9", VISA, "idempotency_key_invalid", "Idempotency-Key", Spec.REJECTS),
                Arguments.of("not JSON", FRESH_KEY, "{\"amount\": 100,", "body_not_json", null, Spec.REJECTS),
                Arguments.of("not an object", FRESH_KEY, "[1, 2]", "body_not_object", null, Spec.REJECTS),
                Arguments.of("unknown field", FRESH_KEY, visaWith + "\"amout\": 1}", "parameter_unknown", "amout", Spec.REJECTS),
                Arguments.of("no amount", FRESH_KEY, "{\"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}",
                        "parameter_missing", "amount", Spec.REJECTS),
                Arguments.of("decimal amount", FRESH_KEY, VISA.replace("1000", "10.5"), "parameter_invalid_integer", "amount", Spec.REJECTS),
                Arguments.of("exponent amount", FRESH_KEY, VISA.replace("1000", "1e3"), "parameter_invalid_integer", "amount", Spec.REJECTS),
                Arguments.of("integral float amount", FRESH_KEY, VISA.replace("1000", "1000.0"), "parameter_invalid_integer", "amount", Spec.REJECTS),
                Arguments.of("string amount", FRESH_KEY, VISA.replace("1000", "\"1000\""), "parameter_invalid_integer", "amount", Spec.REJECTS),
                Arguments.of("zero amount", FRESH_KEY, VISA.replace("1000", "0"), "amount_out_of_range", "amount", Spec.REJECTS),
                Arguments.of("amount over 99999999", FRESH_KEY, VISA.replace("1000", "100000000"), "amount_out_of_range", "amount", Spec.REJECTS),
                Arguments.of("uppercase currency", FRESH_KEY, VISA.replace("usd", "USD"), "parameter_invalid", "currency", Spec.REJECTS),
                Arguments.of("no payment_method", FRESH_KEY, "{\"amount\": 100, \"currency\": \"usd\"}", "parameter_missing", "payment_method", Spec.REJECTS),
                Arguments.of("numeric payment_method", FRESH_KEY, VISA.replace("\"pm_card_visa\"", "42"), "parameter_invalid", "payment_method", Spec.REJECTS),
                Arguments.of("description of 1001", FRESH_KEY, visaWith + "\"description\": \"" + "d".repeat(1001) + "\"}",
                        "parameter_invalid", "description", Spec.REJECTS),
                Arguments.of("metadata not an object", FRESH_KEY, visaWith + "\"metadata\": [1]}", "parameter_invalid", "metadata", Spec.REJECTS),
                Arguments.of("51 metadata keys", FRESH_KEY, visaWith + "\"metadata\": " + tooManyMetadata + "}", "parameter_invalid", "metadata", Spec.REJECTS),
                Arguments.of("metadata value of 501", FRESH_KEY, visaWith + "\"metadata\": {\"k\": \"" + "v".repeat(501) + "\"}}",
                        "parameter_invalid", "metadata[k]", Spec.REJECTS),
                Arguments.of("metadata number value", FRESH_KEY, visaWith + "\"metadata\": {\"a\": 1}}", "parameter_invalid", "metadata[a]", Spec.REJECTS),
                // OpenAPI 3.0 schemas cannot constrain map keys (no propertyNames): the file states these rules in
                // prose, the service enforces them.
                Arguments.of("metadata key of 41", FRESH_KEY, visaWith + "\"metadata\": {\"" + "m".repeat(41) + "\": \"v\"}}",
                        "parameter_invalid", "metadata[" + "m".repeat(41) + "]", Spec.CANNOT_EXPRESS),
                Arguments.of("reserved metadata key", FRESH_KEY, visaWith + "\"metadata\": {\"chargeonce_charge_id\": \"x\"}}",
                        "parameter_invalid", "metadata[chargeonce_charge_id]", Spec.CANNOT_EXPRESS),
                // JSON parsers (the validator's too) keep the last of duplicate fields; the service refuses them.
                Arguments.of("duplicate field", FRESH_KEY, VISA.replace("\"amount\": 1000", "\"amount\": 1000, \"amount\": 2000"),
                        "body_not_json", null, Spec.CANNOT_EXPRESS));
    }

    enum Spec { REJECTS, CANNOT_EXPRESS }

    @ParameterizedTest(name = "{0}")
    @Order(40)
    @MethodSource("invalidRequests")
    void invalidKeyOrBodyIs400NamingTheParam(String name, String key, String body, String code, String param, Spec spec) {
        Call create = Call.createCharge(FRESH_KEY.equals(key) ? newKey() : key, body);
        if (spec == Spec.REJECTS) {
            assertSpecRejects(create);
        }
        long stripeRequests = stripe.apiRequests();
        JsonNode error = check(create, 400).json().get("error");
        assertEquals(code, error.get("code").asText());
        assertEquals(param, error.get("param").isNull() ? null : error.get("param").asText());
        assertEquals(stripeRequests, stripe.apiRequests(), "a refused request never reaches Stripe");
    }

    @Test
    @Order(50)
    void noValidApiKeyIs401OnEveryEndpoint() {
        Call anonymous = Call.createCharge(newKey(), VISA).without("Authorization");
        assertSpecRejects(anonymous);
        check(anonymous, 401);
        check(Call.createCharge(newKey(), VISA).header("Authorization", "Bearer sk_unknown"), 401);
        check(Call.createCharge(newKey(), VISA).header("Authorization", "Basic " + ACME_KEY), 401);
        check(Call.getCharge("chg_" + "a".repeat(24)).without("Authorization"), 401);
        check(Call.listCharges().without("Authorization"), 401);
    }

    @Test
    @Order(51)
    void acceptWithoutJsonIs406OnEveryEndpoint() {
        Call create = Call.createCharge(newKey(), VISA).header("Accept", "text/plain");
        assertSpecRejects(create);
        check(create, 406);
        check(Call.getCharge("chg_" + "a".repeat(24)).header("Accept", "text/plain"), 406);
        check(Call.listCharges().header("Accept", "text/html"), 406);
    }

    @Test
    @Order(52)
    void bodyOver64KiBIs413() {
        Call big = Call.createCharge(newKey(), "{\"amount\": 100, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", "
                + "\"description\": \"" + "x".repeat(70 * 1024) + "\"}");
        assertSpecRejects(big);
        assertEquals("body_too_large", check(big, 413).json().get("error").get("code").asText());
    }

    @Test
    @Order(53)
    void bodyThatIsNotJsonIs415() {
        Call text = Call.createCharge(newKey(), "amount=100").header("Content-Type", "text/plain");
        assertSpecRejects(text);
        check(text, 415);
        check(Call.createCharge(newKey(), "amount=100").header("Content-Type", "application/x-www-form-urlencoded"), 415);
    }

    @Test
    @Order(60)
    void stripeOutcomeUnknownIs503AndTheRetryChargesOnce() {
        String key = newKey();
        Call create = Call.createCharge(key, VISA);
        stripe.faults("fail_before=1");
        Answer unknown;
        try {
            unknown = check(create, 503);
        } finally {
            stripe.clearFaults();
        }
        assertEquals("stripe_outcome_unknown", unknown.json().get("error").get("code").asText());
        assertTrue(Integer.parseInt(unknown.header("Retry-After")) >= 1);

        // The retry the 503 asks for: looked up at Stripe first, then charged exactly once.
        String id = check(create, 201).json().get("id").asText();
        assertEquals(1, stripe.intentsFor(dev.chargeonce.testing.TestClients.ACME, key).size());
    }

    @Test
    @Order(62)
    void aPaymentIntentStripeHasNotFinishedIs503PaymentProcessing() {
        // Stripe answered 500 (nothing charged); the lookup then finds a PaymentIntent of the key waiting for a
        // payment method with no error: no decline, no answer yet, followed by id.
        String key = newKey();
        Call create = Call.createCharge(key, VISA);
        stripe.plan("fail_before");
        check(create, 503);
        long now = System.currentTimeMillis() / 1000;
        stripe.seed("count=1&created_from=" + now + "&created_to=" + now + "&status=requires_payment_method"
                + "&metadata[chargeonce_key]=" + dev.chargeonce.testing.TestKeys.identity(dev.chargeonce.testing.TestClients.ACME, key));
        try {
            Answer pending = check(create, 503);
            assertEquals("payment_processing", pending.json().get("error").get("code").asText());
            assertTrue(Integer.parseInt(pending.header("Retry-After")) >= 1);
        } finally {
            stripe.forgetSeeded();
        }
    }

    @Test
    @Order(61)
    void databaseUnreachableIs503OnEveryEndpoint() throws SQLException {
        String id = check(Call.createCharge(newKey(), VISA), 201).json().get("id").asText();
        List<Connection> held = new ArrayList<>();
        try {
            // Hold every connection of the service's pool: to the service, the database is gone.
            while (true) {
                try {
                    held.add(primary.getConnection());
                } catch (SQLException exhausted) {
                    break;
                }
            }
            assertFalse(held.isEmpty());
            Answer post = check(Call.createCharge(newKey(), VISA), 503);
            assertEquals("database_unavailable", post.json().get("error").get("code").asText());
            check(Call.getCharge(id), 503);
            check(Call.listCharges(), 503);
            check(Call.createRefund(id, newKey(), "{}"), 503);
            check(Call.listRefunds(id), 503);
            check(Call.getRefund("rfd_" + "a".repeat(24)), 503);
            check(Call.getKey("any-key"), 503);
            String event = "{\"id\":\"evt_dbdown" + newKey().substring(0, 8) + "\",\"object\":\"event\",\"created\":1,"
                    + "\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":{\"id\":\"pi_x\",\"object\":\"payment_intent\","
                    + "\"status\":\"succeeded\",\"metadata\":{}}}}";
            check(Call.webhook(event, signed(event)), 503);
        } finally {
            for (Connection c : held) {
                c.close();
            }
        }
    }

    // ---- GET /v1/charges/{id}, GET /v1/charges -------------------------------------------------------------------

    @Test
    @Order(70)
    void unknownOrAnotherClientsChargeIs404() {
        String acmeCharge = check(Call.createCharge(newKey(), VISA), 201).json().get("id").asText();
        check(Call.getCharge("chg_doesnotexist"), 404);
        Answer foreign = check(Call.getCharge(acmeCharge).header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        assertEquals("id", foreign.json().get("error").get("param").asText());
    }

    @Test
    @Order(71)
    void limitOutsideOneToHundredIs400() {
        for (String limit : List.of("0", "101", "abc")) {
            Call list = Call.listCharges().query("limit", limit);
            assertSpecRejects(list);
            assertEquals("limit", check(list, 400).json().get("error").get("param").asText());
        }
        for (String limit : List.of("1", "100")) {
            Call list = Call.listCharges().query("limit", limit);
            assertSpecAccepts(list);
            assertTrue(check(list, 200).json().get("data").size() <= Integer.parseInt(limit));
        }
    }

    @Test
    @Order(72)
    void bothCursorsOrACursorNamingNoChargeOfTheClientIs400() {
        String id = check(Call.createCharge(newKey(), VISA), 201).json().get("id").asText();
        // OpenAPI 3.0 cannot make two query parameters exclusive: the contract says so in words and lists the code.
        Call both = Call.listCharges().query("starting_after", id).query("ending_before", id);
        assertSpecAccepts(both);
        assertEquals("parameter_invalid", check(both, 400).json().get("error").get("code").asText());
        Call unknown = Call.listCharges().query("starting_after", "chg_" + "0".repeat(24));
        assertSpecAccepts(unknown);
        JsonNode error = check(unknown, 400).json().get("error");
        assertEquals("resource_missing", error.get("code").asText());
        assertEquals("starting_after", error.get("param").asText());
    }

    // ---- refunds: POST and GET /v1/charges/{id}/refunds, GET /v1/refunds/{id} ------------------------------------

    String succeededCharge() {
        return check(Call.createCharge(newKey(), VISA), 201).json().get("id").asText();
    }

    @Test
    @Order(80)
    void refundIs201AndEveryRetryIsTheIdenticalReplay() {
        String chargeId = succeededCharge();
        Call refund = Call.createRefund(chargeId, newKey(), "{\"amount\": 300, \"reason\": \"requested_by_customer\", "
                + "\"metadata\": {\"ticket\": \"T-9\"}}");
        assertSpecAccepts(refund);
        Answer first = check(refund, 201);
        assertNull(first.header("Idempotent-Replayed"));
        assertEquals("succeeded", first.json().get("status").asText());
        Answer replay = check(refund, 201);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body(), "a replay is byte for byte the first answer");

        Call rest = Call.createRefund(chargeId, newKey(), null);
        assertSpecAccepts(rest);
        assertEquals(700, check(rest, 201).json().get("amount").asInt(), "no body: what is left");
        // The JSON null, which a generated client sends for an optional body it was not given, is no body too.
        Call nullBody = Call.createRefund(chargeId, newKey(), "null");
        assertSpecAccepts(nullBody);
        assertEquals("amount_too_large", check(nullBody, 400).json().get("error").get("code").asText(), "nothing is left");

        String refundId = first.json().get("id").asText();
        assertEquals(refundId, check(Call.getRefund(refundId), 200).json().get("id").asText());
        Answer page = check(Call.listRefunds(chargeId).query("limit", "1"), 200);
        assertTrue(page.json().get("has_more").asBoolean());
        assertEquals(2, check(Call.listRefunds(chargeId), 200).json().get("data").size());
        JsonNode charge = check(Call.getCharge(chargeId), 200).json();
        assertEquals(1000, charge.get("amount_refunded").asInt());
        assertTrue(charge.get("refunded").asBoolean());
    }

    @Test
    @Order(81)
    void refundRefusalsAre400BeforeStripeAndStripesOwnIsStored() {
        String chargeId = succeededCharge();
        long asked = stripe.refundCreateRequests();
        Call tooMuch = Call.createRefund(chargeId, newKey(), "{\"amount\": 1001}");
        assertEquals("amount_too_large", check(tooMuch, 400).json().get("error").get("code").asText());
        for (String body : List.of("{\"amount\": 0}", "{\"amount\": 10.5}", "{\"reason\": \"because\"}", "{\"refund\": 1}")) {
            Call invalid = Call.createRefund(chargeId, newKey(), body);
            assertSpecRejects(invalid);
            check(invalid, 400);
        }
        Call noKey = Call.createRefund(chargeId, NO_KEY, "{}");
        assertSpecRejects(noKey);
        assertEquals("Idempotency-Key", check(noKey, 400).json().get("error").get("param").asText());
        String declined = check(Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_card_chargeDeclined")), 402)
                .json().get("error").get("charge").asText();
        assertEquals("charge_not_refundable", check(Call.createRefund(declined, newKey(), "{}"), 400)
                .json().get("error").get("code").asText());
        assertEquals(asked, stripe.refundCreateRequests(), "none of these reached Stripe");

        // Refunded at Stripe outside the service: Stripe's refusal is the key's stored answer.
        String pi = check(Call.getCharge(chargeId), 200).json().get("payment_intent").asText();
        stripe.refundOutsideTheService(pi);
        Call refused = Call.createRefund(chargeId, newKey(), "{\"amount\": 100}");
        Answer first = check(refused, 400);
        assertEquals("charge_already_refunded", first.json().get("error").get("code").asText());
        Answer replay = check(refused, 400);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(first.body(), replay.body());
    }

    @Test
    @Order(82)
    void aRefundThatFailedBeforeItsAnswerIs402AndIsReplayed() {
        // A bank debit's refund stays pending at Stripe; the create's answer is lost (500 after refunding) and the
        // refund fails before the retry finds it. (No webhooks are delivered in this suite.)
        String chargeId = check(Call.createCharge(newKey(), VISA.replace("pm_card_visa", "pm_sandbox_processing")), 202)
                .json().get("id").asText();
        String pi = check(Call.getCharge(chargeId), 200).json().get("payment_intent").asText();
        stripe.settle(pi, "succeeded");
        String event = "{\"id\":\"evt_contract" + newKey().substring(9, 21) + "\",\"object\":\"event\",\"api_version\":\""
                + dev.chargeonce.sandbox.SandboxWebhooks.DEFAULT_API_VERSION + "\",\"created\":" + System.currentTimeMillis() / 1000
                + ",\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":" + stripe.paymentIntent(pi) + "}}";
        check(Call.webhook(event, signed(event)), 200);
        assertEquals("succeeded", check(Call.getCharge(chargeId), 200).json().get("status").asText());

        String key = newKey();
        Call refund = Call.createRefund(chargeId, key, "{\"amount\": 400}");
        stripe.plan("fail_after");
        Answer unknown = check(refund, 503);
        assertEquals("stripe_outcome_unknown", unknown.json().get("error").get("code").asText());
        List<JsonNode> made = stripe.refundsFor(dev.chargeonce.testing.TestClients.ACME, key);
        assertEquals(1, made.size());
        stripe.settleRefund(made.get(0).get("id").asText(), "failed");
        Answer failed = check(refund, 402);
        assertEquals("refund_failed", failed.json().get("error").get("code").asText());
        Answer replay = check(refund, 402);
        assertEquals("true", replay.header("Idempotent-Replayed"));
        assertEquals(failed.body(), replay.body());
    }

    @Test
    @Order(83)
    void refundKeyInFlightIs409AndReusedIs422() throws Exception {
        String chargeId = succeededCharge();
        String key = newKey();
        Call refund = Call.createRefund(chargeId, key, "{\"amount\": 100}");
        stripe.faults("latency_ms=1500");
        try {
            long before = stripe.refundCreateRequests();
            CompletableFuture<Answer> first = CompletableFuture.supplyAsync(() -> send(refund));
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (stripe.refundCreateRequests() == before) {
                assertTrue(System.nanoTime() < deadline, "the first refund never reached Stripe");
                Thread.sleep(20);
            }
            assertTrue(Integer.parseInt(check(refund, 409).header("Retry-After")) >= 1);
            validate(refund, first.get(30, TimeUnit.SECONDS), 201);
        } finally {
            stripe.clearFaults();
        }
        assertEquals("idempotency_key_reused", check(Call.createRefund(chargeId, key, "{\"amount\": 200}"), 422)
                .json().get("error").get("code").asText());
        assertEquals("idempotency_key_reused", check(Call.createRefund(succeededCharge(), key, "{\"amount\": 100}"), 422)
                .json().get("error").get("code").asText(), "one refund key, another charge");
    }

    @Test
    @Order(84)
    void refundOfAnUnknownOrForeignChargeIs404AndRefundsAreTheClientsOwn() {
        String chargeId = succeededCharge();
        String refundId = check(Call.createRefund(chargeId, newKey(), "{\"amount\": 100}"), 201).json().get("id").asText();
        Answer unknown = check(Call.createRefund("chg_doesnotexist", newKey(), "{}"), 404);
        assertEquals("id", unknown.json().get("error").get("param").asText());
        check(Call.createRefund(chargeId, newKey(), "{}").header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        check(Call.listRefunds(chargeId).header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        check(Call.listRefunds("chg_doesnotexist"), 404);
        check(Call.getRefund(refundId).header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        check(Call.getRefund("rfd_doesnotexist"), 404);
    }

    @Test
    @Order(85)
    void refundEndpointsRefuseWhatChargeEndpointsRefuse() {
        String chargeId = succeededCharge();
        check(Call.createRefund(chargeId, newKey(), "{}").without("Authorization"), 401);
        check(Call.listRefunds(chargeId).without("Authorization"), 401);
        check(Call.getRefund("rfd_" + "a".repeat(24)).without("Authorization"), 401);
        check(Call.createRefund(chargeId, newKey(), "{}").header("Accept", "text/plain"), 406);
        check(Call.listRefunds(chargeId).header("Accept", "text/plain"), 406);
        check(Call.getRefund("rfd_" + "a".repeat(24)).header("Accept", "text/plain"), 406);
        Call big = Call.createRefund(chargeId, newKey(), "{\"metadata\": {\"k\": \"" + "x".repeat(70 * 1024) + "\"}}");
        assertEquals("body_too_large", check(big, 413).json().get("error").get("code").asText());
        check(Call.createRefund(chargeId, newKey(), "amount=1").header("Content-Type", "text/plain"), 415);
        for (String limit : List.of("0", "101", "abc")) {
            Call list = Call.listRefunds(chargeId).query("limit", limit);
            assertSpecRejects(list);
            assertEquals("limit", check(list, 400).json().get("error").get("param").asText());
        }
    }

    @Test
    @Order(86)
    void refundWithStripeOutcomeUnknownIs503AndTheRetryRefundsOnce() {
        String chargeId = succeededCharge();
        String key = newKey();
        Call refund = Call.createRefund(chargeId, key, "{\"amount\": 100}");
        stripe.plan("fail_before");
        assertEquals("stripe_outcome_unknown", check(refund, 503).json().get("error").get("code").asText());
        check(refund, 201);
        assertEquals(1, stripe.refundsFor(dev.chargeonce.testing.TestClients.ACME, key).size());
    }

    @Test
    @Order(91)
    void anAddressThatKeepsFailingAuthenticationIs429OnEveryAuthenticatedOperationYetAValidKeyPasses() {
        // An address of its own (X-Forwarded-For, trusted in the test profile), so that no other test is slowed.
        String address = "203.0.113." + (1 + new java.util.Random().nextInt(250));
        int limit = org.eclipse.microprofile.config.ConfigProvider.getConfig().getValue("chargeonce.auth.throttle.failures", Integer.class);
        for (int i = 0; i < limit; i++) {
            check(Call.listCharges().header("Authorization", "Bearer sk_guess_" + i).header("X-Forwarded-For", address), 401);
        }
        String charge = "chg_" + "a".repeat(24);
        List<Call> all = List.of(Call.createCharge(newKey(), VISA), Call.listCharges(), Call.getCharge(charge),
                Call.createRefund(charge, newKey(), "{}"), Call.listRefunds(charge), Call.getRefund("rfd_" + "a".repeat(24)), Call.getKey("k"));
        for (Call call : all) {
            Answer blocked = check(call.header("X-Forwarded-For", address).header("Authorization", "Bearer sk_guess_more"), 429);
            assertEquals("too_many_failed_authentications", blocked.json().get("error").get("code").asText());
            assertTrue(Integer.parseInt(blocked.header("Retry-After")) >= 1);
        }
        // Only failures are refused: the address's valid key still passes.
        check(Call.listCharges().header("X-Forwarded-For", address), 200);
        check(Call.listCharges().header("X-Forwarded-For", "203.0.113.251"), 200); // another address is not blocked
    }

    @Test
    @Order(87)
    void aKeysStatusIsReadableByItsClientOnly() {
        String key = "status/" + newKey() + " with spaces";
        String charge = check(Call.createCharge(key, VISA), 201).json().get("id").asText();
        Answer status = check(Call.getKey(key), 200);
        assertEquals("completed", status.json().get("status").asText());
        assertEquals(charge, status.json().get("charge").asText());
        assertEquals(key, status.json().get("key").asText());
        check(Call.getKey(key).header("Authorization", "Bearer " + GLOBEX_KEY), 404);
        check(Call.getKey("never-" + newKey()), 404);
        assertEquals("operation", check(Call.getKey(key).query("operation", "payout"), 400).json().get("error").get("param").asText());
        check(Call.getKey(key).without("Authorization"), 401);
        check(Call.getKey(key).header("Accept", "text/plain"), 406);
    }

    // ---- what the HTTP server answers before the service runs ---------------------------------------------------

    @Test
    @Order(90)
    void everyOperationDocumentsTheHttpServersRefusalsInTheErrorShape() throws Exception {
        URI base = URI.create(root.toString());
        contract.getPaths().forEach((template, item) -> item.readOperationsMap().forEach((method, operation) -> {
            String path = template.replace("{id}", "chg_" + "a".repeat(24)).replace("{key}", "k");
            Call call = new Call(Request.Method.valueOf(method.name()), template, path, null);
            try {
                Answer malformed = rawAnswer(base, method.name() + " " + path + " HTTP/1.1\r\nHost: x\r\nNo colon here\r\n"
                        + "Connection: close\r\n\r\n");
                assertEquals("request_malformed", validate(call, malformed, 400).json().path("error").path("code").asText());
                Answer uriTooLong = rawAnswer(base, method.name() + " " + path + "?pad=" + "p".repeat(8_000) + " HTTP/1.1\r\nHost: x\r\n"
                        + "Connection: close\r\n\r\n");
                assertEquals("uri_too_long", validate(call, uriTooLong, 414).json().path("error").path("code").asText());
                Answer headersTooLarge = rawAnswer(base, method.name() + " " + path + " HTTP/1.1\r\nHost: x\r\nX-Pad: "
                        + "p".repeat(30_000) + "\r\nConnection: close\r\n\r\n");
                assertEquals("headers_too_large", validate(call, headersTooLarge, 431).json().path("error").path("code").asText());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }));
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

    // ---- coverage: documented == produced ------------------------------------------------------------------------

    @Test
    @Order(Integer.MAX_VALUE)
    void everyDocumentedStatusOfEveryEndpointWasProducedAndValidated() {
        Set<String> documented = new TreeSet<>();
        contract.getPaths().forEach((path, item) -> item.readOperationsMap().forEach((method, operation) ->
                operation.getResponses().keySet().stream()
                        .filter(status -> !status.equals("default"))
                        .forEach(status -> documented.add(method + " " + path + " " + status))));
        Set<String> missing = new TreeSet<>(documented);
        missing.removeAll(produced);
        assertTrue(missing.isEmpty(), "documented in openapi.yaml but never produced by the service: " + missing);
        Set<String> undocumented = new TreeSet<>(produced);
        undocumented.removeAll(documented);
        assertTrue(undocumented.isEmpty(), "produced but not documented: " + undocumented);
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

    /** An answer as received: status, headers, body. */
    record Answer(int status, Map<String, List<String>> headers, String body) {

        String header(String name) {
            return headers.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(name))
                    .flatMap(e -> e.getValue().stream()).findFirst().orElse(null);
        }

        JsonNode json() {
            try {
                return new ObjectMapper().readTree(body);
            } catch (IOException e) {
                throw new AssertionError("not JSON: " + body, e);
            }
        }

        @Override
        public String toString() {
            return status + " " + headers + " " + body;
        }
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

    /** One request, as the service receives it and as the validator sees it. */
    static final class Call {
        final Request.Method method;
        final String template;
        final String path;
        final Map<String, String> query = new LinkedHashMap<>();
        final Map<String, String> headers = new LinkedHashMap<>();
        final String body;

        private Call(Request.Method method, String template, String path, String body) {
            this.method = method;
            this.template = template;
            this.path = path;
            this.body = body;
            headers.put("Authorization", "Bearer " + ACME_KEY);
        }

        /** A POST as a client sends it; a null key sends no Idempotency-Key header. */
        static Call createCharge(String idempotencyKey, String body) {
            Call call = new Call(Request.Method.POST, CHARGES, CHARGES, body);
            call.headers.put("Content-Type", "application/json");
            if (idempotencyKey != null) {
                call.headers.put("Idempotency-Key", idempotencyKey);
            }
            return call;
        }

        /** A refund POST; a null key sends no Idempotency-Key header, a null body sends none. */
        static Call createRefund(String chargeId, String idempotencyKey, String body) {
            Call call = new Call(Request.Method.POST, CHARGE_REFUNDS, CHARGES + "/" + chargeId + "/refunds", body);
            call.headers.put("Content-Type", "application/json");
            if (idempotencyKey != null) {
                call.headers.put("Idempotency-Key", idempotencyKey);
            }
            return call;
        }

        static Call listRefunds(String chargeId) {
            return new Call(Request.Method.GET, CHARGE_REFUNDS, CHARGES + "/" + chargeId + "/refunds", null);
        }

        static Call getRefund(String id) {
            return new Call(Request.Method.GET, REFUND, "/v1/refunds/" + id, null);
        }

        /** GET the key's status; the key percent-encoded into the path. */
        static Call getKey(String key) {
            return new Call(Request.Method.GET, KEY, "/v1/idempotency-keys/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20"), null);
        }

        static Call getCharge(String id) {
            return new Call(Request.Method.GET, CHARGE, CHARGES + "/" + id, null);
        }

        static Call listCharges() {
            return new Call(Request.Method.GET, CHARGES, CHARGES, null);
        }

        /** What Stripe sends the webhook endpoint: no API key; {@code signature} null sends no signature. */
        static Call webhook(String event, String signature) {
            Call call = new Call(Request.Method.POST, "/v1/webhooks/stripe", "/v1/webhooks/stripe", event);
            call.headers.remove("Authorization");
            call.headers.put("Content-Type", "application/json");
            if (signature != null) {
                call.headers.put("Stripe-Signature", signature);
            }
            return call;
        }

        /** A document the service serves (not an API operation: never validated against the contract). */
        static Call document(String path) {
            return new Call(Request.Method.GET, path, path, null);
        }

        Call header(String name, String value) {
            headers.put(name, value);
            return this;
        }

        Call without(String name) {
            headers.remove(name);
            return this;
        }

        Call query(String name, String value) {
            query.put(name, value);
            return this;
        }

        SimpleRequest asValidatorRequest() {
            SimpleRequest.Builder request = new SimpleRequest.Builder(method, path);
            headers.forEach(request::withHeader);
            query.forEach(request::withQueryParam);
            if (body != null) {
                request.withBody(body);
            }
            return request.build();
        }

        String pathAndQuery() {
            return path + (query.isEmpty() ? "" : "?" + query.entrySet().stream()
                    .map(e -> e.getKey() + "=" + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
                    .collect(Collectors.joining("&")));
        }

        boolean needsRawBytes() {
            return headers.values().stream().anyMatch(value -> value.chars().anyMatch(c -> c > 0x7e));
        }

        HttpRequest asHttpRequest(URI base) {
            HttpRequest.Builder request = HttpRequest.newBuilder(base.resolve(pathAndQuery()))
                    .timeout(Duration.ofSeconds(30))
                    .method(method.name(), body == null ? HttpRequest.BodyPublishers.noBody()
                            : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
            headers.forEach(request::header);
            return request.build();
        }

        @Override
        public String toString() {
            return method + " " + path + (query.isEmpty() ? "" : " " + query) + " " + headers.keySet();
        }
    }
}

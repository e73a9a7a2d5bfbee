package dev.chargeonce.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.chargeonce.generated.api.ChargesApi;
import dev.chargeonce.generated.api.RefundsApi;
import dev.chargeonce.generated.client.ApiClient;
import dev.chargeonce.generated.client.ApiException;
import dev.chargeonce.generated.client.ApiResponse;
import dev.chargeonce.generated.model.Charge;
import dev.chargeonce.generated.model.ChargeCreateRequest;
import dev.chargeonce.generated.model.ChargeList;
import dev.chargeonce.generated.model.ErrorDetail;
import dev.chargeonce.generated.model.ErrorResponse;
import dev.chargeonce.generated.model.IdempotencyKeyStatus;
import dev.chargeonce.generated.model.Refund;
import dev.chargeonce.generated.model.RefundCreateRequest;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.SandboxControl;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Clients generated from openapi.yaml, used against the packaged service the way an application developer uses them.
 * The build generates both with openapi-generator's defaults (pom.xml, {@code openapi-generator-maven-plugin}):
 * <ul>
 *   <li>Java, library {@code native} (java.net.http and Jackson), compiled with the tests and called from here;</li>
 *   <li>TypeScript, {@code typescript-fetch}, compiled by tsc ({@code src/test/typescript-client}) and run under
 *   node: {@code app.ts} does what the Java half does and fails the test when anything differs.</li>
 * </ul>
 * Both charge, replay (the same key gives the same charge, {@code Idempotent-Replayed}), read each error (400, 401,
 * 409, 422) into the one error model, refund (the Java client sends the JSON {@code null} for a refund without a
 * body), read a key's status, list, and read an answer holding a value their contract does not list (the enumerated
 * values of answers are open strings).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GeneratedClientsIT {

    static final Path TYPESCRIPT = Path.of("src", "test", "typescript-client");
    static final String TYPESCRIPT_INSTALL = "npm ci --prefix src/test/typescript-client";
    static final Pattern IMF_FIXDATE = Pattern.compile(
            "(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \\d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \\d{4} \\d{2}:\\d{2}:\\d{2} GMT");

    ProcessEnvironment env;
    ServiceProcess service;
    SandboxControl stripe;

    @BeforeAll
    void start() {
        env = new ProcessEnvironment("clients");
        service = ServiceProcess.start("generated-clients", env.serviceConfig());
        stripe = new SandboxControl(env.stripe.baseUrl());
    }

    @AfterAll
    void stop() throws IOException {
        if (service != null) {
            service.close();
        }
        if (env != null) {
            env.close();
        }
    }

    /** The client as an application sets it up: the service's address, its API key on every request. */
    ApiClient client(String apiKey) {
        ApiClient client = new ApiClient();
        client.updateBaseUri(service.uri("").toString().replaceAll("/$", ""));
        client.setReadTimeout(Duration.ofSeconds(40));
        if (apiKey != null) {
            client.setRequestInterceptor(request -> request.header("Authorization", "Bearer " + apiKey));
        }
        return client;
    }

    static ChargeCreateRequest visa(long amount) {
        return new ChargeCreateRequest().amount(amount).currency("usd").paymentMethod("pm_card_visa")
                .metadata(Map.of("order_id", "O-" + amount));
    }

    /** What an application does with a refusal: the error model, read from the exception's body. */
    static ErrorDetail error(ApiClient client, ApiException refused) throws IOException {
        return client.getObjectMapper().readValue(refused.getResponseBody(), ErrorResponse.class).getError();
    }

    @Test
    void theJavaClientChargesReplaysRefundsAndReadsEveryError() throws Exception {
        ApiClient client = client(TestClients.ACME_KEY);
        ChargesApi charges = new ChargesApi(client);
        RefundsApi refunds = new RefundsApi(client);

        String key = "java-" + UUID.randomUUID();
        ApiResponse<Charge> first = charges.createChargeWithHttpInfo(key, visa(1000), null);
        assertEquals(201, first.getStatusCode());
        Charge charge = first.getData();
        assertEquals("succeeded", charge.getStatus());
        assertEquals("charge", charge.getObject());
        assertNull(first.getHeaders().get("idempotent-replayed"), "a first answer is no replay");

        ApiResponse<Charge> replay = charges.createChargeWithHttpInfo(key, visa(1000), null);
        assertEquals(201, replay.getStatusCode());
        assertEquals(charge.getId(), replay.getData().getId(), "the same key is the same charge");
        assertEquals(List.of("true"), replay.getHeaders().get("idempotent-replayed"));
        String originalDate = replay.getHeaders().get("idempotent-original-date").get(0);
        assertTrue(IMF_FIXDATE.matcher(originalDate).matches(), originalDate);
        assertTrue(IMF_FIXDATE.matcher(replay.getHeaders().get("idempotency-key-expires").get(0)).matches());
        assertEquals(charge, charges.getCharge(charge.getId()));

        // 400: the error model names the field.
        ApiException invalid = assertThrows(ApiException.class,
                () -> charges.createCharge("java-" + UUID.randomUUID(), visa(1000).currency("USD"), null));
        assertEquals(400, invalid.getCode());
        assertEquals("parameter_invalid", error(client, invalid).getCode());
        assertEquals("currency", error(client, invalid).getParam());
        // 401: no API key.
        ApiException unauthorized = assertThrows(ApiException.class, () -> new ChargesApi(client(null)).getCharge(charge.getId()));
        assertEquals(401, unauthorized.getCode());
        assertEquals("invalid_api_key", error(client, unauthorized).getCode());
        // 422: the same key for another payment.
        ApiException reused = assertThrows(ApiException.class, () -> charges.createCharge(key, visa(2000), null));
        assertEquals(422, reused.getCode());
        assertEquals("idempotency_key_reused", error(client, reused).getCode());
        // 409: the same key while its first request is still at Stripe, with when to come back.
        String slowKey = "java-slow-" + UUID.randomUUID();
        stripe.faults("latency_ms=3000");
        try {
            long creates = stripe.createRequests();
            CompletableFuture<Charge> slow = CompletableFuture.supplyAsync(() -> {
                try {
                    return charges.createCharge(slowKey, visa(1500), null);
                } catch (ApiException e) {
                    throw new IllegalStateException(e.getCode() + " " + e.getResponseBody(), e);
                }
            });
            awaitCreates(creates + 1);
            ApiException inFlight = assertThrows(ApiException.class, () -> charges.createCharge(slowKey, visa(1500), null));
            assertEquals(409, inFlight.getCode());
            assertEquals("idempotency_key_in_use", error(client, inFlight).getCode());
            assertTrue(inFlight.getResponseHeaders().firstValue("Retry-After").isPresent());
            assertEquals("succeeded", slow.get(60, TimeUnit.SECONDS).getStatus());
        } finally {
            stripe.clearFaults();
        }

        // Refunds: a partial one with a reason, then the rest with no body at all (the client sends the JSON null).
        Refund partial = refunds.createRefund(charge.getId(), "java-refund-" + UUID.randomUUID(), null,
                new RefundCreateRequest().amount(300L).reason(RefundCreateRequest.ReasonEnum.REQUESTED_BY_CUSTOMER));
        assertEquals(300L, partial.getAmount());
        assertEquals("requested_by_customer", partial.getReason());
        String restKey = "java-refund-" + UUID.randomUUID();
        ApiResponse<Refund> rest = refunds.createRefundWithHttpInfo(charge.getId(), restKey, null, null);
        assertEquals(201, rest.getStatusCode());
        assertEquals(700L, rest.getData().getAmount(), "no body: what is left");
        ApiResponse<Refund> restAgain = refunds.createRefundWithHttpInfo(charge.getId(), restKey, null, null);
        assertEquals(rest.getData().getId(), restAgain.getData().getId());
        assertEquals(List.of("true"), restAgain.getHeaders().get("idempotent-replayed"));
        assertEquals(2, refunds.listRefunds(charge.getId(), null).getData().size());
        ApiException nothingLeft = assertThrows(ApiException.class,
                () -> refunds.createRefund(charge.getId(), "java-refund-" + UUID.randomUUID(), null, null));
        assertEquals(400, nothingLeft.getCode());
        assertEquals("amount_too_large", error(client, nothingLeft).getCode());

        // The key's status, by a key the path must encode; the client's list of charges.
        String spaced = "java status/" + UUID.randomUUID() + " ?&%";
        Charge spacedCharge = charges.createCharge(spaced, visa(1200), null);
        IdempotencyKeyStatus status = charges.getIdempotencyKey(spaced, null);
        assertEquals("completed", status.getStatus());
        assertEquals("charge", status.getOperation());
        assertEquals(spacedCharge.getId(), status.getCharge());
        assertEquals("refund", charges.getIdempotencyKey(restKey, "refund").getOperation());
        ChargeList page = charges.listCharges(2, null, null, null, null, null);
        assertEquals(2, page.getData().size());
        assertTrue(page.getHasMore());
        ChargeList older = charges.listCharges(100, page.getData().get(1).getId(), null, null, null, null);
        assertTrue(older.getData().stream().noneMatch(c -> c.getId().equals(page.getData().get(0).getId())));
        ApiException bothCursors = assertThrows(ApiException.class,
                () -> charges.listCharges(10, charge.getId(), charge.getId(), null, null, null));
        assertEquals("parameter_invalid", error(client, bothCursors).getCode());
    }

    @Test
    void theJavaModelsReadValuesTheContractDoesNotListYet() throws Exception {
        // Every enumerated value of an answer is a String in the model, not a Java enum that throws on a new value.
        for (var accessor : List.of(Charge.class.getMethod("getStatus"), Charge.class.getMethod("getObject"),
                Refund.class.getMethod("getStatus"), Refund.class.getMethod("getReason"), Refund.class.getMethod("getObject"),
                IdempotencyKeyStatus.class.getMethod("getStatus"), IdempotencyKeyStatus.class.getMethod("getOperation"),
                ChargeList.class.getMethod("getObject"), ErrorDetail.class.getMethod("getCode"), ErrorDetail.class.getMethod("getType"))) {
            assertEquals(String.class, accessor.getReturnType(), accessor.toString());
        }
        ApiClient client = client(TestClients.ACME_KEY);
        Charge real = new ChargesApi(client).createCharge("java-" + UUID.randomUUID(), visa(900), null);
        String json = client.getObjectMapper().writeValueAsString(real)
                .replace("\"succeeded\"", "\"disputed\"").replace("\"charge\"", "\"charge_v2\"");
        assertNotEquals(client.getObjectMapper().writeValueAsString(real), json);
        Charge future = client.getObjectMapper().readValue(json, Charge.class);
        assertEquals("disputed", future.getStatus());
        assertEquals("charge_v2", future.getObject());
        assertEquals(real.getId(), future.getId(), "the rest of the answer is read as usual");
        IdempotencyKeyStatus key = client.getObjectMapper().readValue("{\"object\":\"idempotency_key\",\"key\":\"k\","
                + "\"operation\":\"payout\",\"status\":\"archived\",\"created\":1,\"expires\":null,\"lease_expires\":null,"
                + "\"stripe_attempt\":1}", IdempotencyKeyStatus.class);
        assertEquals("archived", key.getStatus());
        assertEquals("payout", key.getOperation());
    }

    @Test
    void theTypeScriptClientDoesTheSameUnderNode() throws Exception {
        String node = require("node", "Node.js 20+ (Debian: apt-get install nodejs npm)");
        Path tsc = TYPESCRIPT.resolve("node_modules/typescript/bin/tsc");
        if (!Files.isRegularFile(tsc)) {
            // The compiler the lockfile pins, from npm, as Maven fetches the generator: a fresh clone needs no step.
            String npm = require("npm", "Node.js 20+ and npm (Debian: apt-get install nodejs npm)");
            Run installed = run(List.of(npm, "ci", "--prefix", TYPESCRIPT.toString(), "--no-audit", "--no-fund",
                    "--loglevel=error"), Map.of());
            assertEquals(0, installed.exit(), "`" + TYPESCRIPT_INSTALL + "` failed:\n" + installed.output());
            assertTrue(Files.isRegularFile(tsc), "`" + TYPESCRIPT_INSTALL + "` installed no tsc at " + tsc);
        }
        Path generated = Path.of("target", "generated-clients", "typescript", "index.ts");
        assertTrue(Files.isRegularFile(generated), "the build generates the TypeScript client first: " + generated);
        Run compiled = run(List.of(node, tsc.toString(), "-p", TYPESCRIPT.resolve("tsconfig.json").toString()), Map.of());
        assertEquals(0, compiled.exit(), "tsc refused the generated client or app.ts:\n" + compiled.output());
        Run app = run(List.of(node, "target/typescript-client/src/test/typescript-client/app.js"), Map.of(
                "CHARGEONCE_URL", service.uri("").toString().replaceAll("/$", ""),
                "CHARGEONCE_API_KEY", TestClients.ACME_KEY,
                "SANDBOX_URL", env.stripe.baseUrl()));
        assertEquals(0, app.exit(), "the TypeScript client against the service:\n" + app.output());
        assertTrue(app.output().contains("typescript client: all checks held"), app.output());
    }

    void awaitCreates(long n) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (stripe.createRequests() < n) {
            assertTrue(System.nanoTime() < deadline, "Stripe never saw the slow charge");
            Thread.sleep(20);
        }
    }

    record Run(int exit, String output) {
    }

    static Run run(List<String> command, Map<String, String> environment) throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(environment);
        Process process = builder.start();
        CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(output unreadable: " + e + ")";
            }
        });
        if (!process.waitFor(3, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            fail(command + " did not finish within 3 minutes");
        }
        try {
            return new Run(process.exitValue(), output.get(10, TimeUnit.SECONDS));
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A program on the PATH, or a failure that says what to install: never a skipped test. */
    static String require(String program, String install) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (Files.isExecutable(Path.of(dir, program))) {
                return Path.of(dir, program).toString();
            }
        }
        return fail(program + " is not on the PATH: install " + install + ".");
    }
}

package dev.chargeonce.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.atlassian.oai.validator.model.Request;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import java.io.IOException;
import java.net.URI;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The top-level {@code openapi.yaml} is the contract, and this test keeps it true: it makes the running service
 * produce every status that the file documents for every endpoint, with real requests, and validates each answer
 * (status, headers, body) against the file with Atlassian's swagger-request-validator. A documented status that no
 * request produced fails the last test; an answer the file does not describe fails where it happens.
 *
 * <p>It also checks the request side where OpenAPI can express the rule: what the service refuses with a 400,
 * the file's request schema refuses too, and the largest valid charge passes both. And it checks that the service
 * serves this very file at {@code /q/openapi}.
 *
 * <p>Its checks are written by concern in the classes it extends ({@link ContractDocumentChecks},
 * {@link ContractChargeChecks}, {@link ContractRefusalChecks}, {@link ContractRefundChecks}, on
 * {@link ContractSupport}), and run here as one class in the order of their {@code @Order}: the last check needs
 * every answer all the others produced. Here: what the HTTP server answers before the service runs, the failed
 * authentications' throttle (late, on an address of its own), and that coverage.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OpenApiContractTest extends ContractRefundChecks {

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
}

package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.chargeonce.web.ApiException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The contract's rule for a key (schema {@code IdempotencyKey} of openapi.yaml, used by the header and by the status
 * endpoint's path) and the service's ({@link IdempotencyKey#parse}) are one rule: every value the pattern and lengths
 * allow is a key, every other is a {@code 400}. A generated client, or a contract fuzzer, that sends what the contract
 * allows is never refused.
 */
class IdempotencyKeyContractTest {

    @Test
    void theContractAllowsExactlyTheKeysTheServiceTakes() throws IOException {
        JsonNode schema = new ObjectMapper(new YAMLFactory()).readTree(Path.of("openapi.yaml").toFile())
                .at("/components/schemas/IdempotencyKey");
        Pattern pattern = Pattern.compile(schema.get("pattern").asText());
        int minLength = schema.get("minLength").asInt();
        int maxLength = schema.get("maxLength").asInt();
        List<String> samples = new ArrayList<>(List.of(
                "K", "order-42", "a b", "K ", " K", " ", "  ", "", "a\"", "a\\b", "~!#$%&'()*+,-./:;<=>?@[]^_`{|}",
                "\"K\"", "\" K\"", "\"K \"", "\" \"", "\"\"", "\"a b\"", "\"a\\\"b\"", "\"a\\\\b\"", "\"a\\b\"", "\"a\"b\"",
                "\"unterminated", "\"K\" ", "\"", "cl\u00e9", "tab\there", "nul\0", "\u007f", "k\u00a0",
                "k".repeat(255), "k".repeat(256), " " + "k".repeat(254),
                "\"" + "k".repeat(255) + "\"", "\"" + "k".repeat(256) + "\"", "\"" + "\\\"".repeat(255) + "\"",
                "\"" + "\\\"".repeat(256) + "\""));
        for (char c = 0x20; c < 0x7f; c++) {
            samples.add(String.valueOf(c));
            samples.add("\"" + c + "\"");
        }
        List<String> disagreements = new ArrayList<>();
        for (String sample : samples) {
            boolean contract = sample.length() >= minLength && sample.length() <= maxLength && pattern.matcher(sample).matches();
            boolean service;
            try {
                IdempotencyKey.parse(sample);
                service = true;
            } catch (ApiException refused) {
                service = false;
            }
            if (contract != service) {
                disagreements.add("[" + sample + "] contract " + (contract ? "allows" : "refuses") + ", service "
                        + (service ? "takes" : "refuses"));
            }
        }
        assertEquals(List.of(), disagreements);
    }
}

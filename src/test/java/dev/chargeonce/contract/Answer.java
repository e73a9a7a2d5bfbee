package dev.chargeonce.contract;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.List;
import java.util.Map;

/** An answer as received by the contract's checks: status, headers, body. */
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

package dev.chargeonce.refund;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.chargeonce.web.ApiException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** A refund's body is optional: none, {@code {}} and the JSON {@code null} are one request, what is left refunded. */
class RefundRequestTest {

    static RefundRequest parse(String body) {
        return RefundRequest.parse(body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void theJsonNullAGeneratedClientSendsForNoBodyIsNoBody() {
        RefundRequest none = parse("");
        assertEquals(none, parse("{}"));
        assertEquals(none, parse("null"));
        assertEquals(none, parse(" null\n"));
        assertEquals(none.canonicalJson(), parse("null").canonicalJson(), "one fingerprint: a retry may send either");
    }

    @Test
    void otherBodiesThatAreNoObjectAreStillRefused() {
        for (String body : new String[] {"[null]", "\"null\"", "0", "null null", "nul"}) {
            ApiException refused = assertThrows(ApiException.class, () -> parse(body), body);
            assertEquals(400, refused.status(), body);
        }
    }
}

package dev.chargeonce.sandbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.sandbox.SandboxHttp.Response;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The sliding window and its records on a clock the test moves: exact, whatever the machine's load. */
class SandboxLimitsTest {

    private static final long MS = 1_000_000L;
    private final AtomicLong now = new AtomicLong(5_000 * MS);
    private final SandboxLimits limits = new SandboxLimits(now::get);

    private String admitAt(long millis, String endpoint) {
        now.set(5_000 * MS + millis * MS);
        String reason = limits.admit(endpoint);
        if (reason == null) {
            limits.finished();
        }
        return reason;
    }

    private JsonNode json() throws Exception {
        return new ObjectMapper().readTree(limits.json());
    }

    @Test
    void offByDefaultAdmitsEverythingAndRecordsNothing() throws Exception {
        for (int i = 0; i < 100; i++) {
            assertNull(admitAt(0, "payment_intents.create"));
        }
        assertEquals(false, json().get("on").asBoolean());
        assertEquals(0, json().at("/all/admitted").asInt());
    }

    @Test
    void theTwentySixthWithinASecondOfTheFirstOfTwentyFiveIsRefusedAndAtOneSecondAdmitted() throws Exception {
        limits.configure(Map.of("default", "25"));
        for (int i = 0; i < 25; i++) {
            assertNull(admitAt(i * 10, "payment_intents.create"), "request " + i);
        }
        // The first of the 25 arrived at 0 ms: until 1000 ms the window holds 25.
        assertEquals(SandboxLimits.ENDPOINT_RATE, admitAt(999, "payment_intents.create"));
        assertNull(admitAt(1000, "payment_intents.create"));
        // Now the window [10 ms, 1010 ms) holds 25 again (the refused one did not count).
        assertEquals(SandboxLimits.ENDPOINT_RATE, admitAt(1009, "payment_intents.create"));
        assertNull(admitAt(1010, "payment_intents.create"));

        JsonNode create = json().at("/endpoints/payment_intents.create");
        assertEquals(27, create.get("admitted").asInt());
        assertEquals(2, create.at("/refused/endpoint-rate").asInt());
        assertEquals(25, create.get("max_in_any_second").asInt());
    }

    @Test
    void maxInAnySecondIsExactOverTheRecordedArrivals() throws Exception {
        limits.configure(Map.of());   // on, no limit: records only
        // 3 in the first second, then 7 between 1500 and 2400 ms, then 1 at 2500 ms (with the 7: 8 in [1500, 2500)).
        for (long t : new long[] {0, 100, 900, 1500, 1600, 1700, 1800, 1900, 2000, 2400, 2499}) {
            assertNull(admitAt(t, "refunds.create"));
        }
        assertEquals(8, json().at("/endpoints/refunds.create/max_in_any_second").asInt());
        assertEquals(11, json().at("/all/admitted").asInt());
        assertEquals(2499, json().at("/endpoints/refunds.create/first_to_last_ms").asLong(), "the span the 11 were admitted over");
        limits.clearRecords();
        assertEquals(0, json().at("/all/admitted").asInt());
        assertEquals(true, json().get("on").asBoolean(), "cleared, the limits stay on");
        assertNull(admitAt(3000, "refunds.create"));
        assertNull(admitAt(3400, "refunds.create"));
        assertEquals(400, json().at("/endpoints/refunds.create/first_to_last_ms").asLong(), "measured from after the clear");
        limits.reset();
        assertEquals(0, json().at("/all/admitted").asInt());
        assertEquals(false, json().get("on").asBoolean(), "a reset returns to the start-up configuration: off");
    }

    @Test
    void endpointsHaveTheirOwnWindowsAndTheGlobalOneCountsThemAll() throws Exception {
        limits.configure(Map.of("default", "3", "payment_intents.retrieve", "1", "global", "5"));
        assertNull(admitAt(0, "payment_intents.retrieve"));
        assertEquals(SandboxLimits.ENDPOINT_RATE, admitAt(1, "payment_intents.retrieve"));
        assertNull(admitAt(2, "payment_intents.create"));
        assertNull(admitAt(3, "payment_intents.create"));
        assertNull(admitAt(4, "payment_intents.create"));
        assertEquals(SandboxLimits.ENDPOINT_RATE, admitAt(5, "payment_intents.create"));
        assertNull(admitAt(6, "refunds.create"));
        assertEquals(SandboxLimits.GLOBAL_RATE, admitAt(7, "refunds.create"));
        JsonNode all = json().get("all");
        assertEquals(5, all.get("admitted").asInt());
        assertEquals(2, all.at("/refused/endpoint-rate").asInt());
        assertEquals(1, all.at("/refused/global-rate").asInt());
        assertEquals(1, json().at("/endpoints/payment_intents.retrieve/limit").asInt());
        assertEquals(3, json().at("/endpoints/payment_intents.create/limit").asInt());
    }

    @Test
    void concurrencyCountsTheRequestsInProgressAndARefusalIsNeverExecuted() throws Exception {
        limits.configure(Map.of("concurrency", "1"));
        AtomicInteger executed = new AtomicInteger();
        Response[] inner = new Response[1];
        Response outer = limits.apply("payment_intents.create", () -> {
            executed.incrementAndGet();
            inner[0] = limits.apply("payment_intents.retrieve", () -> {
                executed.incrementAndGet();
                return Response.json(200, "{}");
            });
            return Response.json(200, "{}");
        });
        assertEquals(200, outer.status());
        assertEquals(429, inner[0].status());
        assertEquals(1, executed.get(), "the refused request was not executed");
        assertEquals("global-concurrency", inner[0].headers().get("Stripe-Rate-Limited-Reason"));
        assertTrue(inner[0].body().contains("\"code\":\"rate_limit\""), inner[0].body());
        assertEquals(0, json().get("in_flight").asInt());
        assertEquals(1, json().get("max_in_flight").asInt());
        assertEquals(200, limits.apply("payment_intents.retrieve", () -> Response.json(200, "{}")).status());
    }

    @Test
    void startUpConfigurationSurvivesAResetAndUnknownNamesAreRefused() throws Exception {
        limits.configureAtStart("default=25, global=25,payment_intents.create=10");
        limits.configure(Map.of("off", "1"));
        limits.reset();
        assertEquals(true, json().get("on").asBoolean());
        assertEquals(25, json().get("global").asInt());
        assertEquals(10, json().at("/limits/payment_intents.create").asInt());
        assertThrows(IllegalArgumentException.class, () -> limits.configure(Map.of("payment_intent.create", "5")));
        assertThrows(IllegalArgumentException.class, () -> limits.configure(Map.of("default", "-1")));
        assertEquals(10, json().at("/limits/payment_intents.create").asInt(), "a refused configuration changes nothing");
    }

    @Test
    void endpointNamesFromMethodAndRoute() {
        assertEquals("payment_intents.create", SandboxRoutes.endpoint("POST", "/v1/payment_intents"));
        assertEquals("payment_intents.list", SandboxRoutes.endpoint("GET", "/v1/payment_intents"));
        assertEquals("payment_intents.retrieve", SandboxRoutes.endpoint("GET", "/v1/payment_intents/pi_1"));
        assertEquals("payment_intents.cancel", SandboxRoutes.endpoint("POST", "/v1/payment_intents/pi_1/cancel"));
        assertEquals("refunds.create", SandboxRoutes.endpoint("POST", "/v1/refunds"));
        assertEquals("refunds.retrieve", SandboxRoutes.endpoint("GET", "/v1/refunds/re_1"));
        assertEquals("events.list", SandboxRoutes.endpoint("GET", "/v1/events"));
        assertEquals("customers.retrieve", SandboxRoutes.endpoint("GET", "/v1/customers/cus_1"));
        assertEquals("other", SandboxRoutes.endpoint("DELETE", "/v1/customers/cus_1"));
        assertEquals("other", SandboxRoutes.endpoint("GET", "/v1/balance"));
    }
}

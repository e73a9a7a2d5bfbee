package dev.chargeonce.charge;

import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static dev.chargeonce.testing.TestClients.GLOBEX_KEY;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.PostgresAndSandbox;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Cursor pages of {@code GET /v1/charges}: a client walking its charges page by page sees each exactly once, in
 * order, while new charges keep arriving; filters by creation time and status; every malformed query a 400.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ChargeListPagesTest {

    static final String VISA = "{\"amount\": 700, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";
    static final String DECLINED = VISA.replace("pm_card_visa", "pm_card_chargeDeclined");

    static String charge(String apiKey, String body) {
        JsonPath answer = ChargeApiTest.post(apiKey, UUID.randomUUID().toString(), body).then().extract().jsonPath();
        // A decline is a 402 whose error names the charge.
        return answer.getString("id") != null ? answer.getString("id") : answer.getString("error.charge");
    }

    static JsonPath page(String apiKey, String query) {
        return given().header("Authorization", "Bearer " + apiKey).get("/v1/charges?" + query)
                .then().statusCode(200).body("object", equalTo("list")).extract().jsonPath();
    }

    @Test
    void walkingThePagesSeesEveryChargeOnceWhileNewOnesArrive() throws Exception {
        List<String> existing = new ArrayList<>();
        for (int i = 0; i < 25; i++) {
            existing.add(charge(GLOBEX_KEY, VISA));
        }
        JsonPath first = page(GLOBEX_KEY, "limit=7");
        List<String> seen = new ArrayList<>(first.getList("data.id"));
        List<Long> created = new ArrayList<>(first.getList("data.created", Long.class));

        // Charges keep arriving while the client pages on: they are newer than the first page, so no later page
        // may show them, shift because of them or repeat a charge.
        List<String> arriving = new ArrayList<>();
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            for (int i = 0; i < 15; i++) {
                String id = charge(GLOBEX_KEY, VISA);
                synchronized (arriving) {
                    arriving.add(id);
                }
            }
        });
        JsonPath current = first;
        int pages = 1;
        while (current.getBoolean("has_more")) {
            current = page(GLOBEX_KEY, "limit=7&starting_after=" + seen.get(seen.size() - 1));
            List<String> ids = current.getList("data.id");
            assertFalse(ids.isEmpty(), "has_more promised another page");
            seen.addAll(ids);
            created.addAll(current.getList("data.created", Long.class));
            pages++;
        }
        writer.get(120, TimeUnit.SECONDS);

        assertEquals(seen.size(), new HashSet<>(seen).size(), "a charge was shown twice: " + seen);
        assertTrue(seen.containsAll(existing), "every charge that existed when paging began is on a page");
        synchronized (arriving) {
            List<String> shownLater = seen.subList(first.getList("data.id").size(), seen.size()).stream()
                    .filter(arriving::contains).toList();
            assertEquals(List.of(), shownLater, "a charge created after the first page appeared on a later page");
        }
        for (int i = 1; i < created.size(); i++) {
            assertTrue(created.get(i - 1) >= created.get(i), "newest first, at " + i + ": " + created);
        }
        assertTrue(pages >= 4, "25 charges in pages of 7");

        // Back up from the oldest charge with ending_before: the pages are the same ones, newest first each, and
        // the walk back reaches the charges that arrived meanwhile (they are now the newest).
        Set<String> back = new LinkedHashSet<>();
        String before = seen.get(seen.size() - 1);
        List<String> previous = List.of();
        while (true) {
            JsonPath up = page(GLOBEX_KEY, "limit=7&ending_before=" + before);
            List<String> ids = up.getList("data.id");
            if (ids.isEmpty()) {
                assertFalse(up.getBoolean("has_more"));
                break;
            }
            assertTrue(ids.size() <= 7);
            for (String id : ids) {
                assertTrue(back.add(id), "shown twice walking back: " + id);
            }
            previous = ids;
            before = ids.get(0);
            if (!up.getBoolean("has_more")) {
                break;
            }
        }
        assertTrue(back.containsAll(existing));
        assertTrue(back.containsAll(arriving), "walking back reaches the newest charges");
        assertEquals(page(GLOBEX_KEY, "limit=1").getString("data[0].id"), previous.get(0),
                "the last page walking back starts with the newest charge");
        // One page before the oldest is exactly the 7 charges above it, in the forward walk's order.
        int oldest = seen.size() - 1;
        assertEquals(seen.subList(oldest - 7, oldest), page(GLOBEX_KEY, "limit=7&ending_before=" + seen.get(oldest)).getList("data.id"));
    }

    @Test
    void filtersByCreationTimeAndStatus() {
        long from = Instant.now().getEpochSecond();
        String succeeded = charge(GLOBEX_KEY, VISA);
        String failed = charge(GLOBEX_KEY, DECLINED);
        long to = Instant.now().getEpochSecond();

        List<String> inWindow = page(GLOBEX_KEY, "limit=100&created[gte]=" + from + "&created[lte]=" + to).getList("data.id");
        assertTrue(inWindow.containsAll(List.of(failed, succeeded)), inWindow.toString());
        List<String> failedOnes = page(GLOBEX_KEY, "limit=100&status=failed&created[gte]=" + from).getList("data.id");
        assertTrue(failedOnes.contains(failed));
        assertFalse(failedOnes.contains(succeeded));
        JsonPath succeededOnes = page(GLOBEX_KEY, "limit=100&status=succeeded&created[gte]=" + from);
        assertTrue(succeededOnes.getList("data.status").stream().allMatch("succeeded"::equals));
        assertTrue(succeededOnes.getList("data.id").contains(succeeded));
        assertEquals(List.of(), page(GLOBEX_KEY, "created[lte]=" + (from - 86_400 * 365)).getList("data.id"),
                "nothing was created a year before the test ran");
        assertEquals(List.of(), page(GLOBEX_KEY, "created[gte]=" + (to + 86_400)).getList("data.id"));
    }

    @Test
    void aMalformedQueryIsA400NamingTheParameter() {
        String acmeCharge = charge(ACME_KEY, VISA);
        String own = charge(GLOBEX_KEY, VISA);
        // Another client's charge is no cursor, exactly as one that does not exist: the same answer for both.
        String otherClients = given().header("Authorization", "Bearer " + GLOBEX_KEY)
                .get("/v1/charges?starting_after=" + acmeCharge).then().statusCode(400)
                .body("error.code", equalTo("resource_missing")).body("error.param", equalTo("starting_after"))
                .extract().path("error.message");
        String unknown = "chg_" + "A".repeat(24);
        String missing = given().header("Authorization", "Bearer " + GLOBEX_KEY)
                .get("/v1/charges?starting_after=" + unknown).then().statusCode(400)
                .body("error.code", equalTo("resource_missing")).extract().path("error.message");
        assertEquals(otherClients.replace(acmeCharge, unknown), missing);

        for (String[] query : new String[][] {
                {"starting_after=" + own + "&ending_before=" + own, "ending_before"},
                {"starting_after=" + own + "&starting_after=" + own, "starting_after"},
                {"starting_after=", "starting_after"},
                {"ending_before=chg_%00", "ending_before"},
                {"status=paid", "status"},
                {"created[gte]=yesterday", "created[gte]"},
                {"created[lte]=-1", "created[lte]"},
                {"created[gte]=1&created[gte]=2", "created[gte]"},
                {"cursor=1", "cursor"},
                {"limit=", "limit"}}) {
            given().header("Authorization", "Bearer " + GLOBEX_KEY).urlEncodingEnabled(false)
                    .get("/v1/charges?" + query[0]).then().statusCode(400)
                    .body("error.type", equalTo("invalid_request_error"))
                    .body("error.param", equalTo(query[1]));
        }
    }
}

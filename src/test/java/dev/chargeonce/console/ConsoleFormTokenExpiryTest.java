package dev.chargeonce.console;

import static dev.chargeonce.console.ConsoleSecurityTest.get;
import static dev.chargeonce.console.ConsoleSecurityTest.post;
import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** A console form's token expires: past its lifetime it is refused, in its own session too; a fresh page works. */
@QuarkusTest
@TestProfile(ConsoleFormTokenExpiryTest.ShortTokenLifetime.class)
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class ConsoleFormTokenExpiryTest {

    /** Tokens live 4 s here (the default is minutes). */
    public static class ShortTokenLifetime implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("chargeonce.console.form-token-ttl", "4s");
        }
    }

    @Inject
    AgroalDataSource primary;

    @Test
    void anExpiredTokenIsRefused() throws Exception {
        String row = dev.chargeonce.testing.TestRows.parkedCharge(primary, ACME, ACME_KEY, UUID.randomUUID().toString(),
                ConsoleSecurityTest.VISA);
        String rowPage = "/console/rows/charge/" + row;
        ConsoleSecurityTest.Page page = get(rowPage, null);
        String token = page.token("requeue");
        // Fresh, it is accepted (the stale generation is then refused by the fencing: nothing changes).
        assertEquals(303, post(rowPage + "/requeue", page.session(), token, 0).statusCode());

        Thread.sleep(5_000);
        Response expired = post(rowPage + "/requeue", page.session(), token, 0);
        assertEquals(403, expired.statusCode(), expired.asString());
        assertEquals("form_token_expired", expired.jsonPath().getString("error.code"));

        ConsoleSecurityTest.Page reloaded = get(rowPage, page.session());
        assertEquals(303, post(rowPage + "/requeue", reloaded.session(), reloaded.token("requeue"), 0).statusCode());
    }
}

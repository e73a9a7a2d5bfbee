package dev.chargeonce.tenant;

import static dev.chargeonce.testing.TestClients.ACME;
import static dev.chargeonce.testing.TestClients.ACME_KEY;
import static dev.chargeonce.testing.TestClients.GLOBEX;
import static dev.chargeonce.testing.TestClients.GLOBEX_KEY;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.chargeonce.testing.PostgresAndSandbox;
import dev.chargeonce.testing.SandboxControl;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One client cannot charge another client's customer, whatever it knows of the customer's id. */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class CustomerOwnershipTest {

    @ConfigProperty(name = "chargeonce.stripe.api-base")
    String sandboxBase;

    @Inject
    AgroalDataSource primary;

    SandboxControl stripe;

    @BeforeEach
    void setUp() {
        stripe = new SandboxControl(sandboxBase);
        stripe.clearFaults();
    }

    static Response charge(String apiKey, String customer) {
        return given().header("Authorization", "Bearer " + apiKey).header("Idempotency-Key", UUID.randomUUID().toString())
                .contentType(ContentType.JSON).body("{\"amount\": 1000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\", "
                        + "\"customer\": \"" + customer + "\"}").post("/v1/charges");
    }

    @Test
    void anotherClientsCustomerIsRefusedExactlyLikeOneThatDoesNotExist() throws Exception {
        String acmeCustomer = "cus_acme" + UUID.randomUUID().toString().replace("-", "");
        stripe.customer(acmeCustomer, ACME);
        Response mine = charge(ACME_KEY, acmeCustomer);
        assertEquals(201, mine.statusCode(), mine.asString());
        assertEquals(acmeCustomer, mine.jsonPath().getString("customer"));

        long creates = stripe.createRequests();
        Response foreign = charge(GLOBEX_KEY, acmeCustomer);
        assertEquals(400, foreign.statusCode(), foreign.asString());
        assertEquals("resource_missing", foreign.jsonPath().getString("error.code"));
        assertEquals("customer", foreign.jsonPath().getString("error.param"));
        String unknownCustomer = "cus_none" + UUID.randomUUID().toString().replace("-", "");
        Response unknown = charge(GLOBEX_KEY, unknownCustomer);
        assertEquals(foreign.asString().replace(acmeCustomer, unknownCustomer), unknown.asString(),
                "a foreign customer and one that does not exist answer alike");
        assertEquals(creates, stripe.createRequests(), "nothing was created at Stripe for either");
        assertEquals(ACME, owner(acmeCustomer), "the owner Stripe proved is remembered");

        // Remembered: the same answers now come from the database, and the owner keeps its customer.
        assertEquals(400, charge(GLOBEX_KEY, acmeCustomer).statusCode());
        assertEquals(201, charge(ACME_KEY, acmeCustomer).statusCode());
    }

    @Test
    void aCustomerThatNamesNoClientIsNobodysToCharge() {
        String orphan = "cus_orphan" + UUID.randomUUID().toString().replace("-", "");
        stripe.customer(orphan, null);
        assertEquals(400, charge(ACME_KEY, orphan).statusCode());
        assertEquals(400, charge(GLOBEX_KEY, orphan).statusCode());
        String globexCustomer = "cus_globex" + UUID.randomUUID().toString().replace("-", "");
        stripe.customer(globexCustomer, GLOBEX);
        assertEquals(201, charge(GLOBEX_KEY, globexCustomer).statusCode());
        assertEquals(400, charge(ACME_KEY, globexCustomer).statusCode());
    }

    String owner(String customer) throws Exception {
        try (Connection c = primary.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT client_id FROM customer_owners WHERE customer_id = ?")) {
            ps.setString(1, customer);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }
}

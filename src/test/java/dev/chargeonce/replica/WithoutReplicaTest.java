package dev.chargeonce.replica;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.idempotency.Claims;
import dev.chargeonce.idempotency.CommandResults;
import dev.chargeonce.idempotency.Finishes;
import dev.chargeonce.idempotency.OperatorRows;
import dev.chargeonce.idempotency.Reads;
import dev.chargeonce.idempotency.RefundReservations;
import dev.chargeonce.idempotency.Upkeep;
import dev.chargeonce.testing.Management;
import dev.chargeonce.testing.PostgresAndSandbox;
import io.agroal.api.AgroalDataSource;
import io.quarkus.agroal.DataSource;
import io.quarkus.test.common.TestResourceScope;
import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Parameter;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The default: no replica configured. The named data source is inactive, nothing connects to it, every read uses
 * the primary and no lag is exported. And, checked here because it holds whatever is configured: the idempotency
 * path can only ever be handed the default data source.
 */
@QuarkusTest
@WithTestResource(value = PostgresAndSandbox.class, scope = TestResourceScope.GLOBAL)
class WithoutReplicaTest {

    @Inject
    ReadSource reads;

    @Inject
    Reads readEndpoints;

    @Inject
    Finishes finishes;

    @Inject
    AgroalDataSource primary;

    @Test
    void withoutAReplicaEveryReadUsesThePrimaryAndNoLagIsExported() {
        assertFalse(reads.replicaConfigured());
        assertTrue(reads.onReplica(source -> "read").isEmpty(), "there is no replica to run a read on");
        assertSame(primary, reads.primary());
        String metrics = Management.given().when().get("/q/metrics").then().statusCode(200).extract().asString();
        assertFalse(metrics.contains("chargeonce_replica_lag"), "no replica, no lag gauge");
    }

    /** The store's classes: every statement on the idempotency tables runs in one of them. */
    private static final List<Class<?>> STORE = List.of(Claims.class, RefundReservations.class, Finishes.class, Reads.class,
            CommandResults.class, OperatorRows.class, Upkeep.class);

    @Test
    void theIdempotencyPathCanOnlyBeGivenTheDefaultDataSource() {
        for (Class<?> holder : STORE) {
            // Its constructors take no qualified data source, no ReadSource and no dynamic lookup of beans (ArC may
            // add a no-argument one for its client proxy) ...
            for (Constructor<?> constructor : holder.getDeclaredConstructors()) {
                for (Parameter p : constructor.getParameters()) {
                    assertFalse(p.isAnnotationPresent(DataSource.class), holder.getSimpleName() + " asks for a named data source: " + p);
                    assertFalse(p.getType() == ReadSource.class || jakarta.enterprise.inject.Instance.class.isAssignableFrom(p.getType()),
                            holder.getSimpleName() + " could reach the replica through " + p);
                }
            }
            // ... it keeps nothing that could lead to another data source ...
            for (Field f : holder.getDeclaredFields()) {
                assertFalse(f.getType() == ReadSource.class || jakarta.enterprise.inject.Instance.class.isAssignableFrom(f.getType()),
                        holder.getSimpleName() + " holds " + f);
            }
            assertEquals(1, Arrays.stream(holder.getDeclaredFields())
                    .filter(f -> javax.sql.DataSource.class.isAssignableFrom(f.getType())).count(),
                    holder.getSimpleName() + ": one data source field");
        }
        // ... and the one they were given is the default (primary) data source.
        assertSame(primary, readEndpoints.primary());
        assertSame(primary, finishes.primary());
    }
}

package dev.chargeonce.auth;

import io.quarkus.arc.profile.UnlessBuildProfile;
import io.smallrye.config.SmallRyeConfig;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.Initialized;
import jakarta.enterprise.event.Observes;
import jakarta.interceptor.Interceptor;
import java.util.List;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * The packaged service refuses to start under the {@code dev} or {@code test} profile. Their values in
 * application.properties are public: the demo API key {@code sk_demo_key}, the operators' demo passwords, the
 * sandbox's webhook secret {@code whsec_sandbox}, the key-hash secrets. And a {@code %dev.} value wins over the
 * unprefixed one that reads the environment ({@code chargeonce.auth.clients=${CHARGEONCE_CLIENTS}}), so
 * {@code QUARKUS_PROFILE=dev} on a deployment would open it to anyone who has read this repository while refusing
 * the real keys. No setting turns this off: those profiles have no use in the package (its sandbox and embedded
 * database are not in it), and a switch would be one more value that a profile's section could set.
 *
 * <p>Left out of the dev and test builds ({@code ./mvnw quarkus:dev}, the {@code @QuarkusTest} suite), which are
 * where those profiles belong. Any other build has it, whatever its build profile. It refuses as the bean container
 * starts, before Flyway or any worker touches a database and before the HTTP ports open.
 */
@ApplicationScoped
@UnlessBuildProfile(anyOf = {"dev", "test"})
public class ProdProfileGuard {

    static final List<String> REFUSED = List.of("dev", "test");

    // When the bean container starts, before anything uses a bean: before Flyway migrates (it would otherwise connect to
    // whatever database the dev or test profile names first), and before the start's observers.
    void check(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE) @Initialized(ApplicationScoped.class) Object event) {
        // The active profiles with their parents (quarkus.config.profile.parent): a profile of one's own whose parent
        // is dev gets the %dev. values as well.
        List<String> active = ConfigProvider.getConfig().unwrap(SmallRyeConfig.class).getProfiles();
        List<String> refused = active.stream().filter(REFUSED::contains).toList();
        if (!refused.isEmpty()) {
            throw new IllegalStateException("refusing to start: the packaged service runs under the profile(s) " + active
                    + ", and " + refused + " is for ./mvnw quarkus:dev and the tests only: its values in"
                    + " application.properties are public (the demo API key sk_demo_key, the demo operator's password,"
                    + " the webhook secret whsec_sandbox, the key-hash secrets) and win over CHARGEONCE_CLIENTS,"
                    + " STRIPE_API_KEY, STRIPE_WEBHOOK_SECRET and the other environment variables. Run the package under"
                    + " the prod profile (QUARKUS_PROFILE=prod, as k8s/base/configmap.yaml sets it, or no profile at"
                    + " all) or a profile of your own that is not, and has no parent that is, dev or test.");
        }
    }
}

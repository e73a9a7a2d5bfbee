package dev.chargeonce.sandbox;

import io.quarkus.arc.profile.UnlessBuildProfile;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Starts the Stripe sandbox inside the service for {@code quarkus:dev}, so the service runs offline with no
 * setup. Removed at build time from the prod profile: a production build cannot contain it.
 */
@ApplicationScoped
@UnlessBuildProfile("prod")
public class SandboxLauncher {

    private static final Logger LOG = Logger.getLogger(SandboxLauncher.class);

    private final boolean enabled;
    private final int port;
    /** Stripe's rate limits, as {@code StripeSandbox}'s {@code sandbox.limits} ({@code default=25,global=25}); none if absent. */
    private final Optional<String> limits;
    private StripeSandbox sandbox;

    SandboxLauncher(@ConfigProperty(name = "chargeonce.sandbox.enabled", defaultValue = "false") boolean enabled,
                    @ConfigProperty(name = "chargeonce.sandbox.port", defaultValue = "12111") int port,
                    @ConfigProperty(name = "chargeonce.sandbox.limits") Optional<String> limits) {
        this.enabled = enabled;
        this.port = port;
        this.limits = limits;
    }

    void start(@Observes StartupEvent event) throws IOException {
        if (enabled) {
            sandbox = StripeSandbox.start(port);
            limits.filter(spec -> !spec.isBlank()).ifPresent(sandbox::limitAtStart);
            LOG.infof("Stripe sandbox listening on %s (control plane: %s/_sandbox/stats)", sandbox.baseUrl(), sandbox.baseUrl());
        }
    }

    void stop(@Observes ShutdownEvent event) throws IOException {
        if (sandbox != null) {
            sandbox.close();
        }
    }
}

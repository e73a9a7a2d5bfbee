package dev.chargeonce.sandbox;

import io.quarkus.arc.profile.UnlessBuildProfile;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
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
    private StripeSandbox sandbox;

    SandboxLauncher(@ConfigProperty(name = "chargeonce.sandbox.enabled", defaultValue = "false") boolean enabled,
                    @ConfigProperty(name = "chargeonce.sandbox.port", defaultValue = "12111") int port) {
        this.enabled = enabled;
        this.port = port;
    }

    void start(@Observes StartupEvent event) throws IOException {
        if (enabled) {
            sandbox = StripeSandbox.start(port);
            LOG.infof("Stripe sandbox listening on %s (control plane: %s/_sandbox/stats)", sandbox.baseUrl(), sandbox.baseUrl());
        }
    }

    void stop(@Observes ShutdownEvent event) throws IOException {
        if (sandbox != null) {
            sandbox.close();
        }
    }
}

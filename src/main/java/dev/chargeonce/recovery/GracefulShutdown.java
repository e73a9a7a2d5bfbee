package dev.chargeonce.recovery;

import dev.chargeonce.operation.Admission;
import io.quarkus.runtime.ShutdownEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.interceptor.Interceptor;
import java.time.Duration;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * On SIGTERM: take no new claim, let the charges past their claim finish their Stripe call and their row within
 * {@code chargeonce.shutdown.grace}, then let Quarkus close the pool. Whatever is still running then is left
 * {@code processing} with its lease; the recovery worker of another instance finishes it with the same key.
 */
@ApplicationScoped
public class GracefulShutdown {

    private static final Logger LOG = Logger.getLogger(GracefulShutdown.class);

    private final Admission admission;
    private final Duration grace;

    GracefulShutdown(Admission admission, @ConfigProperty(name = "chargeonce.shutdown.grace", defaultValue = "20s") Duration grace) {
        this.admission = admission;
        this.grace = grace;
    }

    void onShutdown(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE) ShutdownEvent event) {
        LOG.infof("shutting down: no new claims; waiting up to %s for charges in flight", grace);
        if (admission.closeAndAwait(grace)) {
            LOG.info("all charges in flight finished");
        } else {
            LOG.warn("grace period over with charges still in flight; the recovery worker will finish them");
        }
    }
}

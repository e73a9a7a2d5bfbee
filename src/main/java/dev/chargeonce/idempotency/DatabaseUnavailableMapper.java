package dev.chargeonce.idempotency;

import dev.chargeonce.web.ApiException;
import dev.chargeonce.web.ErrorMappers;
import jakarta.ws.rs.core.Response;
import java.time.Duration;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/**
 * {@link DatabaseUnavailableException} as the API answers it: {@code 503 database_unavailable} with Retry-After.
 * Beside the exception rather than in {@code web}, so that the web layer knows nothing of the database.
 */
public class DatabaseUnavailableMapper {

    private static final Logger LOG = Logger.getLogger(DatabaseUnavailableMapper.class);

    @ServerExceptionMapper
    public Response database(DatabaseUnavailableException e) {
        LOG.warnf("database unavailable: %s", e.getMessage());
        return ErrorMappers.answer(ApiException.unavailable("database_unavailable",
                "The charge database cannot be reached right now. Retry later; a charge retried with the same Idempotency-Key"
                        + " is never charged twice.", Duration.ofSeconds(2)));
    }
}

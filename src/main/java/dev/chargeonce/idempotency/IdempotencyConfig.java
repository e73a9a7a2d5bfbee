package dev.chargeonce.idempotency;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

@ConfigMapping(prefix = "chargeonce.idempotency")
public interface IdempotencyConfig {

    /** How long a claim holds a key before a retry or the recovery worker may take it over. */
    @WithDefault("30s")
    Duration lease();
}

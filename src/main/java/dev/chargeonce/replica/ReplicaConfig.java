package dev.chargeonce.replica;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/**
 * The optional read replica. The replica itself is the named data source {@code replica}
 * ({@code quarkus.datasource.replica.jdbc.url}, username, password): without a URL it is inactive and every read
 * uses the primary.
 */
@ConfigMapping(prefix = "chargeonce.replica")
public interface ReplicaConfig {

    /**
     * How often the replica's lag is measured (read by the {@code @Scheduled} expression of {@link ReplicaLag});
     * {@code off} disables the measurement.
     */
    @WithDefault("5s")
    String lagInterval();

    /**
     * How far before the replica's last replayed commit a list still asks the primary for rows the replica may
     * not have: a row's {@code created_at} is taken when its INSERT runs, a little before it commits, and commits
     * reach the WAL in nearly (not exactly) timestamp order.
     */
    @WithDefault("5s")
    Duration commitMargin();
}

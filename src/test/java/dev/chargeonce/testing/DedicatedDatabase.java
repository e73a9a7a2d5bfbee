package dev.chargeonce.testing;

import io.agroal.api.AgroalDataSource;
import io.agroal.api.configuration.supplier.AgroalPropertiesReader;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.eclipse.microprofile.config.Config;
import org.eclipse.microprofile.config.ConfigProvider;
import org.flywaydb.core.Flyway;

/**
 * A fresh database on the suite's PostgreSQL, with the service's schema (its own Flyway configuration, pointed at
 * it), dropped again at the end: for a test whose statements scan whole tables, or need statistics of their own,
 * where the suite's shared database holds every other test's rows.
 */
public final class DedicatedDatabase implements AutoCloseable {

    public final String name;
    public final AgroalDataSource dataSource;
    private final AgroalDataSource primary;

    private DedicatedDatabase(String name, AgroalDataSource dataSource, AgroalDataSource primary) {
        this.name = name;
        this.dataSource = dataSource;
        this.primary = primary;
    }

    /** @param primary the suite's primary (where the database is created and dropped, and whose URL and user it takes) */
    public static DedicatedDatabase create(AgroalDataSource primary, Flyway flyway) throws SQLException {
        return create(primary, flyway, null);
    }

    /** @param target the last migration to apply (a schema an earlier release left, mid-upgrade); null: all */
    public static DedicatedDatabase create(AgroalDataSource primary, Flyway flyway, String target) throws SQLException {
        Config config = ConfigProvider.getConfig();
        String primaryUrl = config.getValue("quarkus.datasource.jdbc.url", String.class);
        String name = "dedicated_" + UUID.randomUUID().toString().replace("-", "");
        try (Connection c = primary.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + name);
        }
        String url = primaryUrl.replaceFirst("/[^/?]+(\\?.*)?$", "/" + name + "$1");
        Map<String, String> pool = new LinkedHashMap<>();
        pool.put(AgroalPropertiesReader.JDBC_URL, url);
        pool.put(AgroalPropertiesReader.PRINCIPAL, config.getValue("quarkus.datasource.username", String.class));
        pool.put(AgroalPropertiesReader.CREDENTIAL, config.getValue("quarkus.datasource.password", String.class));
        pool.put(AgroalPropertiesReader.PROVIDER_CLASS_NAME, "org.postgresql.Driver");
        pool.put(AgroalPropertiesReader.MAX_SIZE, "8");
        pool.put(AgroalPropertiesReader.ACQUISITION_TIMEOUT_S, "10");
        AgroalDataSource dataSource = AgroalDataSource.from(new AgroalPropertiesReader().readProperties(pool));
        org.flywaydb.core.api.configuration.FluentConfiguration migrations = Flyway.configure(flyway.getConfiguration().getClassLoader())
                .configuration(flyway.getConfiguration()).dataSource(dataSource);
        if (target != null) {
            migrations.target(target);
        }
        migrations.load().migrate();
        return new DedicatedDatabase(name, dataSource, primary);
    }

    @Override
    public void close() throws SQLException {
        dataSource.close();
        try (Connection c = primary.getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
        }
    }
}

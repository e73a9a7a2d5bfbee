package dev.chargeonce.jdbc;

import io.agroal.api.AgroalDataSource;
import io.agroal.api.configuration.AgroalConnectionFactoryConfiguration;
import io.agroal.api.security.AgroalDefaultSecurityProvider;
import io.agroal.api.security.AgroalSecurityProvider;
import io.quarkus.flyway.FlywayConfigurationCustomizer;
import jakarta.inject.Singleton;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.Driver;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.util.Properties;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.flywaydb.core.api.configuration.FluentConfiguration;

/**
 * Flyway's connections: the pool's URL, credentials and connection properties, with reads bounded by the migrations'
 * limit ({@code chargeonce.migration.read-limit}) instead of the pool's.
 *
 * <p>Why: the pool bounds every read at a few seconds ({@link WatchedSocketFactory}), so that a database that fell
 * silent fails a request instead of holding its connection. A migration is not a request. It may rewrite or
 * distribute a table for minutes, and a pod that starts during a rolling deploy waits on the schema history while
 * another pod migrates. Under the pool's bound that pod's start failed, and the pods of a deploy crash-looped for as
 * long as the longest migration ran. Flyway gets fresh connections (it closes each one it takes), never the pool's.
 */
@Singleton
@io.quarkus.arc.Unremovable // looked up by the Flyway extension, never injected
class MigrationConnections implements FlywayConfigurationCustomizer {

    private final Duration readLimit;

    MigrationConnections(@ConfigProperty(name = "chargeonce.migration.read-limit") Duration readLimit) {
        if (readLimit.isNegative() || readLimit.isZero()) {
            throw new IllegalArgumentException("chargeonce.migration.read-limit must be more than 0, not " + readLimit);
        }
        this.readLimit = readLimit;
    }

    @Override
    public void customize(FluentConfiguration configuration) {
        if (configuration.getDataSource() instanceof AgroalDataSource pool) {
            configuration.dataSource(new Unpooled(pool.getConfiguration().connectionPoolConfiguration()
                    .connectionFactoryConfiguration(), readLimit));
        }
    }

    /** Opens a new connection on each call, as the pool's factory would, with the migrations' read limit. */
    static final class Unpooled implements DataSource {

        private final String url;
        private final Driver driver;
        private final Properties properties = new Properties();

        Unpooled(AgroalConnectionFactoryConfiguration factory, Duration readLimit) {
            this.url = factory.jdbcUrl();
            this.driver = driver(factory.connectionProviderClass());
            properties.putAll(factory.jdbcProperties());
            properties.putAll(securityProperties(factory, factory.principal()));
            for (Object credential : factory.credentials()) {
                properties.putAll(securityProperties(factory, credential));
            }
            properties.setProperty(WatchedSocketFactory.READ_LIMIT, Double.toString(readLimit.toMillis() / 1000.0));
        }

        /** The pool's driver (dev mode's embedded server has a driver of its own), else whichever takes the URL. */
        private static Driver driver(Class<?> provider) {
            if (provider == null || !Driver.class.isAssignableFrom(provider)) {
                return null;
            }
            try {
                return (Driver) provider.getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot load the data source's driver " + provider.getName(), e);
            }
        }

        private Connection connect(Properties with) throws SQLException {
            Connection connection = driver == null ? DriverManager.getConnection(url, with) : driver.connect(url, with);
            if (connection == null) {
                throw new SQLException(driver.getClass().getName() + " does not take " + url);
            }
            return connection;
        }

        /** As Agroal's own factory turns a principal or a credential into connection properties. */
        private static Properties securityProperties(AgroalConnectionFactoryConfiguration factory, Object secret) {
            if (secret == null) {
                return new Properties();
            }
            for (AgroalSecurityProvider provider : factory.securityProviders()) {
                Properties given = provider.getSecurityProperties(secret);
                if (given != null) {
                    return given;
                }
            }
            Properties given = new AgroalDefaultSecurityProvider().getSecurityProperties(secret);
            return given == null ? new Properties() : given;
        }

        @Override
        public Connection getConnection() throws SQLException {
            return connect(properties);
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            Properties withUser = new Properties();
            withUser.putAll(properties);
            withUser.setProperty("user", username);
            withUser.setProperty("password", password);
            return connect(withUser);
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
            // DriverManager logs on its own
        }

        @Override
        public void setLoginTimeout(int seconds) {
            // the connection properties' connectTimeout bounds the connect
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException();
        }

        @Override
        public <T> T unwrap(Class<T> type) throws SQLException {
            if (type.isInstance(this)) {
                return type.cast(this);
            }
            throw new SQLException("not a wrapper of " + type);
        }

        @Override
        public boolean isWrapperFor(Class<?> type) {
            return type.isInstance(this);
        }
    }
}

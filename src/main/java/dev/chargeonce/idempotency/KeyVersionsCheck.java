package dev.chargeonce.idempotency;

import io.quarkus.flyway.FlywayConfigurationCustomizer;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.SortedSet;
import java.util.TreeSet;
import org.flywaydb.core.api.callback.Callback;
import org.flywaydb.core.api.callback.Context;
import org.flywaydb.core.api.callback.Event;
import org.flywaydb.core.api.configuration.FluentConfiguration;

/**
 * Refuses to start when the database has rows written under a key-hash version this instance does not look up:
 * a retry of such a key would not find its row and would be claimed (and charged) again under a new identity. It
 * stops, for example, an upgrade from a release before V1.13.0 that skipped the README's steps (the rows of that
 * release are version 0), or a version dropped from the read versions while its rows are still kept.
 *
 * <p>It looks before Flyway migrates (a refused instance must not have migrated the schema under the instances of
 * the release before: V1.14.0 would refuse their claims), and again at start (for a schema migrated elsewhere).
 *
 * <p>It also holds the migrations at V1.13.0 while an upgrade's first two steps run (this instance writes version 0
 * and so keeps the keys, or instances writing different versions run side by side): V1.14.0 erases the keys and
 * forbids keeping them, which the release before and step 1 still do; step 3 (mixed writers off) applies it.
 */
@Singleton
@io.quarkus.arc.Unremovable // looked up by the Flyway extension, never injected
class KeyVersionsCheck implements FlywayConfigurationCustomizer {

    private final KeyIdentities identities;

    KeyVersionsCheck(KeyIdentities identities) {
        this.identities = identities;
    }

    /** The last migration an upgrade's first two steps may apply (V1.14.0 forbids the keys they may keep). */
    static final String BEFORE_KEYS_ERASED = "1.13.0";

    @Override
    public void customize(FluentConfiguration configuration) {
        if (identities.storesKeys() || identities.mixedWriters()) {
            configuration.target(BEFORE_KEYS_ERASED);
        }
        List<Callback> callbacks = new ArrayList<>(List.of(configuration.getCallbacks()));
        callbacks.add(new Callback() {
            @Override
            public boolean supports(Event event, Context context) {
                return event == Event.BEFORE_MIGRATE;
            }

            @Override
            public boolean canHandleInTransaction(Event event, Context context) {
                return true;
            }

            @Override
            public void handle(Event event, Context context) {
                try {
                    check(Upkeep.identityVersionsInUse(context.getConnection()));
                } catch (SQLException e) {
                    throw new IllegalStateException("could not read the key-hash versions the rows have", e);
                }
            }

            @Override
            public String getCallbackName() {
                return "chargeonce-key-versions";
            }
        });
        configuration.callbacks(callbacks.toArray(Callback[]::new));
    }

    void atStart(@Observes StartupEvent event, Upkeep upkeep) {
        check(upkeep.identityVersionsInUse());
        if (identities.storesKeys() && upkeep.keysForbidden()) {
            throw new IllegalStateException("refusing to start: chargeonce.idempotency.key-hash-version=0 is the first step"
                    + " of the upgrade from a release before V1.13.0 only, and this database is past it (V1.14.0 forbids the"
                    + " keys that step keeps). Write version 1 or later (README, \"Keys stored hashed\").");
        }
    }

    private void check(SortedSet<Integer> inUse) {
        SortedSet<Integer> missing = new TreeSet<>(inUse);
        missing.removeAll(identities.lookupVersions());
        if (!missing.isEmpty()) {
            List<Integer> lookup = identities.lookupVersions();
            throw new IllegalStateException("refusing to start: the database has rows whose keys were hashed under version(s) "
                    + missing + ", which this instance does not look up (it writes " + lookup.get(0) + " and reads "
                    + lookup.subList(1, lookup.size()) + "): a retry of one of those keys would be charged again. Add them"
                    + " to chargeonce.idempotency.key-hash-read-versions (CHARGEONCE_KEY_HASH_READ_VERSIONS) with their"
                    + " secrets, and follow the README, \"Keys stored hashed\", for a change of version.");
        }
    }
}

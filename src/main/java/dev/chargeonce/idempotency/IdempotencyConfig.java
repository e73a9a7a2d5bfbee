package dev.chargeonce.idempotency;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

@ConfigMapping(prefix = "chargeonce.idempotency")
public interface IdempotencyConfig {

    /** How long a claim holds a key before a retry or the recovery worker may take it over. */
    @WithDefault("30s")
    Duration lease();

    /**
     * How long finished keys are kept (and replayed) before the retention job deletes them. Never shorter than
     * Stripe's 24 h key window plus the lease: a shorter one would let a late retry charge again.
     */
    @WithDefault("7d")
    Duration retention();

    /**
     * How long after it finished a charge can still be refunded through this service (Stripe refunds a card
     * payment for months): charges, and refunds with them, are kept for the longer of this and {@link #retention}.
     */
    @WithDefault("180d")
    Duration refundWindow();

    /** How long a finished key is kept (and replayed) after its answer: the longer of the retention and the refund window. */
    default Duration keptFor() {
        return refundWindow().compareTo(retention()) > 0 ? refundWindow() : retention();
    }

    /**
     * The fingerprint version new rows are written with ({@link Fingerprint}); every version up to
     * {@link Fingerprint#LATEST_VERSION} is read whatever this says. 1 in this release, the first that reads
     * versions: the release before it reads only version 1, and a rolling deploy (or a rollback) runs both, so
     * writing version 2 now would turn the retries an older instance serves into 422s. Once no instance older than
     * this release runs, set it to 2 (the next release makes 2 the default).
     */
    @WithDefault("1")
    int fingerprintVersion();

    /**
     * The version of the keyed hash new rows' identities are written under ({@link KeyIdentities}): 0 is the
     * unkeyed hash of releases before V1.13.0, n ≥ 1 is HMAC-SHA256 under secret n. No default outside dev and test:
     * 1 for a new installation, 0 for the first rollout over a fleet that runs an older release (README, "Keys
     * stored hashed").
     */
    java.util.OptionalInt keyHashVersion();

    /**
     * Versions that rows may still have been written under, looked up besides {@link #keyHashVersion} ({@code none}
     * or a comma-separated list). Keep a version here until no row of it is younger than {@link #keptFor}: a retry
     * of a key whose row is not found under any version is claimed again.
     */
    @WithDefault("none")
    String keyHashReadVersions();

    /** {@code <version>:<base64 of at least 32 random bytes>}, comma separated: the secrets of versions 1 and up. */
    java.util.Optional<java.util.List<String>> keyHashSecrets();

    /**
     * On while instances that write different versions run side by side (the two steps of a version change): a
     * new key's claim takes a per-key lock that all of them share. Off otherwise (it costs a transaction per new key).
     */
    @WithDefault("false")
    boolean keyHashMixedWriters();

    /**
     * The most bytes a stored answer may have ({@link AnswerLimit}): a request whose answer could be larger is
     * refused before any claim ({@code 400 answer_too_large}), never cut short later.
     */
    @WithDefault("65536")
    int maxAnswerBytes();

    /** Rows the retention job deletes per statement; small, so that no lock is held for long. */
    @WithDefault("500")
    int retentionBatchSize();
}

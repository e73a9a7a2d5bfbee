package dev.chargeonce.auth;

import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Failed authentications, counted per <em>subject</em> in fixed windows: the client's address (the peer's, or the
 * one a trusted proxy forwarded: {@code quarkus.http.proxy.trusted-proxies}), and the identity the request claimed
 * (an operator's name, the digest of a presented API key). A subject that failed {@code
 * chargeonce.auth.throttle.failures} times within {@code chargeonce.auth.throttle.window} is <em>over the limit</em>
 * until its window ends.
 *
 * <p>Only failures are ever slowed or refused: a request that presents a valid credential passes, whatever its
 * address or name did before, so that one anonymous caller cannot lock out the clients that share its address (every
 * client, behind an ingress that forwards nothing). What being over the limit costs depends on the credential:
 * <ul>
 *   <li>API keys are always checked (a hash and a map lookup), and a failure over the limit is answered {@code 429}
 *       instead of {@code 401}. Keys of 128 random bits or more cannot be guessed at any rate, so the throttle only
 *       has to keep a looping, misconfigured client from flooding the logs and the CPU.</li>
 *   <li>An operator's password can be guessed, and checking it is deliberately slow (bcrypt). A subject over the limit
 *       gets at most one check a second ({@link #mayCheck}); the other attempts are answered {@code 429} unchecked.
 *       A guesser gets one guess a second per pod instead of thousands; the real operator, whose last successful
 *       sign-in {@link OperatorCredentials} remembers, is not checked again and passes.</li>
 * </ul>
 *
 * <p>Per instance: each pod counts its own. API keys need nothing more (see above). For passwords, N pods allow N
 * checks a second per guessed name: with bcrypt's cost and passwords of a reasonable length that stays far out of a
 * guesser's reach, and a fleet that wants accounts locked centrally signs operators in with OpenID Connect, where the
 * identity provider keeps that count.
 */
@ApplicationScoped
public class FailedAuthentications {

    /** Subjects tracked at most; past it, windows that ended are dropped first. */
    private static final int MAX_TRACKED = 100_000;
    /** How often a subject over the limit may still have a password checked. */
    private static final long CHECK_INTERVAL_NANOS = Duration.ofSeconds(1).toNanos();

    private record Window(long startedNanos, int failures, long lastCheckNanos) {
    }

    private final Map<String, Window> bySubject = new ConcurrentHashMap<>();
    private final int limit;
    private final long windowNanos;

    FailedAuthentications(@ConfigProperty(name = "chargeonce.auth.throttle.failures", defaultValue = "20") int limit,
                          @ConfigProperty(name = "chargeonce.auth.throttle.window", defaultValue = "1m") Duration window) {
        this.limit = limit;
        this.windowNanos = window.toNanos();
    }

    /** The subject of a client address. */
    public static String address(String address) {
        return "address " + address;
    }

    /** Counts one failure against each subject. */
    public void failed(List<String> subjects) {
        long now = System.nanoTime();
        if (bySubject.size() >= MAX_TRACKED) {
            bySubject.values().removeIf(w -> now - w.startedNanos() >= windowNanos);
        }
        boolean full = bySubject.size() >= MAX_TRACKED;
        for (String subject : subjects) {
            if (full && !subject.startsWith("address ") && !bySubject.containsKey(subject)) {
                // A flood of made-up names or keys fills no memory: its addresses are still counted.
                continue;
            }
            bySubject.compute(subject, (s, w) -> w == null || now - w.startedNanos() >= windowNanos
                    ? new Window(now, 1, Long.MIN_VALUE) : new Window(w.startedNanos(), w.failures() + 1, w.lastCheckNanos()));
        }
    }

    /** How long the longest-blocked of these subjects stays over the limit; empty when none is over it. */
    public Optional<Duration> overLimit(List<String> subjects) {
        long now = System.nanoTime();
        long longest = 0;
        for (String subject : subjects) {
            Window w = bySubject.get(subject);
            if (w != null && w.failures() >= limit && now - w.startedNanos() < windowNanos) {
                longest = Math.max(longest, windowNanos - (now - w.startedNanos()));
            }
        }
        return longest == 0 ? Optional.empty() : Optional.of(Duration.ofNanos(longest));
    }

    /**
     * Whether a slow credential (a password) of these subjects may be checked now: always when none is over the limit,
     * else once a second per subject over the limit (this call takes that second's turn).
     */
    public boolean mayCheck(List<String> subjects) {
        long now = System.nanoTime();
        boolean[] allowed = {true};
        for (String subject : subjects) {
            bySubject.computeIfPresent(subject, (s, w) -> {
                if (w.failures() < limit || now - w.startedNanos() >= windowNanos) {
                    return w;
                }
                if (w.lastCheckNanos() != Long.MIN_VALUE && now - w.lastCheckNanos() < CHECK_INTERVAL_NANOS) {
                    allowed[0] = false;
                    return w;
                }
                return new Window(w.startedNanos(), w.failures(), now);
            });
        }
        return allowed[0];
    }

    static ApiException tooMany(Duration wait) {
        return new ApiException(429, "authentication_error", "too_many_failed_authentications",
                "Too many failed authentications; retry after the Retry-After delay with valid credentials.", null, wait);
    }
}

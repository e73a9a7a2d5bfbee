package dev.chargeonce.auth;

import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Failed authentications per source address, in fixed windows: an address that failed
 * {@code chargeonce.auth.throttle.failures} times within {@code chargeonce.auth.throttle.window} is answered
 * {@code 429} on every request (a valid key too) until its window ends, so that guessing API keys or operator
 * passwords costs a window per handful of guesses. Per instance (each pod counts its own); the source address is
 * the peer's, or the forwarded one when {@code quarkus.http.proxy.proxy-address-forwarding} trusts a proxy in front.
 */
@ApplicationScoped
public class FailedAuthentications {

    /** Addresses tracked at most; past it, windows that ended are dropped first. */
    private static final int MAX_TRACKED = 100_000;

    private record Window(long startedNanos, int failures) {
    }

    private final Map<String, Window> byAddress = new ConcurrentHashMap<>();
    private final int limit;
    private final long windowNanos;

    FailedAuthentications(@ConfigProperty(name = "chargeonce.auth.throttle.failures", defaultValue = "20") int limit,
                          @ConfigProperty(name = "chargeonce.auth.throttle.window", defaultValue = "1m") Duration window) {
        this.limit = limit;
        this.windowNanos = window.toNanos();
    }

    /** How long {@code address} must still wait; empty when it may try. */
    public java.util.Optional<Duration> blocked(String address) {
        Window w = byAddress.get(address);
        long now = System.nanoTime();
        if (w == null || w.failures() < limit || now - w.startedNanos() >= windowNanos) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(Duration.ofNanos(windowNanos - (now - w.startedNanos())));
    }

    public void failed(String address) {
        long now = System.nanoTime();
        if (byAddress.size() >= MAX_TRACKED) {
            byAddress.values().removeIf(w -> now - w.startedNanos() >= windowNanos);
        }
        byAddress.compute(address, (a, w) -> w == null || now - w.startedNanos() >= windowNanos
                ? new Window(now, 1) : new Window(w.startedNanos(), w.failures() + 1));
    }

    static dev.chargeonce.web.ApiException tooMany(Duration wait) {
        return new dev.chargeonce.web.ApiException(429, "authentication_error", "too_many_failed_authentications",
                "Too many failed authentications from this address; retry after the Retry-After delay.", null, wait);
    }
}

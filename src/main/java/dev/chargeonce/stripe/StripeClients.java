package dev.chargeonce.stripe;

import com.stripe.Stripe;
import com.stripe.StripeClient;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * The configured {@link StripeClient}s: explicit timeouts, our own retries, the configured API base. Two of them, the
 * same but for the read timeout: see {@link #forWatchedTry}.
 */
@ApplicationScoped
class StripeClients {

    static {
        // The JDK's HttpURLConnection (the SDK's transport) re-sends a POST once, silently, when a connection drops
        // without an answer. With our key that is harmless, but every request to Stripe should be one the service
        // decided to send: counted in the call's SendLog and checked against the holder's lease like the
        // fault-tolerance retries. Read once when the JDK's HTTP client class loads; this class loads at start-up
        // (StripeGateway is @Startup), before any Stripe call. The Dockerfile sets it on the command line too.
        if (System.getProperty("sun.net.http.retryPost") == null) {
            System.setProperty("sun.net.http.retryPost", "false");
        }
        // The SDK's request telemetry (Stripe's documented opt-out): on every request it walks a queue of the previous
        // requests' metrics, records this one's and serialises one into a header with gson, 2% of the service's CPU
        // per new charge in a CPU profile under load (docs/benchmarks.md); it tells Stripe our latencies, nothing the service needs.
        Stripe.enableTelemetry = false;
    }

    private final StripeClient client;
    /** {@link #client}, without a read timeout: for a try {@link TryWatchdog} bounds on a virtual thread. */
    private final StripeClient watchedTryClient;

    StripeClients(StripeConfig config) {
        // The SDK's transport is HttpURLConnection, whose keep-alive cache holds 5 connections per host unless
        // told otherwise; under load every extra call would open a new TCP (and TLS) connection.
        if (System.getProperty("http.maxConnections") == null) {
            System.setProperty("http.maxConnections", "256");
        }
        this.client = build(config, (int) config.readTimeout().toMillis());
        this.watchedTryClient = build(config, 0); // 0: HttpURLConnection waits without a timer
    }

    private static StripeClient build(StripeConfig config, int readTimeoutMillis) {
        return StripeClient.builder()
                .setApiKey(config.apiKey())
                .setApiBase(config.apiBase())
                .setConnectTimeout((int) config.connectTimeout().toMillis())
                .setReadTimeout(readTimeoutMillis)
                .setMaxNetworkRetries(config.maxNetworkRetries())
                .build();
    }

    /** For every call that {@link TryWatchdog} does not bound (retrieves, lists): the SDK's own timeouts bound it. */
    StripeClient client() {
        return client;
    }

    /**
     * For one try of a create that {@link TryWatchdog} bounds ({@link StripeApi}). On a virtual thread the client has no
     * read timeout: the watchdog ends the try at the read timeout instead ({@link StripeApi#tryLimitNanos}), since a
     * virtual thread interrupted in a socket read has its socket closed. Why: a read with a timeout parks its virtual
     * thread with a timer task, scheduled and cancelled on the JDK's {@code DelayScheduler} for every call (5% of the
     * service's CPU per new charge in a CPU profile under load, docs/benchmarks.md). Every create the service makes
     * runs on a virtual thread (a request's, a recovery driver's, a Kafka partition's); on a platform thread (a caller from elsewhere) an
     * interrupt does not end a socket read, so there the SDK's read timeout stays.
     */
    StripeClient forWatchedTry(boolean virtualThread) {
        return virtualThread ? watchedTryClient : client;
    }
}

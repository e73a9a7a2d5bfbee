package dev.chargeonce.stripe;

import com.stripe.StripeClient;
import jakarta.enterprise.context.ApplicationScoped;

/** The one configured {@link StripeClient}: explicit timeouts, our own retries, the configured API base. */
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
    }

    private final StripeClient client;

    StripeClients(StripeConfig config) {
        // The SDK's transport is HttpURLConnection, whose keep-alive cache holds 5 connections per host unless
        // told otherwise; under load every extra call would open a new TCP (and TLS) connection.
        if (System.getProperty("http.maxConnections") == null) {
            System.setProperty("http.maxConnections", "256");
        }
        this.client = StripeClient.builder()
                .setApiKey(config.apiKey())
                .setApiBase(config.apiBase())
                .setConnectTimeout((int) config.connectTimeout().toMillis())
                .setReadTimeout((int) config.readTimeout().toMillis())
                .setMaxNetworkRetries(config.maxNetworkRetries())
                .build();
    }

    StripeClient client() {
        return client;
    }
}

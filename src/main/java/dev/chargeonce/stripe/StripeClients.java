package dev.chargeonce.stripe;

import com.stripe.StripeClient;
import jakarta.enterprise.context.ApplicationScoped;

/** The one configured {@link StripeClient}: explicit timeouts, our own retries, the configured API base. */
@ApplicationScoped
class StripeClients {

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

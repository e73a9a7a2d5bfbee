package dev.chargeonce.auth;

import dev.chargeonce.idempotency.Fingerprint;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * The API clients, from {@code chargeonce.auth.clients}: {@code client-id:sha256-hex-of-api-key,...}. Only
 * hashes are configured, so neither the config nor a heap dump holds a usable key.
 */
@ApplicationScoped
public class ClientRegistry {

    private final Map<String, String> clientByKeyHash = new HashMap<>();
    /** The clients' ids (a client with two keys, while one is rotated, once). */
    private final java.util.Set<String> clientIds = new java.util.LinkedHashSet<>();

    ClientRegistry(@ConfigProperty(name = "chargeonce.auth.clients") String clients) {
        for (String entry : clients.split(",")) {
            String trimmed = entry.trim();
            if (trimmed.isEmpty()) {
                continue;
            }
            int colon = trimmed.indexOf(':');
            if (colon <= 0 || colon == trimmed.length() - 1) {
                throw new IllegalArgumentException("chargeonce.auth.clients: expected client-id:sha256-hex, got an entry without ':'");
            }
            String clientId = trimmed.substring(0, colon);
            String hash = trimmed.substring(colon + 1).toLowerCase();
            if (!hash.matches("[0-9a-f]{64}")) {
                throw new IllegalArgumentException("chargeonce.auth.clients: the hash of client " + clientId + " is not 64 hex digits");
            }
            clientIds.add(clientId);
            if (clientByKeyHash.put(hash, clientId) != null) {
                throw new IllegalArgumentException("chargeonce.auth.clients: two clients share one API key");
            }
        }
    }

    /**
     * What identifies a presented key that no client owns, for counting its failures: a prefix of its SHA-256, which
     * tells one wrong key from another and nothing of the key (it is a wrong one, and it never leaves the process).
     */
    static String presentedKeyId(String apiKey) {
        return Fingerprint.sha256Hex(apiKey).substring(0, 16);
    }

    /** Every configured client's id: what the operators' search hashes a typed Idempotency-Key for. */
    public java.util.Set<String> clientIds() {
        return java.util.Collections.unmodifiableSet(clientIds);
    }

    /** The client that owns this bearer token, if any. */
    public Optional<String> authenticate(String apiKey) {
        if (apiKey == null || apiKey.isEmpty()) {
            return Optional.empty();
        }
        // Looked up by a hash of the secret, never by the secret: the map holds no usable key and its lookup time
        // says nothing about the key's characters.
        return Optional.ofNullable(clientByKeyHash.get(Fingerprint.sha256Hex(apiKey)));
    }
}

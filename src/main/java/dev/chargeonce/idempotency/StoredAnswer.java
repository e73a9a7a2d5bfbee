package dev.chargeonce.idempotency;

/** The status code and body a finished key answers with, byte for byte, on every replay. */
public record StoredAnswer(int status, String body) {
}

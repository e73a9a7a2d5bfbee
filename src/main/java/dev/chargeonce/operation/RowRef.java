package dev.chargeonce.operation;

import java.time.Instant;

/** What a key's answers name: its row's id and when it was created (the claim). */
public record RowRef(String id, Instant createdAt) {
}

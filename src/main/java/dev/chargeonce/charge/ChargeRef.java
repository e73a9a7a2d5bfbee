package dev.chargeonce.charge;

import java.time.Instant;

/** What a charge's answers name: its id and when it was created (the claim). */
record ChargeRef(String id, Instant createdAt) {
}

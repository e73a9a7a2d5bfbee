package dev.chargeonce.idempotency;

import java.time.Instant;

/**
 * One page of a client's charges, as {@code GET /v1/charges} asks for it: newest first by (created, id); after a
 * cursor (older than it) or before one (newer than it, the nearest ones); created within bounds; of one status.
 *
 * @param status a charge's state as the API shows it ({@code succeeded}, {@code processing}, ...), null for any
 */
public record ChargePage(int limit, Cursor startingAfter, Cursor endingBefore, Instant createdGte, Instant createdLte,
                         String status) {

    /** A charge a page starts after or ends before: its creation time and id, the order's two keys. */
    public record Cursor(Instant created, String id) {
    }

    /** The plain first page: what a replica can serve with read-your-writes (see ChargeQueries). */
    public boolean isFirstPageUnfiltered() {
        return startingAfter == null && endingBefore == null && createdGte == null && createdLte == null && status == null;
    }
}

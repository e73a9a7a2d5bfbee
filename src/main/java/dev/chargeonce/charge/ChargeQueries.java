package dev.chargeonce.charge;

import dev.chargeonce.idempotency.ChargePage;
import dev.chargeonce.idempotency.ChargeRecord;
import dev.chargeonce.idempotency.ChargeStatus;
import dev.chargeonce.idempotency.Reads;
import dev.chargeonce.idempotency.IntentStatus;
import dev.chargeonce.idempotency.RowIds;
import dev.chargeonce.replica.ReadSource;
import dev.chargeonce.replica.ReplicaConfig;
import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.ws.rs.core.MultivaluedMap;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code GET /v1/charges/{id}} and {@code GET /v1/charges}: a client sees its own charges only.
 *
 * <p>Reads go to the read replica when one is configured ({@link ReadSource}), and a client still reads its own
 * writes: a charge the replica does not have yet, or has in a state that may still change (processing, accepted
 * with its outcome still to come, or succeeded: it can be refunded at any time), is read from the primary. Only
 * charges that failed or were canceled are taken from the replica as they are, because they never change again.
 */
@ApplicationScoped
public class ChargeQueries {

    static final int DEFAULT_LIMIT = 10;
    static final int MAX_LIMIT = 100;

    /** Newest first, as the list's index orders them (ties on created_at, to the microsecond, are left to id). */
    private static final Comparator<ChargeRecord> NEWEST_FIRST =
            Comparator.comparing(ChargeRecord::createdAt).thenComparing(ChargeRecord::id).reversed();

    private final Reads charges;
    private final ReadSource reads;
    private final ReplicaConfig replicaConfig;

    ChargeQueries(Reads charges, ReadSource reads, ReplicaConfig replicaConfig) {
        this.charges = charges;
        this.reads = reads;
        this.replicaConfig = replicaConfig;
    }

    Map<String, Object> find(String clientId, String chargeId) {
        if (!RowIds.wellFormed(PREFIX, chargeId)) {
            throw noSuchCharge(chargeId);
        }
        return finishedOnReplica(clientId, chargeId)
                .or(() -> charges.findCharge(reads.primary(), clientId, chargeId))
                .map(ChargeQueries::view)
                .orElseThrow(() -> noSuchCharge(chargeId));
    }

    /** The charge id prefix: {@code chg_} and 24 letters or digits. */
    public static final String PREFIX = "chg_";

    /**
     * The answer for a charge this client cannot see: the same whether it is another client's, none at all, or no
     * id this service could have made.
     */
    public static ApiException noSuchCharge(String chargeId) {
        return new ApiException(404, "invalid_request_error", "resource_missing", "No such charge: " + RowIds.echo(chargeId), "id", null);
    }

    /** The charge as the replica has it, when it has it finished; empty sends the read to the primary. */
    private Optional<ChargeRecord> finishedOnReplica(String clientId, String chargeId) {
        Optional<Optional<ChargeRecord>> answered = reads.onReplica(replica -> charges.findCharge(replica, clientId, chargeId));
        if (answered.isEmpty()) {
            return Optional.empty(); // no replica, or it could not answer (counted as "error")
        }
        Optional<ChargeRecord> found = answered.get();
        if (found.isEmpty()) {
            reads.fellBack("missing"); // not replayed yet (a client reading its own write), or no such charge
            return Optional.empty();
        }
        if (found.get().mayStillChange()) {
            // It may have finished, or been refunded, on the primary since.
            reads.fellBack(found.get().succeeded() ? "refundable" : "processing");
            return Optional.empty();
        }
        return found;
    }

    /**
     * {@code GET /v1/charges} with its query as given: every parameter at most once and known ({@code limit},
     * {@code starting_after} or {@code ending_before}, {@code created[gte]}, {@code created[lte]}, {@code status}).
     */
    Map<String, Object> list(String client, MultivaluedMap<String, String> query) {
        for (String name : query.keySet()) {
            if (!LIST_PARAMETERS.contains(name)) {
                throw ApiException.invalidRequest("parameter_unknown", "Unknown parameter: " + name + ".", name);
            }
        }
        String after = single(query, "starting_after");
        String before = single(query, "ending_before");
        if (after != null && before != null) {
            throw ApiException.invalidRequest("parameter_invalid", "Give starting_after or ending_before, not both.", "ending_before");
        }
        String status = single(query, "status");
        if (status != null && !ChargeStatus.names().contains(status)) {
            throw ApiException.invalidRequest("parameter_invalid",
                    "status must be one of " + String.join(", ", ChargeStatus.names()) + ".", "status");
        }
        return list(client, new ChargePage(parseLimit(query.get("limit")),
                after == null ? null : cursor(client, after, "starting_after"),
                before == null ? null : cursor(client, before, "ending_before"),
                epochSeconds(query, "created[gte]"), epochSeconds(query, "created[lte]"), status));
    }

    static final Set<String> LIST_PARAMETERS = Set.of("limit", "starting_after", "ending_before",
            "created[gte]", "created[lte]", "status");

    /** A parameter given at most once: a repeated or empty one is refused, not first-wins. */
    private static String single(MultivaluedMap<String, String> query, String name) {
        List<String> values = query.get(name);
        if (values == null || values.isEmpty()) {
            return null;
        }
        if (values.size() > 1 || values.get(0).isEmpty()) {
            throw ApiException.invalidRequest("parameter_invalid", name + (values.size() > 1 ? " is given more than once." : " is empty."), name);
        }
        return values.get(0);
    }

    private static Instant epochSeconds(MultivaluedMap<String, String> query, String name) {
        String value = single(query, name);
        if (value == null) {
            return null;
        }
        try {
            long seconds = Long.parseLong(value);
            if (seconds >= 0 && seconds < 100_000_000_000L) {
                return Instant.ofEpochSecond(seconds);
            }
        } catch (NumberFormatException e) {
            // answered below
        }
        throw ApiException.invalidRequest("parameter_invalid", name + " must be a time in Unix seconds.", name);
    }

    /**
     * A page of the client's charges. The plain first page may come from the replica (read-your-writes, see
     * {@link #newest}); a page after or before a cursor, or filtered, is read from the primary: it holds every
     * write the client made, whatever the replica's lag, and such pages are rarer than the first.
     */
    Map<String, Object> list(String clientId, ChargePage query) {
        // One row more than asked tells whether there is more, without a count.
        List<ChargeRecord> rows = query.isFirstPageUnfiltered() ? newest(clientId, query.limit() + 1)
                : charges.listCharges(reads.primary(), clientId, query);
        boolean more = rows.size() > query.limit();
        // Before a cursor, the row past the page is the newest one (first); otherwise the oldest (last).
        List<ChargeRecord> shown = !more ? rows : query.endingBefore() != null ? rows.subList(1, rows.size()) : rows.subList(0, query.limit());
        Map<String, Object> page = new LinkedHashMap<>();
        page.put("object", "list");
        page.put("data", shown.stream().map(ChargeQueries::view).toList());
        page.put("has_more", more);
        return page;
    }

    /** The cursor a page starts after or ends before: one of the client's charges, else a 400 naming the parameter. */
    ChargePage.Cursor cursor(String clientId, String chargeId, String param) {
        if (!RowIds.wellFormed(PREFIX, chargeId)) {
            throw ApiException.invalidRequest("resource_missing", "No such charge: " + RowIds.echo(chargeId), param);
        }
        return charges.findCharge(reads.primary(), clientId, chargeId).map(c -> new ChargePage.Cursor(c.createdAt(), c.id()))
                .orElseThrow(() -> ApiException.invalidRequest("resource_missing", "No such charge: " + chargeId, param));
    }

    /**
     * The client's newest charges. From a replica, the page is completed with what the replica cannot know yet:
     * the primary's rows created since shortly before the replica's last replayed commit (every row the replica
     * lacks is among them), and the primary's version of every row the replica still shows as processing.
     * Merged, that is the primary's own page, while the primary reads only the recent rows.
     */
    private List<ChargeRecord> newest(String clientId, int limit) {
        Optional<ReplicaPage> fromReplica = reads.onReplica(replica -> {
            // Position first: the page read after it is at least as recent.
            ReadSource.Position position = ReadSource.position(replica);
            return new ReplicaPage(position, charges.listCharges(replica, clientId, limit));
        });
        if (fromReplica.isEmpty()) {
            return charges.listCharges(reads.primary(), clientId, limit);
        }
        ReplicaPage page = fromReplica.get();
        if (!page.position().inRecovery()) {
            return page.rows(); // not a standby: nothing to catch up with
        }
        if (page.position().lastReplayedCommit().isEmpty()) {
            reads.fellBack("unknown_position");
            return charges.listCharges(reads.primary(), clientId, limit);
        }
        Instant since = page.position().lastReplayedCommit().get().minus(replicaConfig.commitMargin());
        List<ChargeRecord> recent = charges.listChargesCreatedAfter(reads.primary(), clientId, since, limit);
        Map<String, ChargeRecord> merged = new LinkedHashMap<>();
        page.rows().forEach(row -> merged.put(row.id(), row));
        boolean replicaMissedSome = false;
        for (ChargeRecord row : recent) {
            replicaMissedSome |= !merged.containsKey(row.id());
            merged.put(row.id(), row); // the primary's version wins
        }
        if (replicaMissedSome) {
            reads.fellBack("missing");
        }
        Set<String> readFromPrimary = new HashSet<>();
        recent.forEach(row -> readFromPrimary.add(row.id()));
        long stale = page.rows().stream().filter(row -> row.mayStillChange() && !readFromPrimary.contains(row.id())).count();
        if (stale > 1) {
            // Several rows to re-read: one page from the primary costs less than a read per row.
            reads.fellBack("changing");
            return charges.listCharges(reads.primary(), clientId, limit);
        }
        for (ChargeRecord row : page.rows()) {
            if (row.mayStillChange() && !readFromPrimary.contains(row.id())) {
                reads.fellBack(row.succeeded() ? "refundable" : "processing");
                charges.findCharge(reads.primary(), clientId, row.id()).ifPresentOrElse(
                        current -> merged.put(current.id(), current), () -> merged.remove(row.id()));
            }
        }
        return merged.values().stream().sorted(NEWEST_FIRST).limit(limit).toList();
    }

    private record ReplicaPage(ReadSource.Position position, List<ChargeRecord> rows) {
    }

    /** A list's {@code limit}: 1 to 100, default 10; anything else is a {@code 400} naming it. */
    public static int parseLimit(java.util.List<String> given) {
        if (given == null || given.isEmpty()) {
            return DEFAULT_LIMIT;
        }
        if (given.size() > 1) {
            throw ApiException.invalidRequest("parameter_invalid", "limit is given more than once.", "limit");
        }
        String limit = given.get(0);
        try {
            int value = Integer.parseInt(limit);
            if (value >= 1 && value <= MAX_LIMIT) {
                return value;
            }
        } catch (NumberFormatException e) {
            // answered below
        }
        throw ApiException.invalidRequest("parameter_invalid", "limit must be an integer between 1 and " + MAX_LIMIT + ".", "limit");
    }

    /** The charge as {@code GET /v1/charges/{id}} shows it, as JSON: what a Kafka command's later result carries. */
    public static String viewJson(ChargeRecord record) {
        return ChargeResponses.write(view(record));
    }

    static Map<String, Object> view(ChargeRecord record) {
        // The charge's state at Stripe once known (it moves on after a 202); rows older than it, by their answer.
        String status = record.chargeStatus() != null ? record.chargeStatus().column() : switch (record.status()) {
            case PROCESSING, ACCEPTED -> "processing";
            case COMPLETED -> "succeeded";
            case FAILED -> "failed";
        };
        return ChargeRequest.fromCanonicalJson(record.requestJson())
                .view(record.id(), status, record.paymentIntentId(), record.createdAt().getEpochSecond(),
                        record.amountRefunded());
    }
}

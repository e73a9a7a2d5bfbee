package dev.chargeonce.reconcile;

import dev.chargeonce.auth.ClientRegistry;
import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.idempotency.KeyIdentities;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.idempotency.OperatorRows;
import dev.chargeonce.idempotency.RowView;
import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The operators' one search box: whatever they were given (a charge or refund id, the Idempotency-Key a client sent,
 * a PaymentIntent, a Stripe refund, a Stripe customer, a client), the rows it names. Every lookup that the text could
 * be is tried, each by an index (the statements are {@link OperatorRows}'), and every row found says how it matched.
 *
 * <p>Keys are stored hashed ({@link KeyIdentities}): a typed key is hashed the way the service hashes it, for the
 * client the operator names or else for every configured client, under every key-hash version this instance reads
 * (and version 0, which needs no secret: rows of releases before keys were hashed), as a charge's key and as a
 * refund's. The key itself is never stored, logged or echoed into a link by the search.
 */
@ApplicationScoped
public class PaymentSearch {

    /** The most rows one search answers. */
    public static final int MAX_RESULTS = 100;
    /** A client's latest charges, when the text is a client's id. */
    static final int LATEST_OF_CLIENT = 50;

    private final OperatorRows rows;
    private final KeyIdentities identities;
    private final ClientRegistry clients;

    PaymentSearch(OperatorRows rows, KeyIdentities identities, ClientRegistry clients) {
        this.rows = rows;
        this.identities = identities;
        this.clients = clients;
    }

    /** How a row matched the text. */
    public enum MatchedBy {
        ID("id"), IDEMPOTENCY_KEY("Idempotency-Key"), PAYMENT_INTENT("PaymentIntent"), STRIPE_REFUND("Stripe refund"),
        CUSTOMER("Stripe customer"), CLIENT("client");

        private final String words;

        MatchedBy(String words) {
            this.words = words;
        }

        /** Its name in the admin API: {@code idempotency_key}, {@code payment_intent}, ... */
        public String column() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        /** Its name on the console's pages. */
        public String words() {
            return words;
        }
    }

    /** One row found, and how. */
    public record Match(MatchedBy matchedBy, RowView row) {
    }

    /**
     * The rows {@code text} names, newest first, at most {@link #MAX_RESULTS}.
     *
     * @param client the client whose keys the text may be (null or blank: every configured client's)
     */
    public List<Match> search(String text, String client) {
        String q = text == null ? "" : text.strip();
        if (q.isEmpty()) {
            return List.of();
        }
        if (q.length() > IdempotencyKey.MAX_LENGTH + 2) {
            throw ApiException.invalidRequest("parameter_invalid", "q is at most " + IdempotencyKey.MAX_LENGTH + " characters.", "q");
        }
        if (q.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            throw ApiException.invalidRequest("parameter_invalid", "q holds a control character: no id or key does.", "q");
        }
        String onlyClient = client == null || client.isBlank() ? null : client.strip();
        if (onlyClient != null && !clients.clientIds().contains(onlyClient)) {
            throw ApiException.invalidRequest("parameter_invalid", "No such client.", "client");
        }
        Map<String, Match> found = new LinkedHashMap<>();
        for (Operation op : Operation.values()) {
            rows.view(op, q).ifPresent(row -> add(found, MatchedBy.ID, row));
        }
        if (!q.contains(" ")) {
            rows.viewsOf(Operation.CHARGE, List.of(q), List.of()).forEach(row -> add(found, MatchedBy.PAYMENT_INTENT, row));
            rows.viewsOf(Operation.REFUND, List.of(q), List.of()).forEach(row -> add(found, MatchedBy.STRIPE_REFUND, row));
            rows.chargesOfCustomer(q, MAX_RESULTS).forEach(row -> add(found, MatchedBy.CUSTOMER, row));
        }
        IdempotencyKey key = keyOrNull(q);
        if (key != null) {
            List<String> keyClients = onlyClient != null ? List.of(onlyClient) : List.copyOf(clients.clientIds());
            for (Operation op : Operation.values()) {
                List<String> ids = identitiesOf(op, keyClients, key);
                rows.viewsOf(op, List.of(), ids).forEach(row -> add(found, MatchedBy.IDEMPOTENCY_KEY, row));
            }
        }
        if (clients.clientIds().contains(q)) {
            rows.latestChargesOf(q, LATEST_OF_CLIENT).forEach(row -> add(found, MatchedBy.CLIENT, row));
        }
        List<Match> matches = new ArrayList<>(found.values());
        matches.sort(Comparator.comparing((Match m) -> m.row().createdAt()).reversed());
        return matches.size() > MAX_RESULTS ? List.copyOf(matches.subList(0, MAX_RESULTS)) : matches;
    }

    /** The configured clients, for the search form's choice. */
    public List<String> clients() {
        return clients.clientIds().stream().sorted().toList();
    }

    /** Every identity a key may have for these clients: each version this instance reads, and version 0. */
    private List<String> identitiesOf(Operation op, List<String> keyClients, IdempotencyKey key) {
        Set<String> all = new LinkedHashSet<>();
        for (String clientId : keyClients) {
            all.addAll(identities.lookup(op, clientId, key));
            all.add(KeyIdentities.compute(KeyIdentities.UNKEYED, null, op, clientId, key.value()));
        }
        return List.copyOf(all);
    }

    /** The text as a key, in either syntax the API takes; null when no request could have sent it as one. */
    private static IdempotencyKey keyOrNull(String text) {
        try {
            return IdempotencyKey.parse(text);
        } catch (ApiException e) {
            return null;
        }
    }

    /** A row found twice (its id and its PaymentIntent, say) is listed once, by the first way it matched. */
    private static void add(Map<String, Match> found, MatchedBy how, RowView row) {
        found.putIfAbsent(row.operation().column() + "/" + row.id(), new Match(how, row));
    }
}

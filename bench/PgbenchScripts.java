package bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * {@code pgbench-scripts <statement catalog dir> <out dir>}: pgbench scripts with the service's own statements (a
 * charge's claim and finish, a refund's claim transaction and finish, the replays' reads), as the packaged store runs
 * them (written by {@code dev.chargeonce.idempotency.StatementCatalog}), and the minimal pair every exactly-once charge
 * is measured against.
 */
final class PgbenchScripts {

    /** The stored answer of a 1000-cent visa charge, as the service renders it (same size). */
    static final String RESPONSE = "{\"id\":\"chg_0000000000000000000000pgb\",\"object\":\"charge\",\"status\":\"succeeded\","
            + "\"amount\":1000,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"customer\":null,"
            + "\"description\":null,\"metadata\":{},\"payment_intent\":\"pi_000000000000000000000pgb\",\"created\":1767225600}";
    static final String REQUEST = "{\"amount\":1000,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}";
    /** A refund row's request (the resolved terms) and stored answer, as the service writes them for 1 cent. */
    static final String REFUND_REQUEST = "{\"amount\":1,\"charge\":\"chg_0000000000000000000000pgb\",\"currency\":\"usd\","
            + "\"metadata\":{},\"payment_intent\":\"pi_000000000000000000000pgb\"}";
    static final String REFUND_RESPONSE = "{\"id\":\"rfd_0000000000000000000000pgb\",\"object\":\"refund\",\"status\":\"succeeded\","
            + "\"amount\":1,\"currency\":\"usd\",\"charge\":\"chg_0000000000000000000000pgb\","
            + "\"payment_intent\":\"pi_000000000000000000000pgb\",\"reason\":null,\"metadata\":{},"
            + "\"stripe_refund\":\"re_0000000000000000000000pgb\",\"created\":1767225600}";
    static final String FINGERPRINT = "7c0b5b8e4c1f3f0a9d2e6b1a8c7d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d";
    static final String LEASE_MS = "30000";
    /** A 48-character identity per key, as the service stores (a hash of client and key; any unique value will do). */
    static final String IDENTITY_OF_K = "lpad(CAST(:k AS text), 48, 'f')";
    /**
     * The identity of a bulk-loaded row (bench/sql/bulk_rows.sql), as the service derives it: its HMAC is part
     * of what the replay reference costs PostgreSQL here (a microsecond or two), where the service computes it.
     */
    static final String IDENTITY_OF_BULK_I = "'k001-' || substr(encode(hmac(convert_to(:bench_client || chr(10) || 'bulk-' || CAST(:i AS text), 'UTF8'), decode(:key_secret, 'base64'), 'sha256'), 'hex'), 1, 48)";
    static final String IDENTITY_OF_BULK_REFUND_I = "'k001-' || substr(encode(hmac(convert_to('refund' || chr(10) || :bench_client || chr(10) || 'rbulk-' || CAST(:i AS text), 'UTF8'), decode(:key_secret, 'base64'), 'sha256'), 'hex'), 1, 48)";
    static final String HORIZON_MS = "82800000";
    /** bench/run.sh's KEY_SECRET: the secret the service hashes keys with (KeyIdentities, version 1). */
    static final String KEY_SECRET = "Y2hhcmdlb25jZSBiZW5jaCBrZXkgaGFzaCBzZWNyZXQsIHYx";

    static void write(Path source, Path dir) throws IOException {
        Statements store = new Statements(source);
        String claim = store.of("CHARGE", "CLAIM");
        String finish = store.of("CHARGE", "FINISH");
        Files.createDirectories(dir);

        // pgbench substitutes :name everywhere, string literals included ("amount":1000 would become a parameter),
        // so every text value is a pgbench variable (-D name=value, see defines.txt): bound as a parameter, as
        // JDBC binds it in the service.
        Files.writeString(dir.resolve("defines.txt"), String.join("\n",
                "request=" + REQUEST, "response=" + RESPONSE, "fingerprint=" + FINGERPRINT, "pgbench_client=pgbench",
                "bench_client=bench", "usd=usd", "completed=completed", "succeeded=succeeded",
                "refund_request=" + REFUND_REQUEST, "refund_response=" + REFUND_RESPONSE, "key_secret=" + KEY_SECRET) + "\n");

        // read + claim + finish of a new payment: what the database does for every new charge (the read finds
        // no row for the new key; the insert decides it is new; the finish).
        String peek = store.of("CHARGE", "PEEK");
        String pair = "\\set k random(1, 9000000000000000000)\n"
                + bind(peek, List.of(HORIZON_MS, IDENTITY_OF_K, ":pgbench_client")).strip() + ";\n"
                + bind(claim, List.of("'chg_pgb' || CAST(:k AS text)", ":pgbench_client", "NULL" /* keys are not stored */,
                ":fingerprint", ":request", "1000", ":usd", LEASE_MS, LEASE_MS, IDENTITY_OF_K, "NULL")).strip()
                + "\n\\gset\n"
                + bind(finish, List.of(":completed", "201", ":response", "'pi_pgb' || CAST(:k AS text)", ":succeeded",
                "NULL", "'chg_pgb' || CAST(:k AS text)", ":lease_gen", ":pgbench_client")).strip() + ";\n";
        Files.writeString(dir.resolve("claim_finish.sql"), pair);

        // the replay: the claim's read finding a finished row (rows from bench/sql/bulk_rows.sql), and nothing else.
        String replay = "\\set i 10 * random(0, :replay_rows - 1)\n"
                + bind(peek, List.of(HORIZON_MS, IDENTITY_OF_BULK_I, ":bench_client")).strip() + ";\n";
        Files.writeString(dir.resolve("replay.sql"), replay);

        // The least any exactly-once pair can cost: a plain INSERT … ON CONFLICT DO NOTHING of a row and an UPDATE of
        // it by primary key, each its own transaction, on a table with nothing but its key (bench_minimal, made by
        // bench/run.sh), the stored answer as the row's payload. The limit new charges are measured against.
        String minimal = "\\set k random(1, 9000000000000000000)\n"
                + "INSERT INTO bench_minimal (id, status) VALUES ('chg_pgb' || CAST(:k AS text), 'processing') ON CONFLICT DO NOTHING;\n"
                + "UPDATE bench_minimal SET status = 'completed', body = :response WHERE id = 'chg_pgb' || CAST(:k AS text);\n";
        Files.writeString(dir.resolve("minimal_pair.sql"), minimal);

        // A new refund: the claim transaction (lock the charge, insert the refund's row, reserve its amount), then
        // the fenced finish; of 1 cent, on one of :refund_charges charges (bench/sql/refund_charges.sql) or all on
        // one hot charge. The service also reads the key first (the peek, one indexed read: see refund_replay.sql)
        // and checks the amount in Java between the lock and the insert.
        String lock = store.of("REFUND", "LOCK_CHARGE_FOR_REFUND");
        String claimRefund = store.of("REFUND", "CLAIM");
        String reserve = store.of("REFUND", "RESERVE");
        String finishRefund = store.of("REFUND", "FINISH");
        for (String variant : List.of("many", "hot")) {
            // the ids bench/sql/refund_charges.sql gives them: chg_ + the prefix padded with x to 12 + n in 12 digits
            String charge = variant.equals("hot") ? "'chg_pgbhotxxxxxx000000000000'"
                    : "'chg_pgbrefxxxxxx' || lpad(CAST(:c AS text), 12, '0')";
            String script = "\\set k random(1, 9000000000000000000)\n"
                    + (variant.equals("hot") ? "" : "\\set c random(0, :refund_charges - 1)\n")
                    + "BEGIN;\n"
                    + bind(lock, List.of(charge, ":pgbench_client")).strip() + ";\n"
                    + bind(claimRefund, List.of("'rfd_pgb' || CAST(:k AS text)", charge, ":pgbench_client",
                    "NULL", ":fingerprint", ":refund_request", "1", ":usd", LEASE_MS, LEASE_MS,
                    "lpad(CAST(:k AS text), 48, 'r')")).strip() + "\n\\gset r_\n"
                    + bind(reserve, List.of("1", charge, ":pgbench_client")).strip() + ";\n"
                    + "COMMIT;\n"
                    + bind(finishRefund, List.of(":completed", "201", ":refund_response", "'re_pgb' || CAST(:k AS text)",
                    ":succeeded", "NULL", ":r_id", ":r_lease_gen", ":pgbench_client", ":pgbench_client")).strip() + ";\n";
            Files.writeString(dir.resolve("refund_" + variant + ".sql"), script);
        }

        // A refund's replay: the peek finding a finished refund (rows from bench/sql/bulk_refunds.sql).
        String refundReplay = "\\set i random(0, :refund_replay_rows - 1)\n"
                + bind(store.of("REFUND", "PEEK"), List.of(HORIZON_MS, IDENTITY_OF_BULK_REFUND_I, ":bench_client")).strip()
                + ";\n";
        Files.writeString(dir.resolve("refund_replay.sql"), refundReplay);
    }

    /**
     * The store's statements as it runs them, from the files {@code dev.chargeonce.idempotency.StatementCatalog}
     * wrote ({@code CHARGE.CLAIM.sql}, ...): the classes of the package, not a reading of the source.
     */
    static final class Statements {
        final Path dir;

        Statements(Path dir) {
            this.dir = dir;
        }

        /** Statement {@code name} as the store runs it for operation {@code op} (CHARGE or REFUND). */
        String of(String op, String name) throws IOException {
            Path file = dir.resolve(op + "." + name + ".sql");
            if (!Files.exists(file)) {
                throw new IllegalStateException("the statement catalog has no " + file.getFileName()
                        + " (StatementCatalog.hotPathStatements): update bench/PgbenchScripts.java");
            }
            return Files.readString(file);
        }
    }

    /** Replaces the JDBC placeholders in order; refuses when the statement's parameters changed. */
    static String bind(String sql, List<String> values) {
        long placeholders = sql.chars().filter(c -> c == '?').count();
        if (placeholders != values.size()) {
            throw new IllegalStateException("statement has " + placeholders + " parameters, the bench binds "
                    + values.size() + ": update bench/PgbenchScripts.java\n" + sql);
        }
        StringBuilder out = new StringBuilder();
        int v = 0;
        for (char c : sql.toCharArray()) {
            out.append(c == '?' ? values.get(v++) : String.valueOf(c));
        }
        return out.toString();
    }

}

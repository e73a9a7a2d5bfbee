package dev.chargeonce.idempotency;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Writes the store's hot-path statements, as it runs them, one file each ({@code CHARGE.CLAIM.sql},
 * {@code REFUND.FINISH.sql}, ...): the benchmark's {@code pgbench} reference binds and runs exactly these
 * ({@code java -cp <the package's classpath> dev.chargeonce.idempotency.StatementCatalog <dir>}).
 */
public final class StatementCatalog {

    private StatementCatalog() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: StatementCatalog <dir>");
            System.exit(2);
        }
        Path dir = Files.createDirectories(Path.of(args[0]));
        for (Operation op : Operation.values()) {
            for (Map.Entry<String, String> statement : IdempotencyStore.hotPathStatements(op).entrySet()) {
                Files.writeString(dir.resolve(op.name() + "." + statement.getKey() + ".sql"), statement.getValue());
            }
        }
    }
}

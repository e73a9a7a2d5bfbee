package dev.chargeonce.props;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Random requests for the property tests, from a seed: the whole space a client (or an attacker) can send, biased
 * towards the edges (limits, types that look alike, text that is not valid Unicode). A failure names its seed and
 * case number, so {@code -Dprops.seed=<seed>} replays it exactly.
 */
final class Gen {

    /** The seed of a run: {@code -Dprops.seed} to replay one, otherwise a new one (printed). */
    static long seed() {
        String given = System.getProperty("props.seed");
        return given != null ? Long.parseLong(given) : System.nanoTime();
    }

    final Random random;

    Gen(long seed) {
        this.random = new Random(seed);
    }

    int between(int min, int max) {
        return min + random.nextInt(max - min + 1);
    }

    boolean chance(double p) {
        return random.nextDouble() < p;
    }

    <T> T oneOf(List<T> choices) {
        return choices.get(random.nextInt(choices.size()));
    }

    /** A JSON number as text, from the ordinary to the absurd (beyond long, exponents, decimals, negatives). */
    String number() {
        return switch (random.nextInt(12)) {
            case 0 -> "0";
            case 1 -> "-1";
            case 2 -> "1";
            case 3 -> "99999999";
            case 4 -> "100000000";
            case 5 -> "9223372036854775807";
            case 6 -> "9223372036854775808";
            case 7 -> "1" + "0".repeat(between(20, 400));
            case 8 -> between(1, 5000) + "." + between(0, 99);
            case 9 -> between(1, 9) + "e" + between(1, 30);
            case 10 -> "1000.0";
            default -> Integer.toString(between(1, 100_000));
        };
    }

    /** JSON string content (already escaped as JSON text), with the characters that break things. */
    String stringContent() {
        StringBuilder s = new StringBuilder();
        int length = chance(0.05) ? between(1001, 5000) : between(0, 40);
        for (int i = 0; i < length; i++) {
            switch (random.nextInt(14)) {
                case 0 -> s.append("\\u0000");
                case 1 -> s.append("\\ud800");                      // a lone high surrogate
                case 2 -> s.append("\\udc00");                      // a lone low surrogate
                case 3 -> s.append("\\ud83d\\udcb3");               // a valid pair
                case 4 -> s.append("\\u").append(String.format("%04x", between(1, 0x1f)));
                case 5 -> s.append("\\\"");
                case 6 -> s.append("é");
                case 7 -> s.append("\\n");
                case 8 -> s.append("[]");
                default -> s.append((char) between('a', 'z'));
            }
        }
        return s.toString();
    }

    /** Any JSON value, nested up to {@code depth}. */
    String value(int depth) {
        int kind = depth <= 0 ? random.nextInt(5) : random.nextInt(7);
        return switch (kind) {
            case 0 -> "null";
            case 1 -> random.nextBoolean() ? "true" : "false";
            case 2 -> number();
            case 3, 4 -> "\"" + stringContent() + "\"";
            case 5 -> {
                List<String> items = new ArrayList<>();
                for (int i = 0, n = between(0, 4); i < n; i++) {
                    items.add(value(depth - 1));
                }
                yield "[" + String.join(",", items) + "]";
            }
            default -> object(depth - 1, List.of());
        };
    }

    /** A JSON object of random fields, and sometimes of the given field names. */
    String object(int depth, List<String> likelyNames) {
        List<String> fields = new ArrayList<>();
        for (int i = 0, n = between(0, 6); i < n; i++) {
            String name = !likelyNames.isEmpty() && chance(0.7) ? oneOf(likelyNames) : stringContent();
            fields.add("\"" + name + "\":" + value(depth));
        }
        return "{" + String.join(chance(0.2) ? " , " : ",", fields) + "}";
    }

    /**
     * A charge body: mostly the charge's own fields with random values (so that validation, not JSON parsing, is
     * what is exercised), sometimes anything at all, sometimes not JSON or not UTF-8.
     */
    byte[] chargeBody() {
        int kind = random.nextInt(10);
        String text = switch (kind) {
            case 0 -> value(3);
            case 1 -> "{\"amount\": 1000, \"amount\": 2000, \"currency\": \"usd\", \"payment_method\": \"pm_card_visa\"}";
            case 2 -> "{\"amount\": 1000, \"currency\": \"usd\"" + (chance(0.5) ? "," : "") + "} trailing";
            case 3 -> "";
            default -> object(2, List.of("amount", "currency", "payment_method", "customer", "description", "metadata"));
        };
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        if (chance(0.08) && bytes.length > 2) {
            bytes[between(1, bytes.length - 1)] = (byte) oneOf(List.of(0xC3, 0xFF, 0x80, 0xED)).intValue(); // not UTF-8
        }
        if (chance(0.02)) {
            byte[] big = new byte[between(64 * 1024 + 1, 200 * 1024)];
            java.util.Arrays.fill(big, (byte) ' ');
            System.arraycopy(bytes, 0, big, 0, Math.min(bytes.length, big.length));
            bytes = big;
        }
        return bytes;
    }

    /** An Idempotency-Key header value as raw bytes (null: no header). */
    byte[] idempotencyKey() {
        return switch (random.nextInt(9)) {
            case 0 -> null;
            case 1 -> new byte[0];
            case 2 -> "k".repeat(256).getBytes(StandardCharsets.US_ASCII);
            case 3 -> ("cl\u00e9-" + random.nextLong()).getBytes(StandardCharsets.ISO_8859_1);
            case 4 -> ("utf8-\u00e9-" + random.nextLong()).getBytes(StandardCharsets.UTF_8);
            case 5 -> ("tab\there" + random.nextLong()).getBytes(StandardCharsets.US_ASCII);
            default -> ("props-" + Long.toHexString(random.nextLong()) + (chance(0.2) ? "~!*'();:@&=+$,/?#[]" : ""))
                    .getBytes(StandardCharsets.US_ASCII);
        };
    }

    String contentType() {
        if (chance(0.6)) {
            return "application/json";
        }
        return oneOf(List.of("application/json", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded",
                "application/json;charset=latin-1", "APPLICATION/JSON", "multipart/form-data; boundary=x", ""));
    }

    String accept() {
        if (chance(0.6)) {
            return chance(0.5) ? "" : "application/json";
        }
        return oneOf(List.of("", "application/json", "*/*", "application/json;q=0", "text/html", "application/*",
                "text/html, */*;q=0.1", "application/xml", "*/*;q=0", "application/json;q=abc"));
    }
}

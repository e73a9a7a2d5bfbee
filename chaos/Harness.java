package chaos;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * What both chaos programs (Chaos, KafkaChaos) share: their {@code --name value} options, durations written
 * {@code 45s} or {@code 3m}, the log line a run prints as it goes, and a pause that an interrupt ends early.
 */
final class Harness {

    private Harness() {
    }

    /** {@code --name value} pairs, in order; a trailing name without a value is ignored. */
    static Map<String, String> options(String[] args) {
        Map<String, String> options = new LinkedHashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        return options;
    }

    /** Seconds of a duration written {@code 180s}, {@code 3m} or {@code 180}. */
    static long seconds(String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (v.endsWith("m")) {
            return Long.parseLong(v.substring(0, v.length() - 1)) * 60;
        }
        return Long.parseLong(v.endsWith("s") ? v.substring(0, v.length() - 1) : v);
    }

    /** A progress line on stderr, the time first: stdout is for the report. */
    static void log(String message) {
        System.err.printf("[%tT] %s%n", System.currentTimeMillis(), message);
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(Math.max(0, millis));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

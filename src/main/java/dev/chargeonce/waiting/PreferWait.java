package dev.chargeonce.waiting;

import java.util.List;

/**
 * {@code Prefer: wait=N} (RFC 7240 §4.3): how long a request whose key is in flight may be held for the first
 * request's answer, at most {@link #MAX_SECONDS}. A larger value is honoured as the maximum (and
 * {@code Preference-Applied} says so); a malformed one is ignored, as RFC 7240 asks of preferences a server does
 * not understand. Other preferences in the header are ignored.
 */
public final class PreferWait {

    public static final String HEADER = "Prefer";
    public static final int MAX_SECONDS = 30;

    private PreferWait() {
    }

    /** The seconds to wait at most, 0 for none. */
    public static int seconds(List<String> preferHeaders) {
        if (preferHeaders == null) {
            return 0;
        }
        for (String header : preferHeaders) {
            for (String preference : header.split(",")) {
                String[] parts = preference.split(";", 2)[0].split("=", 2);
                if (parts.length == 2 && parts[0].trim().equalsIgnoreCase("wait")) {
                    String value = parts[1].trim();
                    if (value.length() >= 2 && value.startsWith("\"") && value.endsWith("\"")) {
                        value = value.substring(1, value.length() - 1);
                    }
                    if (value.matches("[0-9]{1,9}")) {
                        return Math.min(Integer.parseInt(value), MAX_SECONDS);
                    }
                    return 0;
                }
            }
        }
        return 0;
    }
}

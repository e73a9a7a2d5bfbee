package dev.chargeonce.testing;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.jboss.logmanager.ExtLogRecord;
import org.jboss.logmanager.LogContext;

/**
 * Every record the service logs while open (at DEBUG and above for its own categories, as for the rest what the
 * configuration lets through), each as one line with what a JSON log line of prod carries: level, category, message,
 * MDC, NDC, and the exception with its causes and stack. And what such a line may not show of an Idempotency-Key.
 */
public final class LogCapture extends Handler implements AutoCloseable {

    private final List<String> lines = Collections.synchronizedList(new ArrayList<>());
    private final java.util.logging.Logger root = LogContext.getLogContext().getLogger("");
    private final java.util.logging.Logger service = LogContext.getLogContext().getLogger("dev.chargeonce");
    private final Level serviceLevel = service.getLevel();

    private LogCapture() {
    }

    public static LogCapture start() {
        LogCapture capture = new LogCapture();
        capture.setLevel(Level.ALL);
        capture.root.addHandler(capture);
        capture.service.setLevel(Level.FINE);
        return capture;
    }

    /** The lines logged so far. */
    public List<String> lines() {
        return List.copyOf(lines);
    }

    @Override
    public void publish(LogRecord record) {
        StringBuilder line = new StringBuilder().append(record.getLevel()).append(' ').append(record.getLoggerName()).append(' ');
        if (record instanceof ExtLogRecord ext) {
            line.append(ext.getFormattedMessage());
            for (Map.Entry<String, String> mdc : ext.getMdcCopy().entrySet()) {
                line.append(' ').append(mdc.getKey()).append('=').append(mdc.getValue());
            }
            if (ext.getNdc() != null && !ext.getNdc().isEmpty()) {
                line.append(" ndc=").append(ext.getNdc());
            }
        } else {
            line.append(record.getMessage()).append(' ').append(java.util.Arrays.toString(record.getParameters()));
        }
        if (record.getThrown() != null) {
            StringWriter trace = new StringWriter();
            record.getThrown().printStackTrace(new PrintWriter(trace));
            line.append(' ').append(trace);
        }
        lines.add(line.toString());
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        root.removeHandler(this);
        service.setLevel(serviceLevel);
    }

    /**
     * What {@code line} shows of the key {@code key} of client {@code clientId}, or null: the key itself (in any case),
     * or an unkeyed hash a reader could recompute from a guess of it, the SHA-256 of the key or of the texts the
     * identities of version 0 hash ({@code client\nkey}, {@code refund\nclient\nkey}): its first 8 hex digits, any 12
     * in a row, or the start of its base64. A key may show only as its keyed tag ({@code KeyIdentities.logTag}).
     */
    public static String leak(String clientId, String key, String line) {
        String lower = line.toLowerCase(Locale.ROOT);
        if (lower.contains(key.toLowerCase(Locale.ROOT))) {
            return "the key";
        }
        for (String text : List.of(key, clientId + "\n" + key, "refund\n" + clientId + "\n" + key)) {
            String shown = text.replace("\n", "\\n");
            byte[] digest = sha256(text);
            String hex = HexFormat.of().formatHex(digest);
            if (lower.contains(hex.substring(0, 8))) {
                return "the first 8 hex digits of the SHA-256 of " + shown;
            }
            for (int i = 0; i + 12 <= hex.length(); i++) {
                if (lower.contains(hex.substring(i, i + 12))) {
                    return "hex digits " + i + " to " + (i + 12) + " of the SHA-256 of " + shown;
                }
            }
            for (Base64.Encoder base64 : List.of(Base64.getEncoder(), Base64.getUrlEncoder())) {
                if (line.contains(base64.encodeToString(digest).substring(0, 12))) {
                    return "the SHA-256 of " + shown + " in base64";
                }
            }
        }
        return null;
    }

    private static byte[] sha256(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}

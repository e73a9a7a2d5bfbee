package chaos;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A small JSON reader (the ledger and the answers), JDK only: the chaos run compiles without libraries. */
final class Json {
    final String s;
    int i;

    Json(String s) {
        this.s = s;
    }

    static Object parse(String text) {
        Json j = new Json(text);
        Object v = j.value();
        return v;
    }

    static Object parseQuietly(String text) {
        try {
            return text == null ? null : parse(text);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** A top-level string field of a JSON object, or null. */
    static String field(String json, String name) {
        try {
            Object o = parse(json);
            return o instanceof Map<?, ?> m && m.get(name) instanceof String v ? v : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    void ws() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
            i++;
        }
    }

    Object value() {
        ws();
        char c = s.charAt(i);
        switch (c) {
            case '{' -> {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                ws();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    ws();
                    String k = string();
                    ws();
                    i++; // :
                    m.put(k, value());
                    ws();
                    if (s.charAt(i++) == '}') {
                        return m;
                    }
                }
            }
            case '[' -> {
                List<Object> l = new ArrayList<>();
                i++;
                ws();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    ws();
                    if (s.charAt(i++) == ']') {
                        return l;
                    }
                }
            }
            case '"' -> {
                return string();
            }
            default -> {
                int start = i;
                while (i < s.length() && ",}] \n\r\t".indexOf(s.charAt(i)) < 0) {
                    i++;
                }
                String t = s.substring(start, i);
                return switch (t) {
                    case "null" -> null;
                    case "true" -> Boolean.TRUE;
                    case "false" -> Boolean.FALSE;
                    default -> Double.parseDouble(t);
                };
            }
        }
    }

    String string() {
        StringBuilder b = new StringBuilder();
        i++; // opening quote
        while (true) {
            char c = s.charAt(i++);
            if (c == '"') {
                return b.toString();
            }
            if (c == '\\') {
                char e = s.charAt(i++);
                switch (e) {
                    case 'n' -> b.append('\n');
                    case 't' -> b.append('\t');
                    case 'r' -> b.append('\r');
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'u' -> {
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> b.append(e);
                }
            } else {
                b.append(c);
            }
        }
    }

    /** A JSON number as a long; 0 when it is absent or not a number. */
    static long number(Object o) {
        return o instanceof Number n ? n.longValue() : 0;
    }
}

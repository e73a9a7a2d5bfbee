package dev.chargeonce.charge;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.chargeonce.web.ApiException;
import java.io.IOException;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Strict validation of a charge body. Nothing is coerced: {@code 10.5}, {@code "100"} and {@code 1e3} are not
 * amounts. Every rejection names the offending field in {@code param}. Limits follow Stripe's.
 */
public final class ChargeRequestParser {

    /** Stripe's largest amount in minor units (eight digits). */
    public static final long MAX_AMOUNT = 99_999_999L;
    /**
     * Stripe allows 50 metadata keys; this service writes 3 of its own (identity, client, attempt), and a fourth,
     * the request's fingerprint, when the client's leave room for it.
     */
    static final int MAX_METADATA_KEYS = 50 - 3;
    static final int MAX_METADATA_KEY_LENGTH = 40;
    static final int MAX_METADATA_VALUE_LENGTH = 500;
    static final int MAX_DESCRIPTION_LENGTH = 1000;
    static final int MAX_ID_LENGTH = 255;
    /** Metadata keys this service writes itself; a client may not set them. */
    static final String RESERVED_METADATA_PREFIX = "chargeonce_";

    private static final Set<String> FIELDS = Set.of("amount", "currency", "payment_method", "customer", "description", "metadata");
    private static final Pattern CURRENCY = Pattern.compile("[a-z]{3}");
    private static final Pattern STRIPE_ID = Pattern.compile("[A-Za-z0-9_]+");

    private static final ObjectMapper STRICT = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(JsonParser.Feature.ALLOW_COMMENTS)
            .build();

    private ChargeRequestParser() {
    }

    public static ChargeRequest parse(byte[] body) {
        JsonNode root = readObject(body, FIELDS);
        return new ChargeRequest(amount(root.get("amount")), currency(root.get("currency")),
                stripeId(root.get("payment_method"), "payment_method", true), stripeId(root.get("customer"), "customer", false),
                description(root.get("description")), metadata(root.get("metadata")));
    }

    /**
     * A body that must be one JSON object of the named fields at most: strict JSON (no duplicate keys, comments or
     * trailing tokens), every rejection a {@code 400} naming the field.
     */
    public static JsonNode readObject(byte[] body, Set<String> fields) {
        JsonNode root = readTree(body);
        if (root == null || !root.isObject()) {
            throw invalid("body_not_object", "The body must be a JSON object.", null);
        }
        return known(root, fields);
    }

    /**
     * An optional body, as {@link #readObject}; null when there is none: no bytes, or the JSON {@code null} that a
     * generated client sends for a body it was not given.
     */
    public static JsonNode readOptionalObject(byte[] body, Set<String> fields) {
        JsonNode root = body.length == 0 ? null : readTree(body);
        if (root == null || root.isNull()) {
            return null;
        }
        if (!root.isObject()) {
            throw invalid("body_not_object", "The body must be a JSON object.", null);
        }
        return known(root, fields);
    }

    private static JsonNode readTree(byte[] body) {
        try {
            return STRICT.readTree(body);
        } catch (JsonProcessingException e) {
            if (e.getOriginalMessage() != null && e.getOriginalMessage().contains("surrogate")
                    && e.getProcessor() instanceof JsonParser parser) {
                // A lone surrogate in a field name: Jackson refuses it while reading; name the object it was in.
                String where = parser.getParsingContext().pathAsPointer().toString().replaceFirst("^/", "").replace('/', '.');
                throw invalid("parameter_invalid", "text must be valid Unicode: a field name holds a lone UTF-16 surrogate.",
                        where.isEmpty() ? null : where);
            }
            throw invalid("body_not_json", "The body is not valid JSON: " + e.getOriginalMessage(), null);
        } catch (IOException e) {
            throw invalid("body_not_json", "The body could not be read.", null);
        }
    }

    /** The object, once every field of it is one of {@code fields}. */
    private static JsonNode known(JsonNode root, Set<String> fields) {
        for (Iterator<String> names = root.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!fields.contains(name)) {
                throw invalid("parameter_unknown", "Unknown field: " + name + ".", name);
            }
        }
        return root;
    }

    /** A required amount in the currency's minor unit, 1 to {@link #MAX_AMOUNT}: a JSON integer, nothing coerced. */
    public static long amount(JsonNode node) {
        if (node == null || node.isNull()) {
            throw invalid("parameter_missing", "amount is required: a positive integer in the currency's minor unit.", "amount");
        }
        // isIntegralNumber is false for 10.5, 1e3 and 1000.0 (floating-point tokens) and for strings.
        if (!node.isIntegralNumber() || !node.canConvertToLong()) {
            throw invalid("parameter_invalid_integer",
                    "amount must be a JSON integer in the currency's minor unit (no decimals, exponents or strings).", "amount");
        }
        long amount = node.longValue();
        if (amount < 1 || amount > MAX_AMOUNT) {
            throw invalid("amount_out_of_range", "amount must be between 1 and " + MAX_AMOUNT + ".", "amount");
        }
        return amount;
    }

    private static String currency(JsonNode node) {
        if (node == null || node.isNull()) {
            throw invalid("parameter_missing", "currency is required: a three-letter ISO code in lowercase.", "currency");
        }
        if (!node.isTextual() || !CURRENCY.matcher(node.textValue()).matches()) {
            throw invalid("parameter_invalid", "currency must be three lowercase letters, such as usd.", "currency");
        }
        return node.textValue();
    }

    private static String stripeId(JsonNode node, String field, boolean required) {
        if (node == null || node.isNull()) {
            if (required) {
                throw invalid("parameter_missing", field + " is required.", field);
            }
            return null;
        }
        if (!node.isTextual() || node.textValue().isEmpty() || node.textValue().length() > MAX_ID_LENGTH
                || !STRIPE_ID.matcher(node.textValue()).matches()) {
            throw invalid("parameter_invalid", field + " must be a Stripe id (letters, digits and underscores).", field);
        }
        return node.textValue();
    }

    private static String description(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isTextual() || characters(node.textValue()) > MAX_DESCRIPTION_LENGTH) {
            throw invalid("parameter_invalid", "description must be a string of at most " + MAX_DESCRIPTION_LENGTH
                    + " characters.", "description");
        }
        return validText(node.textValue(), "description");
    }

    /** Optional metadata as Stripe takes it, without this service's reserved keys. */
    public static SortedMap<String, String> metadata(JsonNode node) {
        SortedMap<String, String> metadata = new TreeMap<>();
        if (node == null || node.isNull()) {
            return metadata;
        }
        if (!node.isObject()) {
            throw invalid("parameter_invalid", "metadata must be an object of string keys and string values.", "metadata");
        }
        if (node.size() > MAX_METADATA_KEYS) {
            throw invalid("parameter_invalid", "metadata can have at most " + MAX_METADATA_KEYS + " keys.", "metadata");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> entry = it.next();
            String key = entry.getKey();
            String param = "metadata[" + shown(key) + "]";
            validText(key, param);
            if (key.isEmpty() || characters(key) > MAX_METADATA_KEY_LENGTH || key.contains("[") || key.contains("]")) {
                throw invalid("parameter_invalid", "metadata keys must be 1 to " + MAX_METADATA_KEY_LENGTH
                        + " characters without square brackets.", param);
            }
            if (key.startsWith(RESERVED_METADATA_PREFIX)) {
                throw invalid("parameter_invalid", "metadata keys starting with " + RESERVED_METADATA_PREFIX
                        + " are reserved.", param);
            }
            JsonNode value = entry.getValue();
            if (!value.isTextual() || characters(value.textValue()) > MAX_METADATA_VALUE_LENGTH) {
                throw invalid("parameter_invalid", "metadata values must be strings of at most "
                        + MAX_METADATA_VALUE_LENGTH + " characters.", param);
            }
            metadata.put(key, validText(value.textValue(), param));
        }
        return metadata;
    }

    /**
     * Text as it can be stored and sent on: valid Unicode (a lone UTF-16 surrogate, which JSON's {@code \\uD800}
     * escapes can carry, has no UTF-8 form and would be replaced by {@code ?} on its way to PostgreSQL and Stripe)
     * and no NUL (PostgreSQL's text refuses it). Refused naming the field, as every other invalid value.
     */
    static String validText(String text, String param) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == 0) {
                throw invalid("parameter_invalid", "text must not contain the NUL character (U+0000).", param);
            }
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw invalid("parameter_invalid", "text must be valid Unicode: a lone UTF-16 surrogate (\\u"
                        + Integer.toHexString(c).toUpperCase() + ") is not a character.", param);
            }
        }
        return text;
    }

    /** A client's text as an error's {@code param} may echo it: lone surrogates and NUL replaced (U+FFFD). */
    private static String shown(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                out.append(c).append(text.charAt(++i));
            } else {
                out.append(c == 0 || Character.isSurrogate(c) ? '\uFFFD' : c);
            }
        }
        return out.toString();
    }

    /** Length in characters (code points), as Stripe and JSON Schema count it, not in UTF-16 units. */
    private static int characters(String text) {
        return text.codePointCount(0, text.length());
    }

    private static ApiException invalid(String code, String message, String param) {
        return ApiException.invalidRequest(code, message, param);
    }
}

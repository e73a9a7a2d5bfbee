package dev.chargeonce.deploy;

import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code application.properties} read the way Quarkus reads it for one profile: {@code %prod.x} overrides
 * {@code x}, {@code ${name}} expressions resolve, and every property has an environment-variable form
 * ({@code quarkus.datasource.jdbc.url} -> {@code QUARKUS_DATASOURCE_JDBC_URL}) that overrides it.
 */
final class QuarkusProperties {

    static final Path APPLICATION_PROPERTIES = Path.of("src", "main", "resources", "application.properties");

    private static final Pattern EXPRESSION = Pattern.compile("\\$\\{([^}:]+)(?::([^}]*))?}");
    private static final Pattern QUARKUS_DURATION = Pattern.compile("(\\d+)(ms|s|m|h|d)");

    private final Map<String, String> raw;
    private final String profile;
    private final Map<String, String> environment;

    private QuarkusProperties(Map<String, String> raw, String profile, Map<String, String> environment) {
        this.raw = raw;
        this.profile = profile;
        this.environment = environment;
    }

    static QuarkusProperties load(Path file, String profile) {
        try {
            return parse(Files.readString(file), profile);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static QuarkusProperties parse(String text, String profile) {
        Properties properties = new Properties();
        try {
            properties.load(new StringReader(text));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, String> raw = new HashMap<>();
        properties.stringPropertyNames().forEach(name -> raw.put(name, properties.getProperty(name)));
        return new QuarkusProperties(raw, profile, Map.of());
    }

    /** The same file with these environment variables set (as a ConfigMap would set them on the pod). */
    QuarkusProperties withEnvironment(Map<String, String> environment) {
        return new QuarkusProperties(raw, profile, Map.copyOf(environment));
    }

    /** SmallRye Config's mapping: every character that is not a letter or digit becomes '_', then upper case. */
    static String envName(String property) {
        StringBuilder name = new StringBuilder(property.length());
        for (char c : property.toCharArray()) {
            name.append(Character.isLetterOrDigit(c) ? Character.toUpperCase(c) : '_');
        }
        return name.toString();
    }

    /** The value for the profile: environment variable, then {@code %profile.name}, then {@code name}; resolved. */
    Optional<String> value(String name) {
        String env = environment.get(envName(name));
        if (env != null) {
            return Optional.of(resolve(env, 0));
        }
        String value = raw.getOrDefault("%" + profile + "." + name, raw.get(name));
        return Optional.ofNullable(value).map(v -> resolve(v, 0));
    }

    Duration duration(String name) {
        String value = value(name).orElseThrow(() -> new AssertionError(name + " is not set in " + APPLICATION_PROPERTIES));
        return parseDuration(value);
    }

    static Duration parseDuration(String value) {
        Matcher m = QUARKUS_DURATION.matcher(value.trim());
        if (m.matches()) {
            long amount = Long.parseLong(m.group(1));
            return switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(amount);
                case "s" -> Duration.ofSeconds(amount);
                case "m" -> Duration.ofMinutes(amount);
                case "h" -> Duration.ofHours(amount);
                default -> Duration.ofDays(amount);
            };
        }
        if (value.trim().matches("\\d+")) {
            return Duration.ofSeconds(Long.parseLong(value.trim()));
        }
        return Duration.parse(value.trim().toUpperCase(Locale.ROOT));
    }

    /**
     * Every environment variable this file gives a meaning to: the env form of each property it sets (in any
     * profile, without the profile prefix) and every {@code ${NAME}} it reads.
     */
    Set<String> environmentVariableNames() {
        Set<String> names = new HashSet<>();
        raw.forEach((key, value) -> {
            names.add(envName(key.startsWith("%") ? key.substring(key.indexOf('.') + 1) : key));
            Matcher m = EXPRESSION.matcher(value);
            while (m.find()) {
                names.add(m.group(1));
                names.add(envName(m.group(1)));
            }
        });
        return names;
    }

    /**
     * The {@code ${NAME}} expressions without a default that the profile's values depend on, and that no property
     * of the file provides: the process must get them from its environment or it does not start.
     */
    Set<String> requiredEnvironmentVariables() {
        Set<String> required = new HashSet<>();
        Set<String> effectiveKeys = new HashSet<>();
        raw.keySet().forEach(key -> {
            if (!key.startsWith("%")) {
                effectiveKeys.add(key);
            } else if (key.startsWith("%" + profile + ".")) {
                effectiveKeys.add(key.substring(profile.length() + 2));
            }
        });
        for (String key : effectiveKeys) {
            String value = raw.getOrDefault("%" + profile + "." + key, raw.get(key));
            Matcher m = EXPRESSION.matcher(value);
            while (m.find()) {
                if (m.group(2) == null && !raw.containsKey(m.group(1))) {
                    required.add(m.group(1));
                }
            }
        }
        return required;
    }

    private String resolve(String value, int depth) {
        if (depth > 10) {
            throw new AssertionError("expression loop in " + value);
        }
        Matcher m = EXPRESSION.matcher(value);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String name = m.group(1);
            Optional<String> replacement = Optional.ofNullable(environment.get(name)).or(() -> value(name)).or(() -> Optional.ofNullable(m.group(2)));
            m.appendReplacement(out, Matcher.quoteReplacement(replacement.orElse(m.group())));
        }
        m.appendTail(out);
        String resolved = out.toString();
        return resolved.equals(value) ? resolved : resolve(resolved, depth + 1);
    }
}

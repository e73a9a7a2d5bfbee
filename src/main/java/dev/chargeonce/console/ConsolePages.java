package dev.chargeonce.console;

import io.quarkus.qute.Engine;
import io.quarkus.qute.HtmlEscaper;
import io.quarkus.qute.ReflectionValueResolver;
import io.quarkus.qute.Template;
import io.quarkus.qute.Variant;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * The console's Qute templates ({@code src/main/resources/console/}), parsed once at start-up with Qute's engine;
 * every value they print is HTML-escaped. Records and enums are read by their accessors.
 */
@ApplicationScoped
public class ConsolePages {

    private final Engine engine = Engine.builder().addDefaults().addValueResolver(new ReflectionValueResolver())
            .addResultMapper(new HtmlEscaper(List.of(Variant.TEXT_HTML))).build();
    private final Template index = parse("index.html");
    private final Template row = parse("row.html");

    String index(Map<String, Object> data) {
        return render(index, data);
    }

    String row(Map<String, Object> data) {
        return render(row, data);
    }

    private static String render(Template template, Map<String, Object> data) {
        var instance = template.instance();
        data.forEach(instance::data);
        return instance.render();
    }

    private Template parse(String name) {
        try (InputStream in = ConsolePages.class.getResourceAsStream("/console/" + name)) {
            if (in == null) {
                throw new IllegalStateException("console/" + name + " is missing from the classpath");
            }
            return engine.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8), Variant.forContentType(Variant.TEXT_HTML), name);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

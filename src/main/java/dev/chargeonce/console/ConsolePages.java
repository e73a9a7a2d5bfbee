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
 * every value they print is HTML-escaped. Records and enums are read by their accessors. Their one stylesheet is
 * read at start-up too: the pages carry no inline style or script (their Content-Security-Policy allows none).
 */
@ApplicationScoped
public class ConsolePages {

    private final Engine engine = Engine.builder().addDefaults().addValueResolver(new ReflectionValueResolver())
            .addResultMapper(new HtmlEscaper(List.of(Variant.TEXT_HTML))).build();
    private final Template index = parse("index.html");
    private final Template row = parse("row.html");
    private final String stylesheet = read("console.css");

    String index(Map<String, Object> data) {
        return render(index, data);
    }

    String row(Map<String, Object> data) {
        return render(row, data);
    }

    String stylesheet() {
        return stylesheet;
    }

    private static String render(Template template, Map<String, Object> data) {
        var instance = template.instance();
        data.forEach(instance::data);
        return instance.render();
    }

    private Template parse(String name) {
        return engine.parse(read(name), Variant.forContentType(Variant.TEXT_HTML), name);
    }

    private static String read(String name) {
        try (InputStream in = ConsolePages.class.getResourceAsStream("/console/" + name)) {
            if (in == null) {
                throw new IllegalStateException("console/" + name + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

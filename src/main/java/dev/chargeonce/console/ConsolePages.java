package dev.chargeonce.console;

import io.quarkus.qute.Engine;
import io.quarkus.qute.HtmlEscaper;
import io.quarkus.qute.NamespaceResolver;
import io.quarkus.qute.ReflectionValueResolver;
import io.quarkus.qute.Template;
import io.quarkus.qute.Variant;
import jakarta.enterprise.context.ApplicationScoped;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The console's Qute templates ({@code src/main/resources/console/}), parsed once at start-up with Qute's engine;
 * every value they print is HTML-escaped. Records and enums are read by their accessors. Their one stylesheet is
 * read at start-up too: the pages carry no inline style or script (their Content-Security-Policy allows none).
 */
@ApplicationScoped
public class ConsolePages {

    private final Engine engine = Engine.builder().addDefaults().addValueResolver(new ReflectionValueResolver())
            .addNamespaceResolver(formats()).addResultMapper(new HtmlEscaper(List.of(Variant.TEXT_HTML))).build();
    private final Template index = parse("index.html");
    private final Template row = parse("row.html");
    private final Template search = parse("search.html");
    private final String stylesheet = read("console.css");

    String index(Map<String, Object> data) {
        return render(index, data);
    }

    String row(Map<String, Object> data) {
        return render(row, data);
    }

    String search(Map<String, Object> data) {
        return render(search, data);
    }

    String stylesheet() {
        return stylesheet;
    }

    /**
     * {@code fmt:}, the pages' formats ({@link Readable}): {@code {fmt:money(amount, currency)}},
     * {@code {fmt:utc(instant)}}, {@code {fmt:long(text)}} (whether to fold it) and {@code {fmt:head(text)}}; and two
     * helpers for texts made of parts: {@code {fmt:first(a, b)}} (the first that is not null) and
     * {@code {fmt:said(outcome, detail)}} ({@code "outcome: detail"}).
     */
    private static NamespaceResolver formats() {
        return NamespaceResolver.builder("fmt").resolveAsync(ctx -> {
            List<CompletableFuture<Object>> params = ctx.getParams().stream().map(p -> ctx.evaluate(p).toCompletableFuture()).toList();
            return CompletableFuture.allOf(params.toArray(CompletableFuture[]::new)).<Object>thenApply(done -> {
                List<Object> args = params.stream().map(CompletableFuture::join).toList();
                return switch (ctx.getName()) {
                    case "money" -> args.get(0) == null ? "" : Readable.money(((Number) args.get(0)).longValue(), (String) args.get(1));
                    case "utc" -> Readable.utc((Instant) args.get(0));
                    case "long" -> Readable.isLong(text(args.get(0)));
                    case "head" -> Readable.head(text(args.get(0)));
                    case "first" -> args.stream().filter(java.util.Objects::nonNull).map(Object::toString).findFirst().orElse("");
                    case "said" -> text(args.get(0)) + (args.get(1) == null ? "" : ": " + args.get(1));
                    default -> throw new IllegalArgumentException("no format fmt:" + ctx.getName());
                };
            });
        }).build();
    }

    private static String text(Object value) {
        return value == null ? null : value.toString();
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

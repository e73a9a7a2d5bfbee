package dev.chargeonce.web;

import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.spi.Bean;
import jakarta.enterprise.inject.spi.BeanManager;
import jakarta.ws.rs.HttpMethod;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Which methods each path answers, read from the resource classes' own annotations at start-up: the {@code Allow}
 * header of a {@code 405} and of an {@code OPTIONS} answer names exactly those (RESTEasy names none on a 405, and
 * on OPTIONS every method of the class, including a POST that the path refuses). HEAD goes with GET, OPTIONS with
 * every path.
 */
@ApplicationScoped
public class Routes {

    private final Map<Pattern, Set<String>> methodsByPath = new LinkedHashMap<>();

    void read(@Observes StartupEvent event, BeanManager beans) {
        for (Bean<?> bean : beans.getBeans(Object.class, Any.Literal.INSTANCE)) {
            Class<?> type = bean.getBeanClass();
            jakarta.ws.rs.Path resource = type.getAnnotation(jakarta.ws.rs.Path.class);
            if (resource != null) {
                add(resource.value(), type);
            }
        }
    }

    private synchronized void add(String root, Class<?> type) {
        for (Method method : type.getDeclaredMethods()) {
            for (Annotation annotation : method.getAnnotations()) {
                HttpMethod verb = annotation.annotationType().getAnnotation(HttpMethod.class);
                if (verb == null) {
                    continue;
                }
                jakarta.ws.rs.Path sub = method.getAnnotation(jakarta.ws.rs.Path.class);
                String template = ("/" + root + "/" + (sub == null ? "" : sub.value())).replaceAll("/+", "/").replaceAll("(.)/$", "$1");
                Pattern path = Pattern.compile("^" + template.replaceAll("\\{[^}]+}", "[^/]+") + "/?$");
                Set<String> methods = methodsByPath.computeIfAbsent(methodsByPath.keySet().stream()
                        .filter(p -> p.pattern().equals(path.pattern())).findFirst().orElse(path), p -> new TreeSet<>());
                methods.add(verb.value());
                if (verb.value().equals("GET")) {
                    methods.add("HEAD");
                }
                methods.add("OPTIONS");
            }
        }
    }

    /** The methods {@code path} answers; empty when no resource has it. */
    public synchronized List<String> allowed(String path) {
        for (Map.Entry<Pattern, Set<String>> route : methodsByPath.entrySet()) {
            if (route.getKey().matcher(path).matches()) {
                return new ArrayList<>(route.getValue());
            }
        }
        return List.of();
    }
}

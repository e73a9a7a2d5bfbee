package dev.chargeonce.web;

import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerResponseContext;
import java.util.UUID;
import java.util.regex.Pattern;
import org.jboss.logging.MDC;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;
import org.jboss.resteasy.reactive.server.ServerResponseFilter;

/**
 * A request id on every log line and every answer ({@code X-Request-Id}): the caller's, when it sent a sane one,
 * otherwise a new one. This is what support asks for at 3 a.m.
 */
public class RequestIdFilter {

    public static final String HEADER = "X-Request-Id";
    private static final Pattern SANE = Pattern.compile("[A-Za-z0-9._:-]{1,128}");

    @ServerRequestFilter(preMatching = true, priority = Priorities.AUTHENTICATION - 100)
    public void assign(ContainerRequestContext request) {
        String given = request.getHeaderString(HEADER);
        String id = given != null && SANE.matcher(given).matches() ? given : "req_" + UUID.randomUUID().toString().replace("-", "");
        request.setProperty(HEADER, id);
        MDC.put("request_id", id);
    }

    @ServerResponseFilter
    public void echo(ContainerRequestContext request, ContainerResponseContext response) {
        Object id = request.getProperty(HEADER);
        if (id != null) {
            response.getHeaders().putSingle(HEADER, id);
        }
    }
}

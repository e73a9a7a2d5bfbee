package dev.chargeonce.web;

import jakarta.ws.rs.NotAcceptableException;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import java.util.Locale;
import org.jboss.resteasy.reactive.server.ServerRequestFilter;

/**
 * {@code Accept} as RFC 9110 reads it, quality values included, before anything is claimed: the API answers
 * {@code application/json} only, so a request that does not accept it (or gives it {@code q=0}, also through a
 * wildcard it narrows: {@code *}{@code /*, application/json;q=0}) is a {@code 406} and nothing runs.
 */
public class AcceptFilter {

    @ServerRequestFilter(preMatching = true, priority = Priorities.AUTHENTICATION + 50)
    public void negotiate(ContainerRequestContext request) {
        if (!request.getUriInfo().getPath().startsWith("/v1/")) {
            return;
        }
        java.util.List<String> accept = request.getHeaders().get("Accept");
        if (accept != null && !accept.isEmpty() && !acceptsJson(String.join(",", accept))) {
            throw new NotAcceptableException();
        }
    }

    /** Whether an {@code Accept} value lets {@code application/json} through: its most specific range decides. */
    static boolean acceptsJson(String accept) {
        int bestSpecificity = -1;
        double quality = 0;
        boolean anyRange = false;
        for (String range : accept.split(",")) {
            String[] parts = range.trim().split(";");
            String type = parts[0].trim().toLowerCase(Locale.ROOT);
            if (type.isEmpty()) {
                continue;
            }
            anyRange = true;
            int specificity = switch (type) {
                case "application/json" -> 2;
                case "application/*" -> 1;
                case "*/*" -> 0;
                default -> -1;
            };
            if (specificity < 0) {
                continue;
            }
            double q = 1;
            for (int i = 1; i < parts.length; i++) {
                String param = parts[i].trim().toLowerCase(Locale.ROOT);
                if (param.startsWith("q=")) {
                    try {
                        q = Double.parseDouble(param.substring(2).trim());
                    } catch (NumberFormatException e) {
                        q = 0; // an unreadable weight gives nothing
                    }
                }
            }
            if (specificity > bestSpecificity) {
                bestSpecificity = specificity;
                quality = q;
            }
        }
        // An Accept header with nothing in it is no preference at all.
        return !anyRange || (bestSpecificity >= 0 && quality > 0);
    }
}

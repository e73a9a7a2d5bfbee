package dev.chargeonce.web;

import io.micrometer.core.instrument.Tags;
import io.quarkus.micrometer.runtime.HttpServerMetricsTagsContributor;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * One {@code uri} label, {@value #LABEL}, in the HTTP server metrics ({@code http_server_requests_seconds}) for every
 * answer to a request that matched no resource method: refused by the authentication filters before matching (401,
 * 429), a path the API does not have (404), a method its path does not have (405), a request the HTTP server refused
 * before any route (a malformed header: 400). Micrometer labels an answer by its route's template
 * ({@code /v1/charges/{id}}) when it has one, and otherwise by the raw path (a 404 as {@code NOT_FOUND}). So anyone,
 * without a key, could send 100 paths of their own and fill the 100 values Micrometer keeps
 * ({@code quarkus.micrometer.binder.http-server.max-uri-tags}), after which it drops the meters of any new value: a
 * route first used then would have no metric at all.
 *
 * <p>A request has a template once RESTEasy has matched its method (it sets the request context's
 * {@code UrlPathTemplate}, which the binder reads). For an answer without one, this contributor's {@code uri} tag
 * replaces the binder's (Micrometer's {@code Tags.and} keeps the later of two tags of one name). The binder asks its
 * contributors at the answer's end only, not when a client goes away before the answer; but a request that matches
 * nothing is answered as it comes in (by a filter, or by RESTEasy's 404 or 405), so none is left waiting to go away.
 *
 * <p>What Quarkus offers short of this: {@code match-patterns} map raw paths before the template is looked at, so a
 * catch-all would hide the templates too; {@code suppress4xx-errors} labels a 4xx answer {@code UNKNOWN} unless its
 * template differs from its path, which would take the label from {@code POST /v1/charges}' own 4xx answers; a
 * {@code MeterFilter} would have to run before the one that enforces the limit and know every template.
 */
@ApplicationScoped
public class UnmatchedRequests implements HttpServerMetricsTagsContributor {

    /** The label of every answer to a request that matched no resource method. */
    public static final String LABEL = "/unmatched";

    /** Where RESTEasy puts a matched method's template, and Quarkus' Micrometer binder reads it. */
    static final String URL_PATH_TEMPLATE = "UrlPathTemplate";

    private static final Tags UNMATCHED = Tags.of("uri", LABEL);

    @Override
    public Tags contribute(Context context) {
        return context.requestContextLocalData(URL_PATH_TEMPLATE) == null ? UNMATCHED : Tags.empty();
    }
}

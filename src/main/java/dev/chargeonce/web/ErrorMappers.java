package dev.chargeonce.web;

import jakarta.ws.rs.NotAcceptableException;
import jakarta.ws.rs.NotAllowedException;
import jakarta.ws.rs.NotFoundException;
import jakarta.ws.rs.NotSupportedException;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.ServerExceptionMapper;

/** Renders every failure in the one error shape; nothing leaves the service as an HTML page or a stack trace. */
public class ErrorMappers {

    private static final Logger LOG = Logger.getLogger(ErrorMappers.class);

    private final Routes routes;

    ErrorMappers(Routes routes) {
        this.routes = routes;
    }

    @ServerExceptionMapper
    public Response api(ApiException e) {
        return answer(e);
    }

    /** An {@link ApiException} in the error shape: for mappers of other packages' exceptions too. */
    public static Response answer(ApiException e) {
        Response response = respond(e.status(), ErrorBody.of(e.type(), e.code(), e.getMessage(), e.param()), e.retryAfter());
        if ("operator_credentials_required".equals(e.code())) {
            // The console is opened by a browser: tell it to ask for the operator's credentials.
            return Response.fromResponse(response).header("WWW-Authenticate", "Basic realm=\"chargeonce operators\", charset=\"UTF-8\"").build();
        }
        return response;
    }

    @ServerExceptionMapper
    public Response notSupported(NotSupportedException e) {
        return respond(415, ErrorBody.of("invalid_request_error", "unsupported_media_type",
                "Send the body as application/json.", null), null);
    }

    @ServerExceptionMapper
    public Response notFound(NotFoundException e, jakarta.ws.rs.core.UriInfo uri, jakarta.ws.rs.core.Request request) {
        // RESTEasy answers 404 for a method a path does not answer when another resource class shares its prefix
        // (PUT /v1/charges/{id}/refunds): the path exists, so it is a 405.
        java.util.List<String> allowed = routes.allowed(uri.getPath());
        if (!allowed.isEmpty() && !allowed.contains(request.getMethod())) {
            return notAllowed(new NotAllowedException(allowed.get(0)), uri);
        }
        return respond(404, ErrorBody.of("invalid_request_error", "resource_missing", "No such resource.", null), null);
    }

    @ServerExceptionMapper
    public Response notAcceptable(NotAcceptableException e) {
        return respond(406, ErrorBody.of("invalid_request_error", "not_acceptable",
                "This API answers application/json only; accept it.", null), null);
    }

    @ServerExceptionMapper
    public Response notAllowed(NotAllowedException e, jakarta.ws.rs.core.UriInfo uri) {
        java.util.List<String> allowed = routes.allowed(uri.getPath());
        Response response = respond(405, ErrorBody.of("invalid_request_error", "method_not_allowed",
                "Method not allowed on this resource" + (allowed.isEmpty() ? "." : "; it answers " + String.join(", ", allowed) + "."), null), null);
        return allowed.isEmpty() ? response : Response.fromResponse(response).header("Allow", String.join(", ", allowed)).build();
    }

    /** An OPTIONS answer names what the path answers (RESTEasy's own names every method of the resource class). */
    @org.jboss.resteasy.reactive.server.ServerResponseFilter
    public void allowOnOptions(jakarta.ws.rs.container.ContainerRequestContext request, jakarta.ws.rs.container.ContainerResponseContext response) {
        if ("OPTIONS".equals(request.getMethod()) && response.getHeaders().containsKey("Allow")) {
            java.util.List<String> allowed = routes.allowed(request.getUriInfo().getPath());
            if (!allowed.isEmpty()) {
                response.getHeaders().putSingle("Allow", String.join(", ", allowed));
            }
        }
    }

    @ServerExceptionMapper
    public Response web(WebApplicationException e) {
        int status = e.getResponse().getStatus();
        if (status >= 500) {
            LOG.error("request failed", e);
        }
        return respond(status, ErrorBody.of(status >= 500 ? "api_error" : "invalid_request_error",
                status >= 500 ? "internal_error" : "invalid_request", status >= 500 ? "Internal error." : e.getMessage(), null), null);
    }

    @ServerExceptionMapper
    public Response unexpected(Exception e) {
        LOG.error("unexpected failure", e);
        return respond(500, ErrorBody.of("api_error", "internal_error", "Internal error.", null), null);
    }

    private static Response respond(int status, ErrorBody body, java.time.Duration retryAfter) {
        Response.ResponseBuilder builder = Response.status(status).type(MediaType.APPLICATION_JSON_TYPE).entity(body);
        if (retryAfter != null) {
            builder.header("Retry-After", Math.max(1, (retryAfter.toMillis() + 999) / 1000));
        }
        return builder.build();
    }
}

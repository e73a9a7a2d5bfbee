package dev.chargeonce.refund;

import dev.chargeonce.auth.ApiKeyFilter;
import io.smallrye.common.annotation.RunOnVirtualThread;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

/** One refund, by id. */
@Path("/v1/refunds")
@Produces(MediaType.APPLICATION_JSON)
public class RefundResource {

    private final RefundQueries queries;

    RefundResource(RefundQueries queries) {
        this.queries = queries;
    }

    @GET
    @Path("/{id}")
    @RunOnVirtualThread
    public Response get(@Context ContainerRequestContext request, @PathParam("id") String id) {
        return Response.ok(queries.find(ApiKeyFilter.clientId(request), id)).build();
    }
}

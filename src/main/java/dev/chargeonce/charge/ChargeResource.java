package dev.chargeonce.charge;

import dev.chargeonce.auth.ApiKeyFilter;
import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.waiting.PreferWait;
import dev.chargeonce.waiting.WaitThenReplay;
import dev.chargeonce.web.BodyLimitFilter;
import dev.chargeonce.web.VirtualThreadAnswers;
import io.smallrye.common.annotation.RunOnVirtualThread;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.concurrent.CompletionStage;
import org.jboss.resteasy.reactive.server.Cancellable;

/**
 * The HTTP edge: authenticate (a filter did), check the envelope, hand over. Blocking work runs on virtual
 * threads so a slow Stripe ties up neither the event loop nor a fixed worker pool.
 */
@Path("/v1/charges")
@Produces(MediaType.APPLICATION_JSON)
public class ChargeResource {

    private final ChargeService charges;
    private final ChargeQueries queries;
    private final WaitThenReplay waiting;
    private final VirtualThreadAnswers virtualThreads;

    ChargeResource(ChargeService charges, ChargeQueries queries, WaitThenReplay waiting, VirtualThreadAnswers virtualThreads) {
        this.charges = charges;
        this.queries = queries;
        this.waiting = waiting;
        this.virtualThreads = virtualThreads;
    }

    /**
     * On the event loop, once Quarkus read the body: the envelope is checked here (a refusal costs no thread), the
     * claim, the Stripe call and the finish run on a virtual thread ({@link VirtualThreadAnswers}).
     */
    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Cancellable(false)
    public CompletionStage<Response> create(@Context ContainerRequestContext request,
                                            @HeaderParam(IdempotencyKey.HEADER) String idempotencyKey, byte[] body) {
        if (body != null && body.length > BodyLimitFilter.MAX_BODY_BYTES) {
            throw BodyLimitFilter.tooLarge();
        }
        IdempotencyKey key = IdempotencyKey.parse(idempotencyKey);
        ChargeRequest charge = ChargeRequestParser.parse(body == null ? new byte[0] : body);
        String clientId = ApiKeyFilter.clientId(request);
        int wait = PreferWait.seconds(request.getHeaders().get(PreferWait.HEADER));
        return virtualThreads.answer(() -> waiting.answer(Operation.CHARGE, clientId, wait, () -> charges.charge(clientId, key, charge))
                .toResponse(idempotencyKey));
    }

    @GET
    @Path("/{id}")
    @RunOnVirtualThread
    public Response get(@Context ContainerRequestContext request, @PathParam("id") String id) {
        return Response.ok(queries.find(ApiKeyFilter.clientId(request), id)).build();
    }

    @GET
    @RunOnVirtualThread
    public Response list(@Context ContainerRequestContext request) {
        return Response.ok(queries.list(ApiKeyFilter.clientId(request), request.getUriInfo().getQueryParameters())).build();
    }

}

package dev.chargeonce.refund;

import dev.chargeonce.auth.ApiKeyFilter;
import dev.chargeonce.charge.ChargeQueries;
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

/** A charge's refunds: make one ({@code Idempotency-Key} required, as for charges), list them. */
@Path("/v1/charges/{id}/refunds")
@Produces(MediaType.APPLICATION_JSON)
public class ChargeRefundsResource {

    private final RefundService refunds;
    private final RefundQueries queries;
    private final WaitThenReplay waiting;
    private final VirtualThreadAnswers virtualThreads;

    ChargeRefundsResource(RefundService refunds, RefundQueries queries, WaitThenReplay waiting,
                          VirtualThreadAnswers virtualThreads) {
        this.refunds = refunds;
        this.queries = queries;
        this.waiting = waiting;
        this.virtualThreads = virtualThreads;
    }

    /** As a charge ({@code ChargeResource#create}): the envelope on the event loop, the refund on a virtual thread. */
    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Cancellable(false)
    public CompletionStage<Response> create(@Context ContainerRequestContext request, @PathParam("id") String chargeId,
                                            @HeaderParam(IdempotencyKey.HEADER) String idempotencyKey, byte[] body) {
        if (body != null && body.length > BodyLimitFilter.MAX_BODY_BYTES) {
            throw BodyLimitFilter.tooLarge();
        }
        IdempotencyKey key = IdempotencyKey.parse(idempotencyKey);
        RefundRequest refund = RefundRequest.parse(body == null ? new byte[0] : body);
        String clientId = ApiKeyFilter.clientId(request);
        int wait = PreferWait.seconds(request.getHeaders().get(PreferWait.HEADER));
        return virtualThreads.answer(() -> waiting.answer(Operation.REFUND, clientId, wait,
                () -> refunds.refund(clientId, chargeId, key, refund)).toResponse(idempotencyKey));
    }

    @GET
    @RunOnVirtualThread
    public Response list(@Context ContainerRequestContext request, @PathParam("id") String chargeId) {
        return Response.ok(queries.listOfCharge(ApiKeyFilter.clientId(request), chargeId, limit(request))).build();
    }

    /** {@code limit}, read raw: an empty or repeated one is refused, not defaulted or first-wins. */
    private static int limit(ContainerRequestContext request) {
        return ChargeQueries.parseLimit(request.getUriInfo().getQueryParameters().get("limit"));
    }
}

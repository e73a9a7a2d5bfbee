package dev.chargeonce.reconcile;

import dev.chargeonce.auth.OperatorFilter;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.web.ApiException;
import io.smallrye.common.annotation.RunOnVirtualThread;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The operators' API, for scripts (the console does the same through forms): findings, rows that need an operator
 * and their stories, the fenced actions, and on-demand reconciliation runs. HTTP Basic with an operator's
 * credentials ({@link OperatorFilter}); answers JSON. Not part of the clients' contract ({@code openapi.yaml}):
 * documented in the README.
 */
@Path("/admin/v1")
@Produces(MediaType.APPLICATION_JSON)
public class AdminResource {

    private final RowStories stories;
    private final OperatorActions actions;
    private final ReconciliationJob job;
    private final PaymentSearch search;

    AdminResource(RowStories stories, OperatorActions actions, ReconciliationJob job, PaymentSearch search) {
        this.search = search;
        this.stories = stories;
        this.actions = actions;
        this.job = job;
    }

    /** What an action on a row names: the generation the operator saw, why, and for attach the Stripe object. */
    public record RowAction(Integer lease_gen, String reason, String object) {
    }

    public record Note(String note) {
    }

    public record Window(String from, String to) {
    }

    @GET
    @Path("/findings")
    @RunOnVirtualThread
    public Object findings(@QueryParam("open") String open, @QueryParam("limit") String limit) {
        return Map.of("data", stories.findings(!"false".equals(open), limit(limit)));
    }

    @GET
    @Path("/rows")
    @RunOnVirtualThread
    public Object attentionRows(@QueryParam("limit") String limit) {
        return Map.of("data", stories.attentionRows(limit(limit)));
    }

    @GET
    @Path("/rows/{operation}/{id}")
    @RunOnVirtualThread
    public Object story(@PathParam("operation") String operation, @PathParam("id") String id) {
        return stories.story(operation(operation), id).orElseThrow(() -> new ApiException(404, "invalid_request_error",
                "resource_missing", "No such " + operation + ": " + id, "id", null));
    }

    /**
     * The console's search box for scripts: the charges and refunds {@code q} names (an id, an Idempotency-Key, a
     * PaymentIntent, a Stripe refund or customer, a client), each with how it matched and the row as
     * {@code /rows/{operation}/{id}} shows it; {@code client} narrows an Idempotency-Key to one client's.
     */
    @GET
    @Path("/search")
    @RunOnVirtualThread
    public Object search(@QueryParam("q") String q, @QueryParam("client") String client) {
        if (q == null || q.isBlank()) {
            throw ApiException.invalidRequest("parameter_missing", "Send q: a charge or refund id, an Idempotency-Key, a pi_, re_ or"
                    + " cus_ id, or a client id.", "q");
        }
        return Map.of("data", search.search(q, client).stream().map(m -> {
            Map<String, Object> hit = new LinkedHashMap<>();
            hit.put("matched_by", m.matchedBy().column());
            hit.put("operation", m.row().operation().column());
            hit.put("id", m.row().id());
            hit.put("row", m.row());
            return hit;
        }).toList());
    }

    @POST
    @Path("/rows/{operation}/{id}/attach")
    @Consumes(MediaType.APPLICATION_JSON)
    @RunOnVirtualThread
    public Response attach(@Context ContainerRequestContext request, @PathParam("operation") String operation,
                           @PathParam("id") String id, RowAction action) {
        RowAction a = required(action);
        return answer(actions.attach(OperatorFilter.operator(request), operation(operation), id, a.lease_gen(), a.object(), a.reason()));
    }

    @POST
    @Path("/rows/{operation}/{id}/mark-failed")
    @Consumes(MediaType.APPLICATION_JSON)
    @RunOnVirtualThread
    public Response markFailed(@Context ContainerRequestContext request, @PathParam("operation") String operation,
                               @PathParam("id") String id, RowAction action) {
        RowAction a = required(action);
        return answer(actions.markFailed(OperatorFilter.operator(request), operation(operation), id, a.lease_gen(), a.reason()));
    }

    @POST
    @Path("/rows/{operation}/{id}/requeue")
    @Consumes(MediaType.APPLICATION_JSON)
    @RunOnVirtualThread
    public Response requeue(@Context ContainerRequestContext request, @PathParam("operation") String operation,
                            @PathParam("id") String id, RowAction action) {
        RowAction a = required(action);
        return answer(actions.requeue(OperatorFilter.operator(request), operation(operation), id, a.lease_gen(), a.reason()));
    }

    @POST
    @Path("/findings/{id}/acknowledge")
    @Consumes(MediaType.APPLICATION_JSON)
    @RunOnVirtualThread
    public Response acknowledge(@Context ContainerRequestContext request, @PathParam("id") long id, Note note) {
        return answer(actions.acknowledge(OperatorFilter.operator(request), id, note == null ? null : note.note()));
    }

    @GET
    @Path("/reconciliation/runs")
    @RunOnVirtualThread
    public Object runs(@QueryParam("limit") String limit) {
        return Map.of("data", stories.runs(limit(limit)));
    }

    /** Queues a run over a window ({@code from}, {@code to}: ISO-8601 instants); it starts as soon as the runs before it end. */
    @POST
    @Path("/reconciliation/runs")
    @Consumes(MediaType.APPLICATION_JSON)
    @RunOnVirtualThread
    public Response requestRun(@Context ContainerRequestContext request, Window window) {
        if (window == null || window.from() == null || window.to() == null) {
            throw ApiException.invalidRequest("parameter_missing", "Send {\"from\": \"<ISO-8601 instant>\", \"to\": \"...\"}.", "from");
        }
        ReconciliationStore.Run run;
        try {
            run = job.request(Instant.parse(window.from()), Instant.parse(window.to()), OperatorFilter.operator(request));
        } catch (DateTimeParseException | IllegalArgumentException e) {
            throw ApiException.invalidRequest("parameter_invalid", "from and to must be ISO-8601 instants, from before to.", "from");
        }
        long runId = run.id();
        Thread.ofVirtual().name("reconciliation-on-demand").start(() -> job.runSoon(runId));
        return Response.status(202).entity(run).build();
    }

    private static Response answer(OperatorActions.Outcome outcome) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("done", outcome.done());
        body.put("message", outcome.message());
        return Response.status(outcome.done() ? 200 : 409).entity(body).build();
    }

    private static RowAction required(RowAction action) {
        if (action == null || action.lease_gen() == null) {
            throw ApiException.invalidRequest("parameter_missing",
                    "Send {\"lease_gen\": <the generation you saw>, \"reason\": \"...\"} (and \"object\" to attach).", "lease_gen");
        }
        return action;
    }

    static Operation operation(String operation) {
        return switch (operation.toLowerCase(Locale.ROOT)) {
            case "charge", "charges" -> Operation.CHARGE;
            case "refund", "refunds" -> Operation.REFUND;
            default -> throw new ApiException(404, "invalid_request_error", "resource_missing",
                    "No such operation: " + operation + " (charge or refund)", "operation", null);
        };
    }

    private static int limit(String limit) {
        if (limit == null) {
            return 100;
        }
        try {
            return Math.max(1, Math.min(1000, Integer.parseInt(limit)));
        } catch (NumberFormatException e) {
            throw ApiException.invalidRequest("parameter_invalid", "limit must be an integer.", "limit");
        }
    }
}

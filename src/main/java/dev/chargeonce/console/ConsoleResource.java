package dev.chargeonce.console;

import dev.chargeonce.ratebudget.StripeRateBudget;
import dev.chargeonce.auth.OperatorFilter;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.reconcile.OperatorActions;
import dev.chargeonce.reconcile.PaymentSearch;
import dev.chargeonce.reconcile.ReconciliationStore;
import dev.chargeonce.reconcile.RowStories;
import dev.chargeonce.web.ApiException;
import io.smallrye.common.annotation.RunOnVirtualThread;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.CookieParam;
import jakarta.ws.rs.FormParam;
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
import java.net.URI;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The operator's console: one page of what needs an operator (a search box, open findings, parked and stuck rows,
 * runs, recent actions), a page of search results, and a page per row with its story and the safe actions, as plain
 * HTML forms. Thin: it reads through {@link RowStories} and {@link PaymentSearch} and acts through
 * {@link OperatorActions}, which fence and record every action.
 */
@Path("/console")
@Produces(MediaType.TEXT_HTML)
public class ConsoleResource {

    private final RowStories stories;
    private final OperatorActions actions;
    private final FormTokens tokens;
    private final ConsolePages pages;
    private final PaymentSearch search;
    private final StripeRateBudget budget;

    ConsoleResource(RowStories stories, OperatorActions actions, FormTokens tokens, ConsolePages pages, PaymentSearch search,
                    StripeRateBudget budget) {
        this.search = search;
        this.budget = budget;
        this.stories = stories;
        this.actions = actions;
        this.tokens = tokens;
        this.pages = pages;
    }

    @GET
    @RunOnVirtualThread
    public Response index(@Context ContainerRequestContext request, @CookieParam(FormTokens.SESSION_COOKIE) String cookie,
                          @QueryParam("message") String message) {
        String operator = OperatorFilter.operator(request);
        Session session = session(cookie);
        List<ReconciliationStore.StoredFinding> findings = stories.findings(true, 200);
        Map<Long, String> acknowledgeTokens = new HashMap<>();
        for (ReconciliationStore.StoredFinding finding : findings) {
            acknowledgeTokens.put(finding.id(), tokens.issue(operator, session.id(), "findings/" + finding.id() + "/acknowledge"));
        }
        Map<String, Object> data = new HashMap<>();
        data.put("operator", operator);
        data.put("findings", findings);
        data.put("rows", stories.attentionRows(200));
        data.put("runs", stories.runs(10));
        data.put("actions", stories.recentActions(20));
        data.put("resolved", stories.resolvedFindings(20));
        data.put("clients", search.clients());
        data.put("budget", budget.standings());
        data.put("budgetOn", budget.enabled());
        data.put("q", "");
        data.put("client", "");
        banner(data, message);
        data.put("acknowledgeTokens", acknowledgeTokens);
        return page(pages.index(data), session);
    }

    @GET
    @Path("/rows/{operation}/{id}")
    @RunOnVirtualThread
    public Response row(@Context ContainerRequestContext request, @CookieParam(FormTokens.SESSION_COOKIE) String cookie,
                        @PathParam("operation") String operation, @PathParam("id") String id, @QueryParam("message") String message) {
        Operation op = operation(operation);
        String operator = OperatorFilter.operator(request);
        RowStories.RowStory story = stories.story(op, id).orElseThrow(() -> new ApiException(404, "invalid_request_error",
                "resource_missing", "No such " + operation + ": " + dev.chargeonce.idempotency.RowIds.echo(id), "id", null));
        Map<String, Object> data = new HashMap<>();
        data.put("operator", operator);
        data.put("story", story);
        data.put("operation", op.name().toLowerCase(Locale.ROOT));
        banner(data, message);
        Session session = session(cookie);
        String form = "rows/" + op.name().toLowerCase(Locale.ROOT) + "/" + story.row().id() + "/";
        data.put("attachToken", tokens.issue(operator, session.id(), form + "attach"));
        data.put("markFailedToken", tokens.issue(operator, session.id(), form + "mark-failed"));
        data.put("requeueToken", tokens.issue(operator, session.id(), form + "requeue"));
        return page(pages.row(data), session);
    }

    /**
     * The search box's answer: every charge and refund the text names (an id, an Idempotency-Key, a PaymentIntent, a
     * Stripe refund or customer, a client), each linked to its page. A plain GET form: the results page can be
     * bookmarked and reloaded, and needs no script. The text is not echoed into any link (it may be a client's key).
     */
    @GET
    @Path("/search")
    @RunOnVirtualThread
    public Response search(@Context ContainerRequestContext request, @CookieParam(FormTokens.SESSION_COOKIE) String cookie,
                           @QueryParam("q") String q, @QueryParam("client") String client) {
        Map<String, Object> data = new HashMap<>();
        data.put("operator", OperatorFilter.operator(request));
        data.put("q", q == null ? "" : q.strip());
        data.put("client", client == null ? "" : client.strip());
        data.put("clients", search.clients());
        data.put("matches", search.search(q, client));
        return page(pages.search(data), session(cookie));
    }

    /** The pages' stylesheet: a file of the console's own, since their Content-Security-Policy refuses inline styles. */
    @GET
    @Path("/console.css")
    @Produces("text/css;charset=UTF-8")
    public String stylesheet() {
        return pages.stylesheet();
    }

    @POST
    @Path("/rows/{operation}/{id}/{action}")
    @Consumes(MediaType.APPLICATION_FORM_URLENCODED)
    @RunOnVirtualThread
    public Response act(@Context ContainerRequestContext request, @PathParam("operation") String operation, @PathParam("id") String id,
                        @PathParam("action") String action, @FormParam("lease_gen") int leaseGeneration, @FormParam("reason") String reason,
                        @FormParam("object") String object, @FormParam("token") String token,
                        @CookieParam(FormTokens.SESSION_COOKIE) String session) {
        String operator = OperatorFilter.operator(request);
        tokens.check(operator, session, "rows/" + operation + "/" + id + "/" + action, token);
        Operation op = operation(operation);
        OperatorActions.Outcome outcome = switch (action) {
            case "attach" -> actions.attach(operator, op, id, leaseGeneration, object, reason);
            case "mark-failed" -> actions.markFailed(operator, op, id, leaseGeneration, reason);
            case "requeue" -> actions.requeue(operator, op, id, leaseGeneration, reason);
            default -> throw new ApiException(404, "invalid_request_error", "resource_missing", "No such action: " + action, "action", null);
        };
        // Post, then redirect, then get: a reload never repeats the action. The redirect names the banner by id.
        return Response.seeOther(URI.create("/console/rows/" + op.name().toLowerCase(Locale.ROOT) + "/" + id + "?message="
                + Banners.id(outcome))).build();
    }

    @POST
    @Path("/findings/{id}/acknowledge")
    @Consumes(MediaType.APPLICATION_FORM_URLENCODED)
    @RunOnVirtualThread
    public Response acknowledge(@Context ContainerRequestContext request, @PathParam("id") long id, @FormParam("note") String note,
                                @FormParam("token") String token, @CookieParam(FormTokens.SESSION_COOKIE) String session) {
        String operator = OperatorFilter.operator(request);
        tokens.check(operator, session, "findings/" + id + "/acknowledge", token);
        OperatorActions.Outcome outcome = actions.acknowledge(operator, id, note);
        return Response.seeOther(URI.create("/console?message=" + Banners.id(outcome))).build();
    }

    /** The browser session a page is served in: the one its cookie names, or a new one its answer opens. */
    private record Session(String id, boolean opened) {
    }

    private Session session(String cookie) {
        return FormTokens.isSession(cookie) ? new Session(cookie, false) : new Session(tokens.newSession(), true);
    }

    private static Response page(String html, Session session) {
        Response.ResponseBuilder ok = Response.ok(html);
        if (session.opened()) {
            ok.header("Set-Cookie", FormTokens.sessionCookie(session.id()));
        }
        return ok.build();
    }

    /** The banner {@code ?message=} names, in the page's words; an id naming none shows none. */
    private static void banner(Map<String, Object> data, String message) {
        Optional<Banners.Banner> banner = Banners.byId(message);
        data.put("message", banner.map(Banners.Banner::text).orElse(null));
        data.put("done", banner.map(Banners.Banner::done).orElse(false));
    }

    private static Operation operation(String operation) {
        return switch (operation) {
            case "charge" -> Operation.CHARGE;
            case "refund" -> Operation.REFUND;
            default -> throw new ApiException(404, "invalid_request_error", "resource_missing", "No such operation: " + operation, "operation", null);
        };
    }
}

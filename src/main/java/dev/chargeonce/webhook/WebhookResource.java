package dev.chargeonce.webhook;

import dev.chargeonce.ratebudget.TrafficClass;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.web.ApiException;
import dev.chargeonce.web.VirtualThreadAnswers;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import org.jboss.logging.Logger;
import org.jboss.resteasy.reactive.server.Cancellable;

/**
 * {@code POST /v1/webhooks/stripe}: Stripe's events. No API key (Stripe signs instead): the signature is checked
 * over the raw body before anything else; then the event is recorded and applied in one transaction, and only then
 * acknowledged. Nothing here waits for Stripe, but a {@code charge.refunded} whose charge does not list its refunds
 * (Stripe's shape since API version 2022-11-15): they are listed at Stripe first, as the recovery's reads are, and
 * when Stripe cannot answer the delivery is a {@code 503 stripe_unavailable} with nothing recorded (Stripe delivers it
 * again, and the catch-up would find it).
 */
@Path("/v1/webhooks/stripe")
public class WebhookResource {

    private static final Logger LOG = Logger.getLogger(WebhookResource.class);
    private static final Duration STRIPE_RETRY = Duration.ofSeconds(5);

    private final WebhookSignatures signatures;
    private final StripeEventInbox inbox;
    private final Counter signatureFailures;
    private final VirtualThreadAnswers virtualThreads;

    WebhookResource(WebhookSignatures signatures, StripeEventInbox inbox, MeterRegistry metrics, VirtualThreadAnswers virtualThreads) {
        this.signatures = signatures;
        this.inbox = inbox;
        this.virtualThreads = virtualThreads;
        this.signatureFailures = metrics.counter("chargeonce.webhooks.signature.failures");
    }

    /** The body is read on the event loop; verifying and recording it runs on a virtual thread ({@link VirtualThreadAnswers}). */
    @POST
    @Consumes(MediaType.WILDCARD)
    @Produces(MediaType.APPLICATION_JSON)
    @Cancellable(false)
    public CompletionStage<Response> receive(@HeaderParam("Stripe-Signature") String signature, byte[] body) {
        return virtualThreads.answer(() -> {
            String payload = new String(body == null ? new byte[0] : body, StandardCharsets.UTF_8);
            try {
                signatures.verify(payload, signature);
            } catch (RuntimeException e) {
                signatureFailures.increment();
                throw e;
            }
            StripeEventInbox.Received received;
            try {
                received = TrafficClass.RECOVERY.call(() -> inbox.receive(payload, "webhook"));
            } catch (StripeGateway.LookupFailedException e) {
                LOG.warnf("a webhook event waits for Stripe: %s", e.getMessage());
                throw ApiException.unavailable("stripe_unavailable", "What the event leaves out could not be read from"
                        + " Stripe right now; nothing was recorded. Deliver it again.", STRIPE_RETRY);
            }
            return Response.ok("{\"received\":true,\"duplicate\":" + (received == StripeEventInbox.Received.DUPLICATE) + "}",
                    MediaType.APPLICATION_JSON_TYPE).build();
        });
    }
}

package dev.chargeonce.webhook;

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
import java.util.concurrent.CompletionStage;
import org.jboss.resteasy.reactive.server.Cancellable;

/**
 * {@code POST /v1/webhooks/stripe}: Stripe's events. No API key (Stripe signs instead): the signature is checked
 * over the raw body before anything else; then the event is recorded and applied in one transaction, and only then
 * acknowledged. Nothing here waits for Stripe.
 */
@Path("/v1/webhooks/stripe")
public class WebhookResource {

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
            StripeEventInbox.Received received = inbox.receive(payload, "webhook");
            return Response.ok("{\"received\":true,\"duplicate\":" + (received == StripeEventInbox.Received.DUPLICATE) + "}",
                    MediaType.APPLICATION_JSON_TYPE).build();
        });
    }
}

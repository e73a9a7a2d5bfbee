package dev.chargeonce.charge;

import dev.chargeonce.idempotency.AnswerLimit;
import dev.chargeonce.idempotency.Claim;
import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.idempotency.Claims;
import dev.chargeonce.idempotency.NewIntent;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.operation.Admission;
import dev.chargeonce.operation.KeyAnswer;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.operation.OperationMetrics;
import dev.chargeonce.operation.RetryLaterAnswers;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.tenant.CustomerOwnership;
import dev.chargeonce.stripe.StripeGateway;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.Optional;

/**
 * {@code POST /v1/charges}: claim the key on the primary, then drive the charge, or answer what the key holds.
 * The {@code switch} below is every answer the endpoint can give.
 */
@ApplicationScoped
public class ChargeService {

    static final String METHOD = "POST";
    static final String PATH = "/v1/charges";

    private final Claims claims;
    private final OperationDriver driver;
    private final ChargeStripeSide side;
    private final StripeConfig stripeConfig;
    private final OperationMetrics metrics;
    private final Admission admission;
    private final StripeGateway stripe;
    private final CustomerOwnership customers;
    private final AnswerLimit answerLimit;

    ChargeService(Claims claims, OperationDriver driver, ChargeStripeSide side, StripeConfig stripeConfig,
                  OperationMetrics metrics, Admission admission, StripeGateway stripe, CustomerOwnership customers,
                  AnswerLimit answerLimit) {
        this.customers = customers;
        this.answerLimit = answerLimit;
        this.claims = claims;
        this.driver = driver;
        this.side = side;
        this.stripeConfig = stripeConfig;
        this.metrics = metrics;
        this.admission = admission;
        this.stripe = stripe;
    }

    public KeyAnswer charge(String clientId, IdempotencyKey key, ChargeRequest request) {
        return charge(clientId, key, request, null).answer();
    }

    /**
     * What a charge led to: the answer, and the claim it came from; {@code claim} is null when no claim was made
     * (Stripe's circuit is open and the key had no row: nothing was stored, nothing charged).
     */
    public record Charged(KeyAnswer answer, Claim claim) {
    }

    /**
     * A charge from any ingress: the same claim, fingerprint (that of {@code POST /v1/charges} with this body),
     * Stripe key and driver as HTTP.
     *
     * @param origin where the claim comes from (null: HTTP; a Kafka command: its record), stored with a new row
     */
    public Charged charge(String clientId, IdempotencyKey key, ChargeRequest request, String origin) {
        if (request.customer() != null) {
            customers.check(clientId, request.customer()); // another client's customer is refused before any claim
        }
        String canonical = request.canonicalJson();
        NewIntent intent = new NewIntent(Operation.CHARGE, ChargeQueries.PREFIX, clientId, key, Fingerprint.of(METHOD, PATH, canonical),
                canonical, request.amount(), request.currency(), origin);
        try (Admission.Ticket ticket = admission.enter()) {
            Claim claim;
            boolean fits = answerLimit.admits(canonical);
            if (fits && stripe.acceptingCalls(Operation.CHARGE)) {
                claim = claims.claim(intent, stripeConfig.keyHorizon());
            } else {
                // Circuit open, or an answer that could exceed the stored answers' bound: answer what the key
                // already holds (a row a larger bound admitted stays replayable), but take no lease.
                Optional<Claim> existing = claims.peek(Operation.CHARGE, clientId, key, intent.fingerprint(), stripeConfig.keyHorizon());
                if (existing.isEmpty()) {
                    if (!fits) {
                        throw answerLimit.tooLarge();
                    }
                    metrics.circuitOpenRejection(Operation.CHARGE);
                    return new Charged(RetryLaterAnswers.stripeUnavailable(Operation.CHARGE, true, Duration.ofSeconds(2)), null);
                }
                claim = existing.get();
            }
            return new Charged(driver.answer(claim, side, request), claim);
        }
    }
}

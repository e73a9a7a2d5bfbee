package dev.chargeonce.charge;

import dev.chargeonce.idempotency.Claim;
import dev.chargeonce.idempotency.Fingerprint;
import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.idempotency.IdempotencyStore;
import dev.chargeonce.idempotency.NewIntent;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.security.SecureRandom;
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

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final char[] ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".toCharArray();

    private final IdempotencyStore store;
    private final ChargeDriver driver;
    private final StripeConfig stripeConfig;
    private final ChargeMetrics metrics;
    private final ChargeAdmission admission;
    private final StripeGateway stripe;

    ChargeService(IdempotencyStore store, ChargeDriver driver, StripeConfig stripeConfig, ChargeMetrics metrics,
                  ChargeAdmission admission, StripeGateway stripe) {
        this.store = store;
        this.driver = driver;
        this.stripeConfig = stripeConfig;
        this.metrics = metrics;
        this.admission = admission;
        this.stripe = stripe;
    }

    public ChargeAnswer charge(String clientId, IdempotencyKey key, ChargeRequest request) {
        String canonical = request.canonicalJson();
        NewIntent intent = new NewIntent(newChargeId(), clientId, key, Fingerprint.of(METHOD, PATH, canonical), canonical,
                request.amount(), request.currency(), dev.chargeonce.stripe.StripeKeys.identity(clientId, key.value()));
        try (ChargeAdmission.Ticket ticket = admission.enter()) {
            Claim claim;
            if (stripe.acceptingCalls()) {
                claim = store.claim(intent, stripeConfig.keyHorizon());
            } else {
                // Circuit open: answer what the key already holds, but take no lease for a call we will not make.
                Optional<Claim> existing = store.peek(clientId, key, intent.fingerprint(), stripeConfig.keyHorizon());
                if (existing.isEmpty()) {
                    metrics.circuitOpenRejection();
                    return ChargeResponses.stripeUnavailable(true, Duration.ofSeconds(2));
                }
                claim = existing.get();
            }
            return switch (claim) {
                case Claim.Fresh fresh -> driver.drive(fresh.intent(), request);
                case Claim.TakenOver takenOver -> {
                    metrics.takeover();
                    yield driver.drive(takenOver.intent(), request);
                }
                case Claim.Replay replay -> {
                    metrics.replay();
                    yield ChargeAnswer.replay(replay.answer());
                }
                case Claim.InFlight inFlight -> {
                    metrics.conflict();
                    yield ChargeResponses.inFlight(inFlight.retryAfter());
                }
                case Claim.Mismatch mismatch -> {
                    metrics.mismatch();
                    throw new ApiException(422, "idempotency_error", "idempotency_key_reused",
                            "This Idempotency-Key was already used with a different request. Use a new key for a new payment.",
                            IdempotencyKey.HEADER, null);
                }
                case Claim.UnderReconciliation parked -> ChargeResponses.underReconciliation();
                case Claim.Unheld unheld -> {
                    // Circuit open and the key's earlier tries may have reached Stripe: say nothing about charges.
                    metrics.circuitOpenRejection();
                    yield ChargeResponses.stripeUnavailable(false, Duration.ofSeconds(2));
                }
            };
        }
    }

    static String newChargeId() {
        StringBuilder id = new StringBuilder("chg_");
        for (int i = 0; i < 24; i++) {
            id.append(ALPHABET[RANDOM.nextInt(ALPHABET.length)]);
        }
        return id.toString();
    }
}

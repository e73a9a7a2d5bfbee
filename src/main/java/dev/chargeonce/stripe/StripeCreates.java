package dev.chargeonce.stripe;

import com.stripe.exception.StripeException;
import com.stripe.param.PaymentIntentCreateParams;
import com.stripe.param.RefundCreateParams;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;

/**
 * The calls that create at Stripe: a PaymentIntent created and confirmed, a refund. Each builds Stripe's request from
 * the order, sends it through {@link StripeApi} (tries, retries, circuit, lease) and classifies the whole sequence of
 * tries together ({@link StripeOutcomes#ofFailure}); each is timed, and the recent durations kept.
 */
final class StripeCreates {

    private final StripeApi api;
    private final Timer createLatency;
    private final Timer refundLatency;
    private final RecentDurations recentCalls = new RecentDurations(256);

    StripeCreates(StripeApi api, MeterRegistry metrics) {
        this.api = api;
        this.createLatency = Timer.builder("chargeonce.stripe.call").tag("call", "create")
                .description("Stripe create-and-confirm, fault-tolerance retries included")
                .publishPercentileHistogram().register(metrics);
        this.refundLatency = Timer.builder("chargeonce.stripe.call").tag("call", "refund")
                .description("Stripe refund create, fault-tolerance retries included")
                .publishPercentileHistogram().register(metrics);
    }

    /** See {@link StripeGateway#createAndConfirm}. */
    StripeCall createAndConfirm(PaymentOrder order) {
        PaymentIntentCreateParams.Builder params = PaymentIntentCreateParams.builder()
                .setAmount(order.amount())
                .setCurrency(order.currency())
                .setPaymentMethod(order.paymentMethod())
                .setConfirm(true)
                .setAutomaticPaymentMethods(PaymentIntentCreateParams.AutomaticPaymentMethods.builder()
                        .setEnabled(true)
                        .setAllowRedirects(PaymentIntentCreateParams.AutomaticPaymentMethods.AllowRedirects.NEVER)
                        .build())
                .putAllMetadata(order.metadata())
                .putMetadata(PaymentOrder.KEY, order.identity())
                .putMetadata(PaymentOrder.CLIENT_ID, order.clientId())
                .putMetadata(PaymentOrder.ATTEMPT, Integer.toString(order.attempt()));
        if (order.requestFingerprint() != null) {
            params.putMetadata(PaymentOrder.REQUEST, order.requestFingerprint());
        }
        if (order.customer() != null) {
            params.setCustomer(order.customer());
        }
        if (order.description() != null) {
            params.setDescription(order.description());
        }
        return call(createLatency, log -> StripeOutcomes.ofPaymentIntent(api.create(params.build(),
                order.stripeIdempotencyKey(), order.sendBefore(), log)));
    }

    /** See {@link StripeGateway#createRefund}. */
    StripeCall createRefund(RefundOrder order) {
        RefundCreateParams.Builder params = RefundCreateParams.builder()
                .setPaymentIntent(order.paymentIntentId())
                .setAmount(order.amount())
                .putAllMetadata(order.metadata())
                .putMetadata(PaymentOrder.KEY, order.identity())
                .putMetadata(PaymentOrder.CLIENT_ID, order.clientId())
                .putMetadata(PaymentOrder.ATTEMPT, Integer.toString(order.attempt()));
        if (order.reason() != null) {
            params.setReason(switch (order.reason()) {
                case "duplicate" -> RefundCreateParams.Reason.DUPLICATE;
                case "fraudulent" -> RefundCreateParams.Reason.FRAUDULENT;
                default -> RefundCreateParams.Reason.REQUESTED_BY_CUSTOMER;
            });
        }
        return call(refundLatency, log -> StripeOutcomes.ofRefund(api.createRefund(params.build(),
                order.stripeIdempotencyKey(), order.sendBefore(), log)));
    }

    /** See {@link StripeGateway#recentCallDuration}. */
    Optional<Duration> recentCallDuration(double q) {
        return recentCalls.quantile(q);
    }

    /** What a call's request did, given the call's log; throws what each try proved (see {@link StripeApi}). */
    @FunctionalInterface
    private interface Request {
        StripeOutcome send(SendLog log) throws StripeException;
    }

    /** One call, all its tries classified together: {@link StripeOutcome.NotSent} only when no try can have run. */
    private StripeCall call(Timer latency, Request request) {
        SendLog log = new SendLog();
        Timer.Sample sample = Timer.start();
        StripeOutcome outcome;
        try {
            outcome = request.send(log);
        } catch (StripeException | RuntimeException e) {
            outcome = StripeOutcomes.ofFailure(e, log);
        } finally {
            recentCalls.record(sample.stop(latency));
        }
        long sinceNanos = log.sinceLastPossibleExecutionNanos();
        return new StripeCall(outcome, sinceNanos < 0 ? null : Duration.ofNanos(sinceNanos), log.tries());
    }

    /** The last {@code size} durations, in a ring; quantiles over them on demand (a 409 is rare enough). */
    static final class RecentDurations {
        private final long[] nanos;
        private int next;
        private int filled;

        RecentDurations(int size) {
            this.nanos = new long[size];
        }

        synchronized void record(long durationNanos) {
            nanos[next] = durationNanos;
            next = (next + 1) % nanos.length;
            filled = Math.min(filled + 1, nanos.length);
        }

        synchronized Optional<Duration> quantile(double q) {
            if (filled == 0) {
                return Optional.empty();
            }
            long[] sorted = Arrays.copyOf(nanos, filled);
            Arrays.sort(sorted);
            int index = (int) Math.min(filled - 1, Math.ceil(q * filled) - 1);
            return Optional.of(Duration.ofNanos(sorted[Math.max(0, index)]));
        }
    }
}

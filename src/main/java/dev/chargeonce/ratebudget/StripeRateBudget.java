package dev.chargeonce.ratebudget;

import dev.chargeonce.idempotency.KeyIdentities;
import io.agroal.api.AgroalDataSource;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Default;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * Stripe's rate limits as one budget for every instance on the account: before a request to Stripe the service
 * takes a permit, waiting for one within its deadline; a request that cannot have one in time is refused with the
 * time one will be free. The schedules live in PostgreSQL ({@link Schedule}, V1.18.0); each instance books permits
 * in batches ({@link LocalSlots}), so a steady flow costs one statement per batch, not one per request.
 *
 * <p>Classes ({@link TrafficClass}): each owns a share of the endpoint's rate and waits only for its own; before
 * waiting, it borrows a permit the other classes leave idle now. So background work takes what the foreground leaves
 * and keeps its floor, and a burst of charges is not slowed by a reconciliation that has nothing to do.
 *
 * <p>Stripe's {@code 429} ({@link #rateLimited}) lowers the endpoint's rate for every instance (multiplicative
 * decrease), which climbs back by itself (additive increase).
 */
@ApplicationScoped
public class StripeRateBudget {

    private static final Logger LOG = Logger.getLogger(StripeRateBudget.class);

    /** What a request for a permit came to. */
    public record Grant(boolean granted, Duration waited, Duration retryAfter) {

        static final Grant NOW = new Grant(true, Duration.ZERO, Duration.ZERO);

        static Grant after(long waitedNanos) {
            return new Grant(true, Duration.ofNanos(Math.max(0, waitedNanos)), Duration.ZERO);
        }

        static Grant refused(Duration retryAfter) {
            return new Grant(false, Duration.ZERO, retryAfter);
        }
    }

    private final BudgetConfig config;
    private final boolean enabled;
    private final Schedule schedule;
    private final MeterRegistry metrics;
    private final long toleranceNanos;
    private final Map<Schedule.Key, LocalSlots> slots = new ConcurrentHashMap<>();
    private final Map<Schedule.Key, AtomicLong> ratesSeen = new ConcurrentHashMap<>();
    /** Every schedule's key, made once at start-up (in the constructor: no race). */
    private final Schedule.Key[][] keys = new Schedule.Key[Endpoint.values().length][TrafficClass.values().length];
    /** Looked up once per schedule: a meter's lookup by name and tags on every permit costs more than the permit. */
    private final Map<Schedule.Key, Meters> meters = new ConcurrentHashMap<>();

    private record Meters(Counter permits, Timer waits, Counter refusals) {
    }

    /** Slots closer than this are not slept for: Stripe counts per second, and a park costs more than it spaces. */
    private static final long SHORTEST_SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

    @jakarta.inject.Inject
    StripeRateBudget(BudgetConfig config, @Default AgroalDataSource primary, KeyIdentities identities, MeterRegistry metrics) {
        this(config, primary, metrics, config.enabled() && !identities.schemaHeldBeforeKeysErased());
    }

    /** An instance of its own on {@code primary}: what a second pod is, in a test. */
    StripeRateBudget(BudgetConfig config, javax.sql.DataSource primary, MeterRegistry metrics, boolean enabled) {
        this.config = config;
        // While an upgrade holds the schema before V1.18.0 the table may be missing: no budget, as before it.
        this.enabled = enabled;
        this.schedule = new Schedule(primary, config.increasePerSecond());
        this.metrics = metrics;
        this.toleranceNanos = config.tolerance().toNanos();
        // Every key made here, once (and every rate and share checked): key() only reads them after this.
        for (Endpoint endpoint : Endpoint.values()) {
            for (TrafficClass c : TrafficClass.values()) {
                key(endpoint, c);
            }
        }
        checkUnderGlobalRate();
    }

    private StripeRateBudget(MeterRegistry metrics) {
        this.config = null;
        this.enabled = false;
        this.schedule = null;
        this.metrics = metrics;
        this.toleranceNanos = 0;
    }

    /** A budget that grants every permit at once (and counts Stripe's 429s): for code tested without a database. */
    public static StripeRateBudget disabled(MeterRegistry metrics) {
        return new StripeRateBudget(metrics);
    }

    void createSchedules(@Observes StartupEvent event) {
        if (enabled) {
            createSchedules();
        }
    }

    void createSchedules() {
        for (Endpoint endpoint : Endpoint.values()) {
            for (TrafficClass c : TrafficClass.values()) {
                schedule.ensure(key(endpoint, c), rate(endpoint) * share(c));
            }
        }
    }

    public boolean enabled() {
        return enabled;
    }

    /** How long a client's request may wait for a permit. */
    public Duration maxWait() {
        return enabled ? config.maxWait() : Duration.ZERO;
    }

    /**
     * A permit for one request to {@code endpoint}, for the running code's class ({@link TrafficClass#current()}),
     * waited for until {@code deadlineNanos} ({@link System#nanoTime()}) at the latest: granted once the request may
     * be sent (the wait is over), or refused with when one will be free. Holds no database connection while waiting.
     */
    public Grant await(Endpoint endpoint, long deadlineNanos) {
        if (!enabled) {
            return Grant.NOW;
        }
        TrafficClass trafficClass = TrafficClass.current();
        Schedule.Key own = key(endpoint, trafficClass);
        LocalSlots pool = slots.computeIfAbsent(own, k -> new LocalSlots(config.batchPeriod().toNanos()));
        long started = System.nanoTime();
        // A slot up to the tolerance after the deadline is as good: that is how late any slot may be used.
        long latest = deadlineNanos + toleranceNanos;
        // Counted among the waiting (the next booking's size) until it holds a slot of its own.
        pool.enter();
        boolean waiting = true;
        try {
            Long slot = pool.take(System.nanoTime(), toleranceNanos, latest);
            if (slot == null) {
                if (!pool.booking.tryLock(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    return refused(own, toleranceNanos);
                }
                try {
                    // Another request may have booked for this one while it waited for the booking lock; else one
                    // booking, and no more: a slot it booked that is past this request's deadline stays for others.
                    slot = pool.take(System.nanoTime(), toleranceNanos, latest);
                    if (slot == null) {
                        Grant refusal = book(own, pool, deadlineNanos);
                        if (refusal != null) {
                            return refusal;
                        }
                        slot = pool.take(System.nanoTime(), toleranceNanos, latest);
                        if (slot == null) {
                            return refused(own, toleranceNanos);
                        }
                    }
                } finally {
                    pool.booking.unlock();
                }
            }
            pool.leave();
            waiting = false;
            refillAhead(own, pool);
            return granted(own, started, slot);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return refused(own, toleranceNanos);
        } finally {
            if (waiting) {
                pool.leave();
            }
        }
    }

    /**
     * Books permits into {@code pool}: its own schedule's if one is free now; else one from the other class whose
     * schedule is free soonest, no further ahead than that class's next slot ({@link Schedule#borrow}: so a class
     * alone has the whole rate the others leave idle, and takes nothing from one whose requests wait in line); else
     * its own in line until the deadline. Null when some were booked; the refusal otherwise.
     */
    private Grant book(Schedule.Key own, LocalSlots pool, long deadlineNanos) {
        int batch = pool.batchSize(maxBatch(own));
        boolean freeNow = bookInto(own, pool, batch, toleranceNanos);
        pool.inLine(!freeNow);
        if (freeNow) {
            return null;
        }
        long maxAhead = Math.max(0, deadlineNanos - System.nanoTime());
        Schedule.Borrowing borrowed = schedule.borrow(own, TimeUnit.NANOSECONDS.toMicros(maxAhead),
                TimeUnit.NANOSECONDS.toMicros(toleranceNanos));
        if (borrowed.lender() != null) {
            seen(key(own.endpoint(), borrowed.lender()), borrowed.booking());
        }
        if (borrowed.booking().granted()) {
            add(pool, borrowed.booking(), 1);
            return null;
        }
        maxAhead = Math.max(0, deadlineNanos - System.nanoTime());
        Schedule.Booking inLine = schedule.book(own, batch, TimeUnit.NANOSECONDS.toMicros(maxAhead));
        seen(own, inLine);
        if (inLine.granted()) {
            add(pool, inLine, batch);
            return null;
        }
        return refused(own, TimeUnit.MICROSECONDS.toNanos(inLine.aheadMicros()) - maxAhead);
    }

    private boolean bookInto(Schedule.Key key, LocalSlots pool, int count, long maxAheadNanos) {
        Schedule.Booking booking = schedule.book(key, count, TimeUnit.NANOSECONDS.toMicros(maxAheadNanos));
        seen(key, booking);
        if (booking.granted()) {
            add(pool, booking, count);
        }
        return booking.granted();
    }

    /**
     * The booked slots in this instance's clock: counted from after the statement answered, so that a slot is never
     * earlier here than on the database's clock (a later send only spaces requests further).
     */
    private static void add(LocalSlots pool, Schedule.Booking booking, int count) {
        long answered = System.nanoTime();
        pool.add(answered + TimeUnit.MICROSECONDS.toNanos(booking.aheadMicros()),
                TimeUnit.MICROSECONDS.toNanos(booking.intervalMicros()), count);
    }

    /** At most one batch period of the schedule's rate, at least one. */
    private int maxBatch(Schedule.Key key) {
        double rate = Double.longBitsToDouble(ratesSeen.get(key).get());
        return (int) Math.max(1, Math.floor(rate * config.batchPeriod().toNanos() / 1e9));
    }

    /**
     * When this request took one of the last slots of a steady flow, or the slots left are about to be dropped, the
     * next batch is booked now, on a thread of its own, so that the requests to come find slots instead of each
     * booking on its way to Stripe. Only a batch free now (the schedule not booked ahead): one booked in line is for
     * requests that wait, and they book it themselves (so nothing is booked ahead while the last booking found the
     * schedule booked ahead: at the rate, such a statement would find nothing).
     */
    private void refillAhead(Schedule.Key own, LocalSlots pool) {
        int batch = pool.batchSize(maxBatch(own));
        if (batch < 2 || pool.inLine() || !pool.runningOut(System.nanoTime(), toleranceNanos, batch) || !pool.startRefill()) {
            return;
        }
        Thread.startVirtualThread(() -> {
            try {
                if (pool.booking.tryLock()) {
                    try {
                        bookInto(own, pool, batch, toleranceNanos);
                    } finally {
                        pool.booking.unlock();
                    }
                }
            } catch (RuntimeException e) {
                LOG.debugf("booking ahead failed (the next request books): %s", e.getMessage());
            } finally {
                pool.refillDone();
            }
        });
    }

    private Grant granted(Schedule.Key key, long started, long slot) throws InterruptedException {
        long sleep = slot - System.nanoTime();
        if (sleep > SHORTEST_SLEEP_NANOS) {
            TimeUnit.NANOSECONDS.sleep(sleep);
        }
        long waited = System.nanoTime() - started;
        Meters meters = meters(key);
        meters.permits().increment();
        meters.waits().record(waited, TimeUnit.NANOSECONDS);
        return Grant.after(waited);
    }

    private Meters meters(Schedule.Key key) {
        return meters.computeIfAbsent(key, k -> new Meters(
                metrics.counter("chargeonce.stripe.budget.permits", "endpoint", k.endpoint().id(), "class", k.trafficClass().id()),
                Timer.builder("chargeonce.stripe.budget.wait").tag("endpoint", k.endpoint().id())
                        .tag("class", k.trafficClass().id()).description("Time a Stripe request waited for its permit")
                        .publishPercentileHistogram().register(metrics),
                metrics.counter("chargeonce.stripe.budget.refusals", "endpoint", k.endpoint().id(), "class", k.trafficClass().id())));
    }

    private Grant refused(Schedule.Key key, long untilFreeNanos) {
        meters(key).refusals().increment();
        // Whole seconds, as Retry-After says them; never 0, which a client would read as "at once".
        long seconds = Math.max(1, (long) Math.ceil(Math.max(0, untilFreeNanos) / 1e9));
        return Grant.refused(Duration.ofSeconds(seconds));
    }

    /**
     * Stripe answered {@code 429} all the same: the endpoint's rate drops for every instance ({@code reason} is
     * Stripe's {@code Stripe-Rate-Limited-Reason} header, null when absent). A concurrency limit says nothing about
     * the rate, and is only counted.
     */
    public void rateLimited(Endpoint endpoint, String reason) {
        String why = reason == null || reason.isBlank() ? "unstated" : reason;
        rateLimitedCounter(endpoint, why).increment();
        if (!enabled || why.endsWith("concurrency")) {
            return;
        }
        try {
            if (schedule.decrease(config.account(), endpoint, config.decreaseFactor(), config.minimumRate(),
                    config.decreaseCooldown().toNanos() / 1000)) {
                LOG.warnf("Stripe answered 429 (%s) on %s: its rate is lowered for every instance and climbs back by %s/s each second",
                        why, endpoint.id(), config.increasePerSecond());
            }
        } catch (RuntimeException e) {
            LOG.warnf("the rate of %s could not be lowered after Stripe's 429: %s", endpoint.id(), e.getMessage());
        }
    }

    /** Every schedule of the account as it stands now (the console shows them). */
    public List<Standing> standings() {
        return enabled ? schedule.standings(config.account()) : List.of();
    }

    private Counter rateLimitedCounter(Endpoint endpoint, String reason) {
        return metrics.counter("chargeonce.stripe.rate.limited", "endpoint", endpoint.id(), "reason", reason);
    }

    private void seen(Schedule.Key key, Schedule.Booking booking) {
        ratesSeen.get(key).set(Double.doubleToLongBits(booking.rate()));
    }

    private Schedule.Key key(Endpoint endpoint, TrafficClass trafficClass) {
        Schedule.Key key = keys[endpoint.ordinal()][trafficClass.ordinal()];
        if (key != null) {
            return key;
        }
        key = new Schedule.Key(config.account(), endpoint, trafficClass);
        AtomicLong rate = new AtomicLong(Double.doubleToLongBits(rate(endpoint) * share(trafficClass)));
        ratesSeen.put(key, rate);
        metrics.gauge("chargeonce.stripe.budget.rate", io.micrometer.core.instrument.Tags.of("endpoint", endpoint.id(),
                "class", trafficClass.id()), rate, r -> Double.longBitsToDouble(r.get()));
        keys[endpoint.ordinal()][trafficClass.ordinal()] = key;
        return key;
    }

    private double rate(Endpoint endpoint) {
        Double rate = config.rates().get(endpoint.id());
        if (rate == null || rate <= 0) {
            throw new IllegalStateException("chargeonce.stripe.budget.rates.\"" + endpoint.id()
                    + "\" must be a positive number of requests per second");
        }
        return rate;
    }

    /** The endpoints' rates are a partition of the account's: together they must fit under it. */
    private void checkUnderGlobalRate() {
        double sum = 0;
        for (Endpoint endpoint : Endpoint.values()) {
            sum += rate(endpoint);
        }
        if (sum > config.globalRate()) {
            throw new IllegalStateException("the endpoints' rates (chargeonce.stripe.budget.rates.*) add up to " + sum
                    + " a second, over the account's chargeonce.stripe.budget.global-rate (" + config.globalRate()
                    + "): Stripe would refuse what the budget allows. Lower a rate or, once Stripe has raised the"
                    + " account's limit, raise global-rate");
        }
    }

    private double share(TrafficClass trafficClass) {
        Double share = config.shares().get(trafficClass.id());
        if (share == null || share <= 0 || share > 1) {
            throw new IllegalStateException("chargeonce.stripe.budget.shares.\"" + trafficClass.id()
                    + "\" must be a share of the rate, above 0 and at most 1");
        }
        return share;
    }
}

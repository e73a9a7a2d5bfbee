package dev.chargeonce.ratebudget;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.testing.TestPostgres;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The shared budget on a real PostgreSQL, with two instances of it standing for two pods: together they never send
 * more than the rate allows in any one second, a request that cannot wait is told when to come back, background work
 * keeps its floor and takes no more from a busy foreground, and Stripe's 429 lowers the rate for both.
 */
class StripeRateBudgetTest {

    private PGSimpleDataSource database;

    @BeforeEach
    void freshDatabase() throws Exception {
        String name = TestPostgres.newDatabase("budget");
        database = new PGSimpleDataSource();
        database.setUrl(TestPostgres.jdbcUrl(TestPostgres.port(), name));
        database.setUser("postgres");
        database.setPassword("postgres");
        try (InputStream in = getClass().getResourceAsStream("/db/migration/V1.18.0__stripe_rate_budget.sql");
             Connection c = database.getConnection(); Statement s = c.createStatement()) {
            s.execute(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    @Test
    void twoInstancesTogetherNeverSendMoreThanTheRateInAnyOneSecond() throws Exception {
        StripeRateBudget a = budget(20);
        StripeRateBudget b = budget(20);
        List<Long> granted = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger refused = new AtomicInteger();
        long end = System.nanoTime() + Duration.ofSeconds(4).toNanos();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            // 48 senders that each ask again at once: a line of 48 against 20 a second is 2.4 s long, past their 2 s.
            for (int i = 0; i < 48; i++) {
                StripeRateBudget instance = i % 2 == 0 ? a : b;
                threads.submit(() -> {
                    while (System.nanoTime() < end) {
                        StripeRateBudget.Grant grant = instance.await(Endpoint.PAYMENT_INTENTS_CREATE,
                                System.nanoTime() + Duration.ofSeconds(2).toNanos());
                        if (grant.granted()) {
                            granted.add(System.nanoTime());
                        } else {
                            refused.incrementAndGet();
                        }
                    }
                    return null;
                });
            }
        }
        List<Long> times = new ArrayList<>(granted);
        Collections.sort(times);
        int most = mostInAnyWindow(times, Duration.ofSeconds(1).toNanos());
        // Each schedule: its rate over the second and the tolerance (a slot may be used up to 100 ms late), plus one
        // for where a window's edge falls: 16 + 2.4 + 1.6 (the foreground borrowing the idle classes) over 1.1 s, +3.
        // A thread that records its permit late can only make this look worse than what was sent.
        assertTrue(most <= 24, "at most the rate in any one second (and its tolerance), was " + most);
        // Four seconds at 20 a second, the foreground borrowing what the idle classes leave (all of it, less a batch).
        assertTrue(times.size() >= 70, "the whole rate is used, " + times.size() + " permits in 4 s");
        assertTrue(refused.get() > 0, "48 senders against 20 a second: some would wait past their 2 s, and are told so");
    }

    @Test
    void aRequestThatCannotHaveAPermitInTimeIsToldWhenOneWillBeFree() throws Exception {
        // Half a permit a second: the foreground's own schedule has one every 2.5 s.
        StripeRateBudget budget = budget(0.5);
        assertTrue(budget.await(Endpoint.PAYMENT_INTENTS_CREATE, System.nanoTime()).granted(), "the first is free at once");
        // The foreground's own schedule is booked now; it borrows the idle classes' permits, one each, then none.
        StripeRateBudget.Grant refused = null;
        for (int i = 0; i < 3 && (refused == null || refused.granted()); i++) {
            refused = budget.await(Endpoint.PAYMENT_INTENTS_CREATE, System.nanoTime());
        }
        assertFalse(refused.granted(), "the next is up to 2.5 s away, and this one cannot wait");
        assertTrue(refused.retryAfter().compareTo(Duration.ofSeconds(1)) >= 0
                && refused.retryAfter().compareTo(Duration.ofSeconds(3)) <= 0, "when the next is free: " + refused);
        Thread.sleep(refused.retryAfter().toMillis());
        assertTrue(budget.await(Endpoint.PAYMENT_INTENTS_CREATE, System.nanoTime()).granted(), "free after Retry-After");

        StripeRateBudget.Grant waited = budget.await(Endpoint.PAYMENT_INTENTS_CREATE, System.nanoTime() + Duration.ofSeconds(5).toNanos());
        assertTrue(waited.granted() && waited.waited().toMillis() >= 300, "one that may wait is smoothed: " + waited);
    }

    @Test
    void aRequestWhoseDeadlineHasPassedIsAnsweredAtOnceAndBooksNothingMore() {
        StripeRateBudget budget = budget(1000);
        long started = System.nanoTime();
        StripeRateBudget.Grant late = budget.await(Endpoint.PAYMENT_INTENTS_CREATE, System.nanoTime() - Duration.ofSeconds(1).toNanos());
        // A permit free now waits for nothing, so it is granted even past the deadline; none is waited for.
        assertTrue(System.nanoTime() - started < Duration.ofSeconds(2).toNanos(), "answered at once, not booking on and on");
        assertTrue(!late.granted() || late.waited().toMillis() < 1000, "nothing waited for past the deadline: " + late);
        assertTrue(budget.await(Endpoint.PAYMENT_INTENTS_CREATE, System.nanoTime()).granted(), "the next one is served");
    }

    @Test
    void backgroundWorkKeepsItsFloorAndTakesNothingFromABusyForeground() throws Exception {
        StripeRateBudget budget = budget(10);
        AtomicInteger foreground = new AtomicInteger();
        AtomicInteger upkeep = new AtomicInteger();
        long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 16; i++) {
                threads.submit(() -> {
                    while (System.nanoTime() < end) {
                        if (budget.await(Endpoint.PAYMENT_INTENTS_CREATE, System.nanoTime() + Duration.ofSeconds(1).toNanos()).granted()
                                && System.nanoTime() <= end) {
                            foreground.incrementAndGet();
                        }
                    }
                });
            }
            threads.submit(() -> TrafficClass.UPKEEP.run(() -> {
                // Once the foreground is busy: its schedule booked ahead by its own requests in line.
                sleepQuietly(Duration.ofMillis(500));
                while (System.nanoTime() < end) {
                    // Counted when the permit's time is within the 5 s (a wait may end after them).
                    if (budget.await(Endpoint.PAYMENT_INTENTS_CREATE, System.nanoTime() + Duration.ofSeconds(3).toNanos()).granted()
                            && System.nanoTime() <= end) {
                        upkeep.incrementAndGet();
                    }
                }
            }));
        }
        // Upkeep's floor is 8% of 10 a second: 0.8 a second, 4 in 5 s (3.6 in the 4.5 s it asks).
        assertTrue(upkeep.get() >= 2, "background work never starves: " + upkeep.get());
        // It may borrow what recovery leaves idle (1.2 a second, 6 in 5 s, which the foreground borrows too), never
        // the busy foreground's own 8 a second: at most 4 + 6, and one for each window's edge.
        assertTrue(upkeep.get() <= 12, "nothing is taken from a busy foreground: " + upkeep.get());
        assertTrue(foreground.get() > 2 * upkeep.get(), "the foreground first: " + foreground.get() + " against " + upkeep.get());

        // With the foreground idle, upkeep borrows its share too.
        AtomicInteger alone = new AtomicInteger();
        long until = System.nanoTime() + Duration.ofSeconds(2).toNanos();
        TrafficClass.UPKEEP.run(() -> {
            while (System.nanoTime() < until) {
                if (budget.await(Endpoint.PAYMENT_INTENTS_CREATE, System.nanoTime() + Duration.ofSeconds(2).toNanos()).granted()) {
                    alone.incrementAndGet();
                }
            }
        });
        assertTrue(alone.get() >= 8, "alone, background work uses what the foreground leaves idle: " + alone.get());
    }

    @Test
    void backgroundWorkAloneUsesTheWholeRateTheOtherClassesLeaveIdle() throws Exception {
        // A reconciliation reading page after page while no charge is made: 4 a second for the endpoint, of which
        // upkeep's own share is 0.32. The foreground's and recovery's slots are idle: it may have them all.
        StripeRateBudget budget = budget(4);
        AtomicInteger granted = new AtomicInteger();
        long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        TrafficClass.UPKEEP.run(() -> {
            while (System.nanoTime() < end) {
                if (budget.await(Endpoint.READS, System.nanoTime() + Duration.ofSeconds(5).toNanos()).granted()
                        && System.nanoTime() <= end) {
                    granted.incrementAndGet();
                }
            }
        });
        // 20 in 5 s at the whole rate; 80% of it, for the first bookings and a busy machine. Its own share alone would
        // be 2.
        assertTrue(granted.get() >= 16, "alone, background work has the whole rate: " + granted.get() + " in 5 s of 20");
    }

    @Test
    void stripesTooManyRequestsLowersTheRateForEveryInstanceAndItClimbsBack() throws Exception {
        StripeRateBudget a = budget(20);
        StripeRateBudget b = budget(20);
        long decreased = System.nanoTime();
        a.rateLimited(Endpoint.PAYMENT_INTENTS_CREATE, "endpoint-rate");
        double lowered = rate(b, TrafficClass.FOREGROUND);
        // Halved, then climbing back by one a second each second: read a moment later on a busy machine.
        double since = (System.nanoTime() - decreased) / 1e9;
        assertTrue(lowered >= 7.9 && lowered <= 8.1 + since, "16 a second halved, seen by the other instance: " + lowered);
        b.rateLimited(Endpoint.PAYMENT_INTENTS_CREATE, "endpoint-rate");
        assertTrue(rate(a, TrafficClass.FOREGROUND) >= 7.9, "a burst of 429s within the cooldown is one signal");
        a.rateLimited(Endpoint.PAYMENT_INTENTS_CREATE, "global-concurrency");
        assertTrue(rate(a, TrafficClass.FOREGROUND) >= 7.9, "a concurrency limit says nothing about the rate");
        Thread.sleep(1500);
        assertTrue(rate(a, TrafficClass.FOREGROUND) > lowered + 1, "it climbs back, a permit a second each second");
    }

    private static double rate(StripeRateBudget budget, TrafficClass trafficClass) {
        return budget.standings().stream().filter(s -> s.endpoint().equals(Endpoint.PAYMENT_INTENTS_CREATE.id())
                && s.trafficClass().equals(trafficClass.id())).findFirst().orElseThrow().rate();
    }

    private static int mostInAnyWindow(List<Long> sorted, long windowNanos) {
        int most = 0;
        int start = 0;
        for (int end = 0; end < sorted.size(); end++) {
            while (sorted.get(end) - sorted.get(start) >= windowNanos) {
                start++;
            }
            most = Math.max(most, end - start + 1);
        }
        return most;
    }

    private static void sleepQuietly(Duration duration) {
        try {
            Thread.sleep(duration);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private StripeRateBudget budget(double rate) {
        StripeRateBudget budget = new StripeRateBudget(config(rate), database, new SimpleMeterRegistry(), true);
        budget.createSchedules();
        return budget;
    }

    @Test
    void endpointRatesThatAddUpToMoreThanTheAccountsAreRefusedAtStartUp() {
        // Three endpoints at 20 a second are 60: over a Stripe sandbox's 25 a second for the whole account.
        IllegalStateException refused = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> new StripeRateBudget(config(20, 20), database, new SimpleMeterRegistry(), true));
        assertTrue(refused.getMessage().contains("add up to 60.0") && refused.getMessage().contains("global-rate (20.0)"),
                refused.getMessage());
        new StripeRateBudget(config(20, 60), database, new SimpleMeterRegistry(), true);
    }

    private static BudgetConfig config(double rate) {
        return config(rate, 3 * rate);
    }

    private static BudgetConfig config(double rate, double globalRate) {
        return new BudgetConfig() {
            public boolean enabled() { return true; }
            public String account() { return "acct_test"; }
            public Map<String, Double> rates() { return Map.of("payment_intents.create", rate, "refunds.create", rate, "reads", rate); }
            public double globalRate() { return globalRate; }
            public Map<String, Double> shares() { return Map.of("foreground", 0.8, "recovery", 0.12, "upkeep", 0.08); }
            public Duration maxWait() { return Duration.ofSeconds(5); }
            public Duration tolerance() { return Duration.ofMillis(100); }
            public Duration batchPeriod() { return Duration.ofMillis(250); }
            public double decreaseFactor() { return 0.5; }
            public Duration decreaseCooldown() { return Duration.ofSeconds(5); }
            public double increasePerSecond() { return 1.0; }
            public double minimumRate() { return 1.0; }
        };
    }
}

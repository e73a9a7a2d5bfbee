package dev.chargeonce.reconcile;

import dev.chargeonce.ratebudget.TrafficClass;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.OperatorRows;
import dev.chargeonce.idempotency.Operation;
import dev.chargeonce.idempotency.RowView;
import dev.chargeonce.operation.OperationDriver;
import dev.chargeonce.recovery.RecoveryConfig;
import dev.chargeonce.stripe.StripeConfig;
import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.stripe.StripeGateway.RecordPage;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.quarkus.scheduler.Scheduled;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * Compares what this service holds with Stripe's own records, window by window, and records every difference as
 * a {@link Finding} once. Scheduled on every instance; one runs it at a time, under the job's lease on the primary.
 * A run is resumable: after every page it writes its phase and cursor (fenced by the lease), so a run that a
 * {@code kill -9} stopped goes on from there under the next holder, and the findings it records again are the same
 * findings (recorded once). Costs are bounded: pages per pass, pages per run, Stripe reads per second, and a
 * doubling back-off on {@code 429}. It reads Stripe's lists (consistent), never its search (which lags), and never
 * writes to Stripe.
 *
 * <p>The phases of a run over {@code [from, to)}:
 * <ol>
 *   <li>{@code payment_intents}: Stripe's PaymentIntents created in the window (widened by the clock skew), each
 *       held against the rows that name it or carry its key's identity: unknown, unrecorded, duplicate, different;
 *       one with none of the service's metadata that no row names was made outside it (Stripe's Dashboard).</li>
 *   <li>{@code charges}: our charges answered in the window that Stripe did not show in phase 1, each retrieved by
 *       id: missing or different; and for charges with refunds, their total against Stripe's refunds.</li>
 *   <li>{@code refunds} and {@code refund_rows}: the same for refunds; a refund made outside the service on one of
 *       its charges is recorded against the charge ({@link OutsideObjects}).</li>
 *   <li>{@code rows}: rows parked for an operator, or processing for too long (the job resolves these findings
 *       itself once the row is no longer so).</li>
 * </ol>
 *
 * <p>This walks the pages and keeps the run's checkpoints and budgets; what a page finds, object by object, is
 * {@link PageFindings}'s to decide.
 */
@ApplicationScoped
public class ReconciliationJob {

    private static final Logger LOG = Logger.getLogger(ReconciliationJob.class);
    private static final int ROW_PAGE = 200;
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(32);

    private final ReconciliationStore store;
    private final OperatorRows rows;
    private final StripeGateway stripe;
    private final ReconciliationConfig config;
    private final StripeConfig stripeConfig;
    private final PageFindings findings;
    private final String holder = "instance-" + UUID.randomUUID();
    private final MeterRegistry metrics;
    private final Counter pages;
    private final Counter rateLimited;
    private final Map<FindingKind, AtomicLong> open = new EnumMap<>(FindingKind.class);
    private final AtomicLong lastCompleted = new AtomicLong();
    private final java.util.concurrent.locks.ReentrantLock passing = new java.util.concurrent.locks.ReentrantLock();

    ReconciliationJob(ReconciliationStore store, OutsideObjects outsideObjects, OperatorRows rows, StripeGateway stripe,
                      OperationDriver driver, ReconciliationConfig config, StripeConfig stripeConfig, RecoveryConfig recovery,
                      MeterRegistry metrics) {
        this.store = store;
        this.rows = rows;
        this.stripe = stripe;
        this.config = config;
        this.stripeConfig = stripeConfig;
        this.findings = new PageFindings(store, outsideObjects, rows, stripe, driver, config, recovery, this::pace);
        this.metrics = metrics;
        this.pages = metrics.counter("chargeonce.reconciliation.pages");
        this.rateLimited = metrics.counter("chargeonce.reconciliation.rate.limited");
        for (FindingKind kind : FindingKind.values()) {
            AtomicLong gauge = new AtomicLong();
            open.put(kind, gauge);
            metrics.gauge("chargeonce.reconciliation.open.findings", Tags.of("kind", kind.column()), gauge);
            // Registered up front, so that the first finding of a kind is an increase from 0 that alerts see.
            metrics.counter("chargeonce.reconciliation.findings", "finding", kind.column());
        }
        metrics.gauge("chargeonce.reconciliation.last.completed.timestamp.seconds", lastCompleted);
    }

    @Scheduled(identity = "reconciliation", every = "${chargeonce.reconciliation.interval:10m}", delayed = "${chargeonce.reconciliation.initial-delay:1m}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void scheduled() {
        if (!config.enabled()) {
            return;
        }
        try {
            TrafficClass.UPKEEP.call(this::pass);
        } catch (DatabaseUnavailableException | StripeGateway.LookupFailedException e) {
            LOG.warnf("reconciliation pass ended early: %s", e.getMessage());
        }
    }

    /**
     * An operator's run, in the background: passes until it has ended. A pass does nothing while this instance is in
     * a pass already or another instance holds the job's lease; then it tries again each second, and the run starts
     * as soon as the runs queued before it end (the lease's holder also goes on to the next open run when its own
     * ends). After one schedule interval the scheduled passes carry it on. Failures are only logged.
     */
    void runSoon(long runId) {
        long deadline = System.nanoTime() + config.interval().toNanos();
        while (System.nanoTime() < deadline) {
            try {
                TrafficClass.UPKEEP.call(this::pass);
                Optional<ReconciliationStore.Run> run = store.findRun(runId);
                if (run.isEmpty() || !OPEN.contains(run.get().status())) {
                    return;
                }
            } catch (RuntimeException e) {
                LOG.warnf("reconciliation pass ended early: %s", e.getMessage());
            }
            sleep(Duration.ofSeconds(1));
        }
    }

    private static final java.util.Set<String> OPEN = java.util.Set.of("queued", "running");

    /** Queues a run over a window (an operator's, or a test's); the next pass runs it. */
    public ReconciliationStore.Run request(Instant from, Instant to, String requestedBy) {
        if (!from.isBefore(to)) {
            throw new IllegalArgumentException("the window must start before it ends");
        }
        return store.queue(from, to, requestedBy);
    }

    /** What one pass did. */
    public record PassResult(boolean ran, Long runId, String status, int pages, int newFindings) {
    }

    /**
     * One pass: takes the job's lease (or does nothing when another instance holds it), finishes the oldest open
     * run or starts the scheduled one that is due, within the pass's page budget.
     */
    public PassResult pass() {
        // One pass per instance at a time (the schedule and an operator's request may meet): the lease is per
        // instance, so it would let both in.
        if (!passing.tryLock()) {
            return new PassResult(false, null, null, 0, 0);
        }
        try {
            return passHoldingTheLock();
        } finally {
            passing.unlock();
        }
    }

    private PassResult passHoldingTheLock() {
        Optional<ReconciliationStore.JobLease> acquired = store.acquire(holder, config.lease());
        if (acquired.isEmpty()) {
            return new PassResult(false, null, null, 0, 0);
        }
        ReconciliationStore.JobLease lease = acquired.get();
        try {
            Optional<ReconciliationStore.Run> open = store.nextOpenRun();
            ReconciliationStore.Run run = open.orElseGet(this::scheduledRun);
            if (run == null) {
                return new PassResult(true, null, null, 0, 0);
            }
            PassResult result = execute(lease, run);
            // A run queued meanwhile (an operator's) starts now, not at the next scheduled pass. (A run that is
            // still open after it ended here was not finished under this lease: the lease is lost, stop.)
            while (!"running".equals(result.status()) && (open = store.nextOpenRun()).isPresent()
                    && open.get().id() != result.runId()) {
                result = execute(lease, open.get());
            }
            return result;
        } finally {
            refreshGauges();
            store.release(lease);
        }
    }

    /** The scheduled window that is due: from where the last one ended (less the overlap) to the settle delay ago. */
    private ReconciliationStore.Run scheduledRun() {
        Instant to = Instant.now().minus(config.settleDelay());
        Instant from = store.lastScheduledWindowEnd().map(end -> end.minus(config.overlap()))
                .orElse(to.minus(config.firstWindow()));
        if (!from.isBefore(to.minus(config.overlap()))) {
            return null; // nothing new since the last window
        }
        return store.queue(from, to, "schedule");
    }

    private PassResult execute(ReconciliationStore.JobLease lease, ReconciliationStore.Run run) {
        RunState state = new RunState(lease, run);
        try {
            while (!state.phase.equals("done")) {
                if (state.pagesThisPass >= config.pagesPerPass()) {
                    LOG.infof("reconciliation run %d: page budget of the pass spent in phase %s; the next pass goes on", run.id(), state.phase);
                    return state.result("running");
                }
                if (run.pages() + state.pagesThisPass >= config.maxPagesPerRun()) {
                    store.finish(lease, run.id(), "failed", "more than chargeonce.reconciliation.max-pages-per-run ("
                            + config.maxPagesPerRun() + ") pages: split the window");
                    return state.result("failed");
                }
                if (!step(state)) {
                    return state.result("running"); // lease lost, or Stripe kept refusing: resumed later
                }
            }
            store.finish(lease, run.id(), "completed", null);
            LOG.infof("reconciliation run %d over [%s, %s) completed: %d new finding(s)", run.id(), run.from(), run.to(),
                    run.newFindings() + state.newFindings);
            return state.result("completed");
        } catch (RuntimeException e) {
            LOG.warnf("reconciliation run %d stopped in phase %s: %s", run.id(), state.phase, e.getMessage());
            throw e;
        }
    }

    /** Where a run stands within this pass. */
    private final class RunState {
        final ReconciliationStore.JobLease lease;
        final ReconciliationStore.Run run;
        final Instant listFrom;
        final Instant listTo;
        String phase;
        String cursor;
        int pagesThisPass;
        int newFindings;

        RunState(ReconciliationStore.JobLease lease, ReconciliationStore.Run run) {
            this.lease = lease;
            this.run = run;
            this.phase = run.phase();
            this.cursor = run.cursor();
            this.listFrom = run.from().minus(stripeConfig.lookupSkew());
            this.listTo = run.to().plus(stripeConfig.lookupSkew());
        }

        PassResult result(String status) {
            return new PassResult(true, run.id(), status, pagesThisPass, newFindings);
        }
    }

    /** One page of the current phase, its findings recorded and its checkpoint written; false to stop the pass. */
    private boolean step(RunState s) {
        String nextPhase = s.phase;
        String nextCursor;
        int objects;
        List<Finding> found = new ArrayList<>();
        switch (s.phase) {
            case "payment_intents", "refunds" -> {
                Operation op = s.phase.equals("refunds") ? Operation.REFUND : Operation.CHARGE;
                Optional<RecordPage> page = withBackoff(s, () -> op == Operation.REFUND
                        ? stripe.listRefunds(s.listFrom, s.listTo, null, s.cursor)
                        : stripe.listPaymentIntents(s.listFrom, s.listTo, s.cursor));
                if (page.isEmpty()) {
                    return false;
                }
                objects = page.get().records().size();
                found.addAll(findings.compareStripePage(s.run.id(), op, page.get().records()));
                boolean more = page.get().hasMore() && !page.get().records().isEmpty();
                nextCursor = more ? page.get().lastId() : null;
                if (!more) {
                    nextPhase = op == Operation.REFUND ? "refund_rows" : "charges";
                }
            }
            case "charges", "refund_rows" -> {
                Operation op = s.phase.equals("refund_rows") ? Operation.REFUND : Operation.CHARGE;
                Instant afterFinished = null;
                String afterId = null;
                if (s.cursor != null) {
                    int bar = s.cursor.indexOf('|');
                    afterFinished = Instant.parse(s.cursor.substring(0, bar));
                    afterId = s.cursor.substring(bar + 1);
                }
                List<RowView> page = rows.finishedBetween(op, s.run.from(), s.run.to(), afterFinished, afterId, ROW_PAGE);
                objects = page.size();
                Optional<List<Finding>> checked = withBackoff(s, () -> findings.checkOurRows(s.run.id(), op, page));
                if (checked.isEmpty()) {
                    return false;
                }
                found.addAll(checked.get());
                if (page.size() == ROW_PAGE) {
                    RowView last = page.get(page.size() - 1);
                    nextCursor = last.finishedAt() + "|" + last.id();
                } else {
                    nextCursor = null;
                    nextPhase = op == Operation.REFUND ? "rows" : "refunds";
                }
            }
            case "rows" -> {
                found.addAll(findings.attentionRows());
                objects = found.size();
                nextCursor = null;
                nextPhase = "done";
            }
            default -> throw new IllegalStateException("unknown reconciliation phase " + s.phase);
        }
        List<Finding> fresh = store.record(s.run.id(), found);
        for (Finding f : fresh) {
            metrics.counter("chargeonce.reconciliation.findings", "finding", f.kind().column()).increment();
            LOG.logf(f.kind().doneOutside() ? Logger.Level.INFO : Logger.Level.WARN, "reconciliation finding %s about %s: %s",
                    f.kind().column(), f.subject(), f.detail());
        }
        boolean stripePage = !s.phase.equals("rows");
        // The lease is renewed page by page: a pass lasts as long as its pages take, a killed holder's only a lease.
        if (!store.renew(s.lease, config.lease()) || !store.checkpoint(s.lease, s.run.id(), nextPhase, nextCursor, stripePage ? 1 : 0, objects, 0, fresh.size())) {
            LOG.warnf("reconciliation run %d: the job's lease was lost; another instance goes on from the last checkpoint", s.run.id());
            return false;
        }
        if (stripePage) {
            pages.increment();
            s.pagesThisPass++;
        }
        s.newFindings += fresh.size();
        s.phase = nextPhase;
        s.cursor = nextCursor;
        return true;
    }

    /**
     * Calls Stripe at the configured pace; a {@code 429} is waited out with a doubling back-off (the lease renewed
     * meanwhile). Empty when Stripe kept refusing until the longest back-off, or the lease was lost: the pass ends
     * and the run resumes from its checkpoint.
     */
    private <T> Optional<T> withBackoff(RunState s, Supplier<T> call) {
        Duration backoff = config.rateLimitBackoff();
        while (true) {
            pace();
            try {
                return Optional.of(call.get());
            } catch (StripeGateway.RateLimitedException e) {
                rateLimited.increment();
                store.checkpoint(s.lease, s.run.id(), s.phase, s.cursor, 0, 0, 1, 0);
                if (backoff.compareTo(MAX_BACKOFF) > 0) {
                    LOG.warnf("reconciliation run %d: Stripe still rate-limits after backing off %s; the next pass goes on", s.run.id(), MAX_BACKOFF);
                    return Optional.empty();
                }
                if (!store.renew(s.lease, config.lease().plus(backoff))) {
                    return Optional.empty();
                }
                sleep(backoff);
                backoff = backoff.multipliedBy(2);
            }
        }
    }

    private void pace() {
        sleep(Duration.ofMillis(1000L / Math.max(1, config.requestsPerSecond())));
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The open-findings gauges and the last completion, from the database (every instance exports them). */
    @Scheduled(identity = "reconciliation-gauges", every = "${chargeonce.gauges.interval:15s}",
            concurrentExecution = Scheduled.ConcurrentExecution.SKIP)
    void refreshGauges() {
        try {
            store.openByKind().forEach((kind, count) -> open.get(kind).set(count));
            store.lastCompletedAt().ifPresent(at -> lastCompleted.set(at.getEpochSecond()));
        } catch (DatabaseUnavailableException e) {
            // keep the last values; readiness reports the database
        }
    }
}

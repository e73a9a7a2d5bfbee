package chaos;

import static chaos.Chaos.opt;
import static chaos.Chaos.results;
import static chaos.Harness.log;
import static chaos.Harness.sleep;

import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TcpProxy;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One instance of the target: a process on fixed ports (a restart binds them again, so clients and the webhook relay
 * find it where it was), reaching the database through proxies of its own that the database cuts cut. The process
 * is the test suite's launcher's ({@link ServiceProcess}): the packaged service, or the naive control's main class.
 */
final class Instance {
    final Variant variant;
    final int index;
    final int port;
    /** chargeonce's health (and metrics) are on its management interface, a port of its own; the naive one has none. */
    final int managementPort;
    final TcpProxy primaryProxy;
    final TcpProxy replicaProxy;
    final String stripeBase;
    final ServiceProcess process;
    volatile boolean busy; // being stopped or started by the fault schedule

    Instance(Variant variant, int index, TcpProxy primaryProxy, TcpProxy replicaProxy, String stripeBase) {
        this.variant = variant;
        this.index = index;
        this.port = Chaos.freePort();
        this.managementPort = variant == Variant.CHARGEONCE ? Chaos.freePort() : port;
        this.primaryProxy = primaryProxy;
        this.replicaProxy = replicaProxy;
        this.stripeBase = stripeBase;
        ServiceProcess.Builder launch = ServiceProcess.builder(name()).port(port).readyPath(variant.readyPath)
                .logDirectory(results.resolve("logs")).onLaunch(Chaos::recordChild);
        if (variant == Variant.CHARGEONCE) {
            launch.managementPort(managementPort).jar(Path.of(opt("service-jar", "target/quarkus-app/quarkus-run.jar")))
                    .config(serviceConfig());
        } else {
            String primary = "jdbc:postgresql://127.0.0.1:" + primaryProxy.port() + "/" + variant.database;
            String lookup = replicaProxy == null ? primary
                    : "jdbc:postgresql://127.0.0.1:" + replicaProxy.port() + "/" + variant.database;
            launch.mainClass(opt("naive-classpath", ""), NaiveService.class.getName(), Integer.toString(port), primary,
                    lookup, stripeBase, Keys.clientsConfig());
        }
        this.process = launch.build();
    }

    String name() {
        return variant.database + "-" + index;
    }

    /** chargeonce's configuration: its database through the proxies, the stand-in, and settings that fit the chaos. */
    private Map<String, String> serviceConfig() {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("quarkus.http.host", "127.0.0.1");
        config.put("quarkus.management.host", "127.0.0.1");
        config.put("quarkus.datasource.jdbc.url", "jdbc:postgresql://127.0.0.1:" + primaryProxy.port() + "/" + variant.database);
        config.put("quarkus.datasource.username", "postgres");
        config.put("quarkus.datasource.password", "x");
        config.put("chargeonce.stripe.api-key", "sk_test_sandbox");
        config.put("chargeonce.stripe.api-base", stripeBase);
        config.put("chargeonce.auth.clients", Keys.clientsConfig());
        config.put("chargeonce.idempotency.key-hash-version", "1");
        config.put("chargeonce.idempotency.key-hash-secrets", "1:" + Keys.KEY_HASH_SECRET);
        // Short Stripe timeouts, and the shortest lease the service accepts with them (it refuses a lease not longer
        // than one whole create call: 3 tries x (connect + read) + 2 x 350 ms = 9.7 s), so that crashes resolve within
        // the run. See StripeFaults.checkSettings() for request-max-duration.
        config.put("chargeonce.idempotency.lease", opt("lease", "10s"));
        config.put("chargeonce.stripe.connect-timeout", opt("stripe-connect-timeout", "1s"));
        config.put("chargeonce.stripe.read-timeout", opt("stripe-read-timeout", "2s"));
        config.put("chargeonce.stripe.request-max-duration", opt("request-max-duration", "15s"));
        config.put("chargeonce.recovery.enabled", "true");
        config.put("chargeonce.recovery.interval", "1s");
        config.put("chargeonce.recovery.initial-delay", "1s");
        config.put("chargeonce.shutdown.grace", "5s");
        // The stand-in runs on this host's clock, so the lookup needs no clock-skew margin; with the default 10
        // minutes, the lookup after a Stripe 5xx pages through every PaymentIntent this run created in 10 minutes and
        // gives up past 50 pages (see README, Chaos).
        config.put("chargeonce.stripe.lookup-skew", opt("lookup-skew", "10s"));
        // Webhooks (README, Chaos): the secrets, a catch-up every few seconds whose place follows 10 s behind (the
        // stand-in lists an event as it makes it: none appears later than that), and 3-D Secure that expires, and is
        // re-checked, within the run.
        config.put("chargeonce.stripe.webhook-secret", Keys.WEBHOOK_SECRETS);
        config.put("chargeonce.webhooks.catch-up-interval", opt("catch-up-interval", "5s"));
        config.put("chargeonce.webhooks.catch-up-overlap", opt("catch-up-overlap", "10s"));
        // Instances here live seconds between kills: the first pass soon after a start, and a killed holder's lease
        // (renewed with every page of a few milliseconds) taken over after 15 s, not production's 30 s and 2 min.
        config.put("chargeonce.webhooks.catch-up-initial-delay", opt("catch-up-initial-delay", "2s"));
        config.put("chargeonce.webhooks.catch-up-lease", opt("catch-up-lease", "15s"));
        // A pass's reach (page size x pages): the CI run makes it smaller than the window (chaos/run.sh).
        config.put("chargeonce.webhooks.catch-up-page-size", opt("catch-up-page-size", "100"));
        config.put("chargeonce.webhooks.catch-up-max-pages", opt("catch-up-max-pages", "1000"));
        config.put("chargeonce.stripe.requires-action-expiry", opt("requires-action-expiry", "20s"));
        config.put("chargeonce.stripe.pending-recheck", opt("pending-recheck", "2s,5s"));
        config.put("chargeonce.recovery.sync-interval", opt("sync-interval", "2s"));
        if (StripeStandIn.rateLimit() > 0) {
            // A rate-limited Stripe: the shared budget sits at 80% of its limit, as in production.
            String budget = Integer.toString(Math.max(1, StripeStandIn.rateLimit() * 4 / 5));
            config.put("chargeonce.stripe.budget.rates.\"payment_intents.create\"", budget);
            config.put("chargeonce.stripe.budget.rates.\"refunds.create\"", budget);
        }
        if (replicaProxy != null) {
            config.put("quarkus.datasource.replica.jdbc.url", "jdbc:postgresql://127.0.0.1:" + replicaProxy.port() + "/"
                    + variant.database);
            config.put("quarkus.datasource.replica.username", "postgres");
            config.put("quarkus.datasource.replica.password", "x");
        }
        return config;
    }

    /**
     * Starts the process and waits until it is ready; false when it was not ready in time (it is left running, if
     * it runs: clients will retry) or kept exiting (a refused configuration: see its log in results/logs).
     */
    synchronized boolean start(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            try {
                process.startProcess(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                return true;
            } catch (IllegalStateException e) {
                if (Chaos.stopping || e.getCause() instanceof IOException) {
                    throw e; // the harness is on its way out, or the JVM could not be started at all
                }
                if (process.isAlive()) {
                    return false; // not ready in time: leave it running, clients will retry
                }
                log(name() + " exited during start (see " + process.logPath() + "); starting again");
                sleep(500);
            }
        }
        return false;
    }

    /** kill -9; false when the process was still there 10 s later. */
    boolean kill9() {
        return process.kill9(Duration.ofSeconds(10));
    }

    /**
     * SIGTERM; "stopped" when it stopped by itself, "killed" when it had to be killed after 15 s (the service's
     * shutdown takes at most twice its 5 s grace, so that is a finding, not a harness failure), "failed" when it
     * was still there after that.
     */
    String terminate() {
        ServiceProcess.Stop stop = process.stop(Duration.ofSeconds(15), Duration.ofSeconds(10));
        if (stop != ServiceProcess.Stop.STOPPED) {
            log(name() + " did not stop within 15 s of SIGTERM; killed it");
        }
        return switch (stop) {
            case STOPPED -> "stopped";
            case KILLED -> "killed";
            case STILL_RUNNING -> "failed";
        };
    }

    boolean alive() {
        return process.isAlive();
    }

    URI charges() {
        return URI.create("http://127.0.0.1:" + port + "/v1/charges");
    }

    URI refunds(String chargeId) {
        return URI.create("http://127.0.0.1:" + port + "/v1/charges/" + chargeId + "/refunds");
    }
}

package dev.chargeonce.stripe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A Stripe try is bounded as a whole, not per read: a server that trickles its answer one byte at a time, each within
 * the SDK's read timeout, would hold a try without end. The watchdog ends it at its limit, on a virtual thread as
 * the service runs its calls, and leaves no interrupt behind for what the thread does next.
 */
class TryWatchdogTest {

    private static final long LIMIT_MILLIS = 1_000;
    /** Per read, as the SDK's read timeout: every trickled byte arrives well within it. */
    private static final int READ_TIMEOUT_MILLIS = 2_000;

    private final TryWatchdog watchdog = new TryWatchdog();
    private ServerSocket server;
    private Thread trickler;
    private final java.util.List<Socket> accepted = new java.util.concurrent.CopyOnWriteArrayList<>();

    @BeforeEach
    void trickleServer() throws IOException {
        server = new ServerSocket(0);
        trickler = Thread.ofPlatform().daemon().start(() -> {
            while (!server.isClosed()) {
                try {
                    Socket s = server.accept();
                    accepted.add(s);
                    Thread.ofPlatform().daemon().start(() -> trickle(s));
                } catch (IOException e) {
                    return;
                }
            }
        });
    }

    private static void trickle(Socket s) {
        try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
            byte[] request = new byte[4096];
            in.read(request); // the request's head: enough for an HTTP/1.1 GET
            out.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            for (int i = 0; i < 100_000; i++) {
                out.write('x');
                out.flush();
                Thread.sleep(200);
            }
        } catch (IOException | InterruptedException e) {
            // the client went away
        }
    }

    @AfterEach
    void stop() throws IOException {
        server.close();
        trickler.interrupt();
        for (Socket s : accepted) {
            s.close(); // ends the trickle, and the reference test's read that nothing else would end
        }
        watchdog.stop();
    }

    /** Reads the whole trickled answer, each read bounded by READ_TIMEOUT_MILLIS as the SDK's are. */
    private int readAll() throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + server.getLocalPort() + "/v1/payment_intents")
                .toURL().openConnection();
        c.setConnectTimeout(READ_TIMEOUT_MILLIS);
        c.setReadTimeout(READ_TIMEOUT_MILLIS);
        try (InputStream in = c.getInputStream()) {
            return in.readAllBytes().length;
        }
    }

    @Test
    void withoutTheWatchdogATrickledAnswerHoldsTheTryPastAnyLimit() throws Exception {
        CompletableFuture<Integer> read = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                read.complete(readAll());
            } catch (Throwable e) {
                read.completeExceptionally(e);
            }
        });
        // the reference: the SDK's per-read timeout alone never ends it
        assertThrows(TimeoutException.class, () -> read.get(LIMIT_MILLIS * 3, TimeUnit.MILLISECONDS),
                "a trickled answer should hold a try that only has a per-read timeout");
    }

    @Test
    void theWatchdogEndsATrickledTryAtItsLimitAndLeavesNoInterrupt() throws Exception {
        CompletableFuture<String> outcome = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            long started = System.nanoTime();
            boolean expired;
            Throwable failure = null;
            try (TryWatchdog.Watch watch = watchdog.start(TimeUnit.MILLISECONDS.toNanos(LIMIT_MILLIS))) {
                try {
                    readAll();
                } catch (IOException e) {
                    failure = e;
                }
                expired = watch.expired();
            }
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            boolean interruptedAfter = Thread.currentThread().isInterrupted();
            // what the thread does next must not be cut short: a sleep runs its course
            boolean sleptFully;
            try {
                Thread.sleep(100);
                sleptFully = true;
            } catch (InterruptedException e) {
                sleptFully = false;
            }
            outcome.complete("failed=" + (failure != null) + " expired=" + expired + " tookAtLeastLimit=" + (tookMillis >= LIMIT_MILLIS)
                    + " interruptedAfter=" + interruptedAfter + " sleptFully=" + sleptFully + " took=" + tookMillis);
        });
        String result = outcome.get(LIMIT_MILLIS * 10, TimeUnit.MILLISECONDS);
        assertTrue(result.startsWith("failed=true expired=true tookAtLeastLimit=true interruptedAfter=false sleptFully=true"), result);
        assertEquals(0, watchdog.running(), "an ended try is no longer watched");
    }

    @Test
    void aTryThatEndsInTimeIsNeverInterrupted() throws Exception {
        CompletableFuture<Boolean> clean = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            for (int i = 0; i < 10_000; i++) {
                try (TryWatchdog.Watch watch = watchdog.start(TimeUnit.MILLISECONDS.toNanos(LIMIT_MILLIS))) {
                    if (watch.expired()) {
                        clean.complete(false);
                        return;
                    }
                }
            }
            try {
                // past the limit of every watch above, and several of the watchdog's looks
                Thread.sleep(LIMIT_MILLIS + 4 * TryWatchdog.LOOK_MILLIS);
                clean.complete(!Thread.currentThread().isInterrupted());
            } catch (InterruptedException e) {
                clean.complete(false);
            }
        });
        assertTrue(clean.get(LIMIT_MILLIS * 10, TimeUnit.MILLISECONDS), "a closed watch interrupted its thread later");
        assertEquals(0, watchdog.running());
        assertFalse(Thread.currentThread().isInterrupted());
    }

    /**
     * The create call itself, as {@link StripeGateway} makes it (without the CDI interceptors: this is one try): against
     * a Stripe that trickles its answer, the try ends at the configured {@code Timeout/value} as Fault Tolerance's
     * {@code TimeoutException} (which its retry and circuit breaker know), and the call's log keeps the try as maybe
     * executed (it was sent).
     */
    @Test
    void aCreateTryAgainstATricklingStripeEndsAsATimeoutAtItsConfiguredLimit() throws Exception {
        StripeConfig stripe = stripeConfig("http://127.0.0.1:" + server.getLocalPort());
        org.eclipse.microprofile.config.Config config = new io.smallrye.config.SmallRyeConfigBuilder()
                .withDefaultValue(StripeApi.CONFIG_ROOT + "create/Timeout/value", "1").build();
        io.micrometer.core.instrument.simple.SimpleMeterRegistry registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        StripeApi api = new StripeApi(new StripeClients(stripe), stripe, config, registry, dev.chargeonce.ratebudget.StripeRateBudget.disabled(registry));
        SendLog log = new SendLog();
        CompletableFuture<Throwable> thrown = new CompletableFuture<>();
        long[] tookMillis = {0};
        Thread.ofVirtual().start(() -> {
            long started = System.nanoTime();
            Throwable failure = null;
            try {
                api.create(com.stripe.param.PaymentIntentCreateParams.builder().setAmount(1000L).setCurrency("usd").build(), "key-1",
                        System.nanoTime() + TimeUnit.SECONDS.toNanos(60), log);
            } catch (Throwable e) {
                failure = e;
            }
            tookMillis[0] = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            thrown.complete(failure); // after the time is taken: the test thread reads both
        });
        Throwable e = thrown.get(30, TimeUnit.SECONDS);
        api.stopWatchdog();
        assertTrue(e instanceof org.eclipse.microprofile.faulttolerance.exceptions.TimeoutException, "expected a TimeoutException, got " + e);
        assertTrue(tookMillis[0] >= 1_000 && tookMillis[0] < 1_000 + READ_TIMEOUT_MILLIS,
                "the try should end at its 1 s limit (before the 2 s read timeout could), took " + tookMillis[0] + " ms");
        assertTrue(log.maybeExecuted(), "a try that was sent may have executed");
        assertEquals(1.0, registry.get(StripeApi.TRIES_EXPIRED).tag("call", "create").counter().count(),
                "the ended try is counted");
        assertEquals(0.0, registry.get(StripeApi.TRIES_EXPIRED).tag("call", "createRefund").counter().count());
    }

    /**
     * A Stripe that takes the request and never answers, with a try limit (5 s) longer than the read timeout (700 ms):
     * on a virtual thread, where the service runs its requests' calls, the SDK's client has no read timeout (a timed read
     * costs a timer task per call) and the watchdog ends the try at the read timeout instead, as the same
     * {@code TimeoutException}; on a platform thread (a caller outside the service's own), where an interrupt does
     * not end a socket read, the SDK's own read timeout ends it. Either way it ends at the read timeout, not the limit.
     */
    @Test
    void aSilentStripeEndsATryAtTheReadTimeoutOnAVirtualThreadAndOnAPlatformThread() throws Exception {
        int readTimeoutMillis = 700;
        ServerSocket silent = silentServer();
        try {
            StripeConfig stripe = stripeConfig("http://127.0.0.1:" + silent.getLocalPort(), readTimeoutMillis);
            org.eclipse.microprofile.config.Config config = new io.smallrye.config.SmallRyeConfigBuilder()
                    .withDefaultValue(StripeApi.CONFIG_ROOT + "create/Timeout/value", "5").build();
            io.micrometer.core.instrument.simple.SimpleMeterRegistry registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
            StripeApi api = new StripeApi(new StripeClients(stripe), stripe, config, registry, dev.chargeonce.ratebudget.StripeRateBudget.disabled(registry));
            try {
                String onVirtual = oneCreateTry(api, Thread.ofVirtual());
                assertTrue(onVirtual.startsWith("TimeoutException"), "on a virtual thread the watchdog ends the try: " + onVirtual);
                assertEquals(1.0, registry.get(StripeApi.TRIES_EXPIRED).tag("call", "create").counter().count(), onVirtual);
                assertTookAboutTheReadTimeout(onVirtual, readTimeoutMillis);

                String onPlatform = oneCreateTry(api, Thread.ofPlatform().daemon());
                assertTrue(onPlatform.startsWith("UnreachableException"), "on a platform thread the SDK's read timeout ends it: " + onPlatform);
                assertEquals(1.0, registry.get(StripeApi.TRIES_EXPIRED).tag("call", "create").counter().count(),
                        "the watchdog did not end it: " + onPlatform);
                assertTookAboutTheReadTimeout(onPlatform, readTimeoutMillis);
            } finally {
                api.stopWatchdog();
            }
        } finally {
            silent.close();
        }
    }

    /**
     * The application stops: the tries still running end (a virtual thread's try has no socket timeout of its own, so
     * nothing else would), and one that starts afterwards ends at once; both as a timeout, their outcome unknown.
     */
    @Test
    void stoppingTheWatchdogEndsTheTriesStillRunningAndAnyStartedAfter() throws Exception {
        ServerSocket silent = silentServer();
        try {
            StripeConfig stripe = stripeConfig("http://127.0.0.1:" + silent.getLocalPort(), 20_000);
            org.eclipse.microprofile.config.Config config = new io.smallrye.config.SmallRyeConfigBuilder()
                    .withDefaultValue(StripeApi.CONFIG_ROOT + "create/Timeout/value", "20").build();
            StripeApi api = new StripeApi(new StripeClients(stripe), stripe, config, new io.micrometer.core.instrument.simple.SimpleMeterRegistry(), dev.chargeonce.ratebudget.StripeRateBudget.disabled(new io.micrometer.core.instrument.simple.SimpleMeterRegistry()));
            CompletableFuture<String> running = CompletableFuture.supplyAsync(() -> {
                try {
                    return oneCreateTry(api, Thread.ofVirtual());
                } catch (Exception e) {
                    return e.toString();
                }
            }, java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (accepted.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20); // until the try is waiting for Stripe's answer
            }
            Thread.sleep(200);
            api.stopWatchdog();
            String ended = running.get(10, TimeUnit.SECONDS);
            assertTrue(ended.startsWith("TimeoutException"), "a try running when the watchdog stops ends: " + ended);
            assertTrue(Long.parseLong(ended.split(" ")[1]) < 10_000, "long before its 20 s limit: " + ended);
            assertEquals("true", ended.split(" ")[2], "it was sent: maybe executed");
            String after = oneCreateTry(api, Thread.ofVirtual());
            assertTrue(after.startsWith("TimeoutException") && Long.parseLong(after.split(" ")[1]) < 10_000,
                    "a try started after the stop ends at once: " + after);
        } finally {
            silent.close();
        }
    }

    @Test
    void aStripeTimeoutUnderAMillisecondIsRefusedAtStartUp() {
        org.eclipse.microprofile.config.Config config = new io.smallrye.config.SmallRyeConfigBuilder().build();
        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> StripeCallBudget.of(stripeConfig("http://127.0.0.1:1", 0), config), "the SDK reads 0 as no timeout");
        assertTrue(refused.getMessage().contains("chargeonce.stripe.read-timeout"), refused.getMessage());
        assertTrue(StripeCallBudget.of(stripeConfig("http://127.0.0.1:1", 1), config).toMillis() > 0);
    }

    /** A Stripe that takes a request and never answers (the test's @AfterEach closes what it accepted). */
    private ServerSocket silentServer() throws IOException {
        ServerSocket silent = new ServerSocket(0);
        Thread.ofPlatform().daemon().start(() -> {
            while (!silent.isClosed()) {
                try {
                    Socket s = silent.accept();
                    accepted.add(s);
                    s.getInputStream().read(new byte[4096]); // the request's head; then nothing, until the test closes it
                } catch (IOException e) {
                    return;
                }
            }
        });
        return silent;
    }

    /** One create try on a new thread of {@code builder}: "<what it threw> <ms it took> <maybe executed>". */
    private static String oneCreateTry(StripeApi api, Thread.Builder builder) throws Exception {
        SendLog log = new SendLog();
        CompletableFuture<String> outcome = new CompletableFuture<>();
        builder.start(() -> {
            long started = System.nanoTime();
            String thrown = "nothing";
            try {
                api.create(com.stripe.param.PaymentIntentCreateParams.builder().setAmount(1000L).setCurrency("usd").build(),
                        "key-silent", System.nanoTime() + TimeUnit.SECONDS.toNanos(60), log);
            } catch (Throwable e) {
                thrown = e.getClass().getSimpleName();
            }
            outcome.complete(thrown + " " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) + " " + log.maybeExecuted());
        });
        return outcome.get(30, TimeUnit.SECONDS);
    }

    private static void assertTookAboutTheReadTimeout(String outcome, int readTimeoutMillis) {
        String[] parts = outcome.split(" ");
        long took = Long.parseLong(parts[1]);
        // at the read timeout (the watchdog looks every LOOK_MILLIS), well before the 5 s limit even on a busy machine
        assertTrue(took >= readTimeoutMillis && took < 3_000, "ended after " + took + " ms: " + outcome);
        assertEquals("true", parts[2], "a try that was sent may have executed: " + outcome);
    }

    /** The SDK's per-request telemetry (a queue walk, a metrics record, a header serialised with gson) is off. */
    @Test
    void theSdksRequestTelemetryIsOff() {
        new StripeClients(stripeConfig("http://127.0.0.1:" + server.getLocalPort()));
        assertFalse(com.stripe.Stripe.enableTelemetry, "StripeClients switches the SDK's request telemetry off");
    }

    @Test
    void aTryLimitThatIsNotASecondCountIsRefusedAtStartUp() {
        String prefix = StripeApi.CONFIG_ROOT + "create/";
        for (String[] setting : java.util.List.of(new String[]{"Timeout/value", "0"}, new String[]{"Timeout/value", "-1"},
                new String[]{"Timeout/unit", "MILLIS"}, new String[]{"Timeout/enabled", "false"})) {
            org.eclipse.microprofile.config.Config config = new io.smallrye.config.SmallRyeConfigBuilder()
                    .withDefaultValue(prefix + setting[0], setting[1]).build();
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> StripeCallBudget.trySeconds(config, prefix),
                    setting[0] + "=" + setting[1] + " should be refused");
            assertTrue(refused.getMessage().contains(setting[0]), refused.getMessage());
        }
        assertEquals(StripeApi.TIMEOUT_SECONDS, StripeCallBudget.trySeconds(new io.smallrye.config.SmallRyeConfigBuilder().build(), prefix));
    }

    /** The Stripe settings the SDK client is built from, with a read timeout (this test's by default) and API base. */
    private static StripeConfig stripeConfig(String apiBase) {
        return stripeConfig(apiBase, READ_TIMEOUT_MILLIS);
    }

    private static StripeConfig stripeConfig(String apiBase, int readTimeoutMillis) {
        return (StripeConfig) java.lang.reflect.Proxy.newProxyInstance(StripeConfig.class.getClassLoader(), new Class<?>[]{StripeConfig.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "apiKey" -> "sk_test_trickle";
                    case "apiBase" -> apiBase;
                    case "connectTimeout" -> java.time.Duration.ofMillis(READ_TIMEOUT_MILLIS);
                    case "readTimeout" -> java.time.Duration.ofMillis(readTimeoutMillis);
                    case "maxNetworkRetries" -> 0;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }
}

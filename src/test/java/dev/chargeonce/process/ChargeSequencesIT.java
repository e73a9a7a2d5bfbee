package dev.chargeonce.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.testing.ChargeClient;
import dev.chargeonce.testing.ProcessEnvironment;
import dev.chargeonce.testing.SandboxControl;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestClients;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A stateful, model-based test against the real service process: generated sequences of charge, retry, conflicting
 * retry, concurrent duplicates, another client with the same key string, a Stripe fault, and {@code kill -9} of the
 * instance with a restart. A model of what each key has been told says what every answer must be, and the real
 * service over HTTP must agree at every step; at the end of every sequence Stripe holds exactly one PaymentIntent
 * per key that was told 201, the one it was told. {@code -Dprops.seed=<seed>} replays a run.
 */
class ChargeSequencesIT {

    static final int SEQUENCES = 12;
    static final int MAX_STEPS = 14;
    static final ObjectMapper JSON = new ObjectMapper();
    static final Duration TIMEOUT = Duration.ofSeconds(40);

    ProcessEnvironment env;
    ServiceProcess service;
    SandboxControl stripe;
    final ChargeClient acme = new ChargeClient(TestClients.ACME_KEY);
    final ChargeClient globex = new ChargeClient(TestClients.GLOBEX_KEY);

    @BeforeEach
    void start() {
        env = new ProcessEnvironment("sequences");
        Map<String, String> config = env.serviceConfig();
        ProcessEnvironment.shortLease(config, Duration.ofSeconds(4), Duration.ofMillis(1500));
        service = ServiceProcess.start("sequences", config);
        stripe = new SandboxControl(env.stripe.baseUrl());
    }

    @AfterEach
    void stop() throws Exception {
        service.close();
        env.close();
    }

    /** What the model knows of a (client, key): its body, and its final answer once one was given. */
    static final class KeyState {
        final String client;
        final String key;
        final String body;
        Integer finalStatus;
        String finalBody;

        KeyState(String client, String key, String body) {
            this.client = client;
            this.key = key;
            this.body = body;
        }
    }

    enum Action { NEW, RETRY, CONFLICT, CONCURRENT, OTHER_CLIENT, FAULT, KILL }

    URI charges() {
        return service.uri("/v1/charges");
    }

    @Test
    void generatedSequencesAgreeWithTheModelAtEveryStep() throws Exception {
        String given = System.getProperty("props.seed");
        long seed = given != null ? Long.parseLong(given) : System.nanoTime();
        Random random = new Random(seed);
        int steps = 0;
        Map<Action, Integer> done = new TreeMap<>();
        for (int sequence = 0; sequence < SEQUENCES; sequence++) {
            List<KeyState> keys = new ArrayList<>();
            String pendingFault = null;
            for (int step = 0, n = 4 + random.nextInt(MAX_STEPS - 3); step < n; step++, steps++) {
                Action action = keys.isEmpty() ? Action.NEW : Action.values()[random.nextInt(Action.values().length)];
                if (action == Action.KILL && random.nextInt(3) > 0) {
                    action = Action.RETRY; // a kill costs a restart: one in three drawn
                }
                String where = "seed " + seed + " sequence " + sequence + " step " + step + " " + action;
                done.merge(action, 1, Integer::sum);
                switch (action) {
                    case NEW -> {
                        KeyState k = new KeyState(TestClients.ACME, "seq-" + seed + "-" + sequence + "-" + step, body(random));
                        keys.add(k);
                        pendingFault = env.stripe.planLeft() > 0 ? String.valueOf(pendingFault) : null; // the plan says what is still to come
                        ChargeClient.Answer a = acme.post(charges(), k.key, k.body, TIMEOUT);
                        if (pendingFault == null) {
                            assertEquals(201, a.status(), where + ": " + a);
                        } else {
                            assertTrue(Set.of(201, 503).contains(a.status()), where + " after " + pendingFault + ": " + a);
                        }
                        observe(k, a, where);
                    }
                    case RETRY -> {
                        KeyState k = keys.get(random.nextInt(keys.size()));
                        ChargeClient.Answer a = client(k).post(charges(), k.key, k.body, TIMEOUT);
                        observe(k, a, where);
                    }
                    case CONFLICT -> {
                        KeyState k = keys.get(random.nextInt(keys.size()));
                        ChargeClient.Answer a = client(k).post(charges(), k.key, k.body.replace("\"amount\": ", "\"amount\": 1"), TIMEOUT);
                        assertEquals(422, a.status(), where + ": the same key with another body: " + a);
                    }
                    case CONCURRENT -> {
                        KeyState k = new KeyState(TestClients.ACME, "seq-" + seed + "-" + sequence + "-" + step + "-dup", body(random));
                        keys.add(k);
                        List<CompletableFuture<ChargeClient.Answer>> all = new ArrayList<>();
                        for (int i = 0; i < 4; i++) {
                            all.add(CompletableFuture.supplyAsync(() -> acme.post(charges(), k.key, k.body, TIMEOUT)));
                        }
                        List<ChargeClient.Answer> answers = new ArrayList<>();
                        for (CompletableFuture<ChargeClient.Answer> f : all) {
                            answers.add(f.get(60, TimeUnit.SECONDS));
                        }
                        // Concurrent answers have no order: each is in flight (409), unknown (503) or the one 201,
                        // and every 201 is the same bytes (the first, and replays of it).
                        int created = 0;
                        for (ChargeClient.Answer a : answers) {
                            assertTrue(Set.of(201, 409, 503).contains(a.status()), where + ": " + a);
                            if (a.status() == 201) {
                                created += a.replayed() ? 0 : 1;
                                assertTrue(k.finalBody == null || k.finalBody.equals(a.body()), where + ": one answer for one key");
                                k.finalStatus = 201;
                                k.finalBody = a.body();
                            }
                        }
                        assertTrue(created <= 1, where + ": at most one first answer, the rest replays or 409: " + created);
                    }
                    case OTHER_CLIENT -> {
                        KeyState mine = keys.get(random.nextInt(keys.size()));
                        KeyState theirs = new KeyState(TestClients.GLOBEX, mine.key, mine.body);
                        if (keys.stream().noneMatch(s -> s.client.equals(TestClients.GLOBEX) && s.key.equals(mine.key))) {
                            keys.add(theirs);
                            pendingFault = env.stripe.planLeft() > 0 ? String.valueOf(pendingFault) : null;
                            ChargeClient.Answer a = globex.post(charges(), theirs.key, theirs.body, TIMEOUT);
                            if (pendingFault == null) {
                                assertEquals(201, a.status(), where + ": another client's key space: " + a);
                            } else {
                                assertTrue(Set.of(201, 503).contains(a.status()), where + " after " + pendingFault + ": " + a);
                            }
                            assertTrue(!a.replayed(), where + ": never the other client's answer");
                            observe(theirs, a, where);
                            if (mine.finalBody != null) {
                                assertNotEquals(id(mine.finalBody), id(a.body()), where + ": two clients, two charges");
                            }
                        }
                    }
                    case FAULT -> {
                        String fault = List.of("fail_before", "fail_after", "drop", "slow:2500").get(random.nextInt(4));
                        stripe.plan(fault);
                        pendingFault = pendingFault == null ? fault : pendingFault + "," + fault;
                        if (!keys.isEmpty() && random.nextBoolean()) {
                            // the fault hits a retry of a key still open, or goes to the next new charge
                            KeyState open = keys.stream().filter(k -> k.finalStatus == null).findFirst().orElse(null);
                            if (open != null) {
                                observe(open, client(open).post(charges(), open.key, open.body, TIMEOUT), where);
                            }
                        }
                    }
                    case KILL -> {
                        // Killed while a request runs at Stripe (slow), then restarted: the key is finished by a retry.
                        KeyState k = new KeyState(TestClients.ACME, "seq-" + seed + "-" + sequence + "-" + step + "-kill", body(random));
                        keys.add(k);
                        stripe.clearFaults();
                        stripe.plan("slow:1500");
                        CompletableFuture<ChargeClient.Answer> inFlight = CompletableFuture.supplyAsync(() -> acme.post(charges(), k.key, k.body, TIMEOUT));
                        Thread.sleep(300 + random.nextInt(900));
                        service.kill9();
                        ChargeClient.Answer cut = inFlight.get(60, TimeUnit.SECONDS);
                        assertTrue(cut.status() == -1 || cut.status() == 201, where + ": the request died with the instance: " + cut);
                        observe(k, cut, where);
                        service.startProcess();
                        stripe.clearFaults();
                        pendingFault = null;
                        if (cut.status() == -1 && env.rowStatus(k.key) == null) {
                            // Killed before its claim committed (a loaded machine may not reach it within the kill's
                            // delay): the key was never used, so another body with it is a new charge, not a 422.
                            keys.remove(k);
                        }
                    }
                }
            }
            // Every key reaches its answer, and Stripe has one payment per key told 201: the one it was told.
            stripe.clearFaults();
            for (KeyState k : keys) {
                String where = "seed " + seed + " sequence " + sequence + " key " + k.client + "/" + k.key;
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (k.finalStatus == null) {
                    assertTrue(System.nanoTime() < deadline, where + ": no final answer within 60 s");
                    observe(k, client(k).post(charges(), k.key, k.body, TIMEOUT), where);
                    if (k.finalStatus == null) {
                        Thread.sleep(250);
                    }
                }
                assertEquals(201, k.finalStatus, where);
                List<JsonNode> intents = stripe.intentsFor(k.client, k.key);
                assertEquals(1, intents.size(), where + ": one PaymentIntent per key: " + intents);
                assertEquals(intents.get(0).get("id").asText(), JSON.readTree(k.finalBody).path("payment_intent").asText(),
                        where + ": the one the client was told");
            }
        }
        System.out.printf("charge sequences: %d sequences, %d steps (seed %d), actions %s%n", SEQUENCES, steps, seed, done);
    }

    ChargeClient client(KeyState k) {
        return k.client.equals(TestClients.GLOBEX) ? globex : acme;
    }

    /** One answer for a key, against the model: once final, the same bytes for ever; before, only "not yet". */
    static void observe(KeyState k, ChargeClient.Answer a, String where) {
        if (k.finalStatus != null) {
            assertEquals(k.finalStatus, a.status(), where + ": a final answer never changes: " + a);
            assertEquals(k.finalBody, a.body(), where + ": replayed byte for byte");
            assertTrue(a.replayed(), where + ": marked as a replay");
            return;
        }
        if (a.status() == 201) {
            k.finalStatus = 201;
            k.finalBody = a.body();
            return;
        }
        assertTrue(a.status() == -1 || a.status() == 409 || a.status() == 503, where + ": before its answer a key is only in flight or unknown: " + a);
    }

    static String body(Random random) {
        return "{\"amount\": " + (100 + random.nextInt(9900)) + ", \"currency\": \"" + List.of("usd", "eur", "gbp").get(random.nextInt(3))
                + "\", \"payment_method\": \"pm_card_visa\"" + (random.nextBoolean() ? ", \"description\": \"order " + random.nextInt(1000) + "\"" : "")
                + "}";
    }

    static String id(String body) {
        try {
            return JSON.readTree(body).path("id").asText();
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }
}

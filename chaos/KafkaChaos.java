package chaos;

import static chaos.Harness.log;
import static chaos.Harness.sleep;

import dev.chargeonce.sandbox.StripeSandbox;
import dev.chargeonce.testing.KafkaBroker;
import dev.chargeonce.testing.KafkaTestClients;
import dev.chargeonce.testing.ServiceProcess;
import dev.chargeonce.testing.TestPostgres;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Kafka ingress under chaos (README "Chaos", "Kafka ingress"): a producer that retries (the same event id sent
 * again, at once or later), reuses an event id for another payment now and then, and sends poison records, against
 * instances of the packaged service in one consumer group that the harness kill -9s and restarts, joins and leaves
 * (rebalances), while Stripe's latency spikes so that kills land between the claim and Stripe's answer, and loses the
 * last commits of a partition now and then ({@link KafkaLostCommits}: what a failover to an asynchronous standby
 * leaves). Then the chaos stops, the group catches up, and the audit holds every command against the rows, Stripe's
 * ledger, the results topic (after dedup by charge id; one charge id per command, also across a lost commit) and the
 * dead-letter topic. Exits 1 on any duplicate charge, lost command, second charge id, result missing or unlike its
 * row, or on a run that injected too little chaos to prove anything.
 *
 * <p>The harness is the test suite's: its broker launcher, Kafka clients and service launcher (ServiceProcess); the
 * database is made on the PostgreSQL that chaos/kafka-run.sh started (bench/lib.sh start_pg, like every script's).
 *
 *   java chaos.KafkaChaos --pg-port P --duration 45s --seed N --work DIR [--min-kills 3] [--min-group-changes 8]
 *       [--min-lost-commits 2]
 */
public final class KafkaChaos {

    static final String CLIENT = "orders";
    static final String GROUP = "chargeonce-chaos";
    static final ObjectMapper JSON = new ObjectMapper();
    /** Every member this run started: stopped on the way out however the run ends (a restart that fails throws). */
    static final List<ServiceProcess> STARTED = java.util.Collections.synchronizedList(new ArrayList<>());

    static ServiceProcess started(ServiceProcess member) {
        STARTED.add(member);
        return member;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = Harness.options(args);
        Duration duration = Duration.ofSeconds(Harness.seconds(opts.getOrDefault("duration", "45s")));
        long seed = Long.parseLong(opts.getOrDefault("seed", Long.toString(System.currentTimeMillis())));
        int minKills = Integer.parseInt(opts.getOrDefault("min-kills", "3"));
        int minRebalances = Integer.parseInt(opts.getOrDefault("min-group-changes", "8"));
        int minLostCommits = Integer.parseInt(opts.getOrDefault("min-lost-commits", "2"));
        Path work = Path.of(opts.getOrDefault("work", "target/kafka-chaos"));
        int pgPort = Integer.parseInt(opts.getOrDefault("pg-port", "5432"));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> List.copyOf(STARTED).forEach(ServiceProcess::close)));
        System.exit(new KafkaChaos(duration, seed, minKills, minRebalances, minLostCommits, work, pgPort).run());
    }

    final Duration duration;
    final long seed;
    final Random random;
    final int minKills;
    final int minGroupChanges;
    final int minLostCommits;
    final Path work;
    /** The PostgreSQL the script started: the run makes a database of its own there. */
    final int pgPort;
    final List<String> violations = new ArrayList<>();
    final AtomicInteger kills = new AtomicInteger();
    final AtomicInteger groupChanges = new AtomicInteger();

    /** An instance slot of the group; busy while it restarts, joins or leaves in the background. */
    static final class Member {
        volatile ServiceProcess process;
        volatile boolean busy;

        Member(ServiceProcess process) {
            this.process = process;
        }
    }

    KafkaChaos(Duration duration, long seed, int minKills, int minGroupChanges, int minLostCommits, Path work, int pgPort) {
        this.duration = duration;
        this.seed = seed;
        this.random = new Random(seed);
        this.minKills = minKills;
        this.minGroupChanges = minGroupChanges;
        this.minLostCommits = minLostCommits;
        this.work = work;
        this.pgPort = pgPort;
    }

    int run() throws Exception {
        log("Kafka chaos: " + duration.toSeconds() + " s, seed " + seed);
        String database = "kafkachaos";
        TestPostgres.createDatabase(pgPort, database);
        String jdbc = TestPostgres.jdbcUrl(pgPort, database);
        try (StripeSandbox stripe = StripeSandbox.start(0);
             KafkaBroker broker = KafkaBroker.start(work);
             KafkaTestClients kafka = new KafkaTestClients(broker.bootstrapServers())) {
            log("broker on " + broker.bootstrapServers() + ", PostgreSQL on " + pgPort + ", Stripe stand-in on " + stripe.port());
            kafka.createTopics(6, "commands");
            kafka.createTopics(3, "results");
            kafka.createTopics(1, "dead-letters");
            Map<String, String> config = serviceConfig(jdbc, stripe, broker);
            List<Member> members = new ArrayList<>();
            members.add(new Member(started(ServiceProcess.start("kafka-chaos-a", config))));
            members.add(new Member(started(ServiceProcess.start("kafka-chaos-b", config))));
            Member joiner = new Member(null);   // the third member: absent, joining, present, leaving

            Producer producer = new Producer(kafka, new Random(seed + 1));
            Thread producing = Thread.ofPlatform().name("producer").start(producer);
            KafkaLostCommits lostCommits = new KafkaLostCommits(jdbc, GROUP, "commands", CLIENT, kafka, new Random(seed + 2),
                    work.resolve("lost-commits.log"));
            Thread losing = Thread.ofPlatform().name("lost-commits").start(lostCommits);
            List<CompletableFuture<Void>> pending = new ArrayList<>();
            java.util.concurrent.ExecutorService background = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor();
            long end = System.nanoTime() + duration.toNanos();
            // On a busy machine restarts take longer and fewer faults fit in the duration: the chaos goes on (up to
            // three times as long) until the minimums the audit requires are reached, instead of failing short.
            long hardEnd = System.nanoTime() + duration.toNanos() * 3;
            while (System.nanoTime() < end
                    || ((kills.get() < minKills || groupChanges.get() < minGroupChanges || lostCommits.count() < minLostCommits)
                        && System.nanoTime() < hardEnd)) {
                Thread.sleep(1_500 + random.nextInt(2_500));
                int action = random.nextInt(5);
                List<Member> idle = new ArrayList<>(members.stream().filter(m -> !m.busy).toList());
                if (!joiner.busy && joiner.process != null) {
                    idle.add(joiner);
                }
                if (action <= 2 && !idle.isEmpty()) {
                    // kill -9 a member, half of the times while Stripe is slow (between the claim and the answer);
                    // it restarts in the background (a restart takes 5-20 s here) while the chaos goes on
                    if (random.nextBoolean()) {
                        stripe.setLatencyMillis(1_500);
                        Thread.sleep(800);
                    }
                    Member victim = idle.get(random.nextInt(idle.size()));
                    victim.busy = true;
                    victim.process.kill9();
                    stripe.setLatencyMillis(random.nextInt(200));
                    kills.incrementAndGet();
                    groupChanges.incrementAndGet();
                    log("kill -9 " + victim.process.pid() + " (" + kills.get() + " kills)");
                    long pause = 500 + random.nextInt(1_500);
                    pending.add(CompletableFuture.runAsync(() -> {
                        sleep(pause);
                        victim.process.startProcess();
                        groupChanges.incrementAndGet();
                        log("restarted it as " + victim.process.pid());
                        victim.busy = false;
                    }, background));
                } else if (action == 3 && !joiner.busy && joiner.process == null) {
                    joiner.busy = true;
                    pending.add(CompletableFuture.runAsync(() -> {
                        joiner.process = started(ServiceProcess.start("kafka-chaos-c", config));
                        groupChanges.incrementAndGet();
                        log("a third member joined: " + joiner.process.pid());
                        joiner.busy = false;
                    }, background));
                } else if (action == 4 && !joiner.busy && joiner.process != null) {
                    joiner.busy = true;
                    pending.add(CompletableFuture.runAsync(() -> {
                        int code = joiner.process.terminate(Duration.ofSeconds(40));
                        joiner.process.close();
                        joiner.process = null;
                        groupChanges.incrementAndGet();
                        log("the third member left (SIGTERM, exit " + code + ")");
                        joiner.busy = false;
                    }, background));
                } else {
                    stripe.setLatencyMillis(random.nextInt(400));
                }
            }
            lostCommits.stop.set(true);
            losing.join();
            CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new)).join();
            producer.stop.set(true);
            producing.join();
            stripe.setLatencyMillis(0);
            if (joiner.process != null) {
                joiner.process.terminate(Duration.ofSeconds(40));
                joiner.process.close();
            }
            log("chaos over: " + producer.sent.get() + " records sent (" + producer.commands.size() + " commands, "
                    + producer.resends.get() + " resent by the 'retrying producer', " + producer.mismatches.size()
                    + " event ids reused with another body, " + producer.poison.get() + " poison); settling");

            long settleDeadline = System.nanoTime() + Duration.ofSeconds(180).toNanos();
            long total = kafka.endTotal("commands");
            while (System.nanoTime() < settleDeadline) {
                // The database's offsets too: a partition whose commits were lost is read again up to its end.
                if (kafka.committedTotal(GROUP, "commands") == total && storedTotal(jdbc) == total
                        && count(jdbc, "SELECT count(*) FROM stripe_intents WHERE status = 'processing'") == 0
                        && count(jdbc, "SELECT count(*) FROM kafka_outbox WHERE sent_at IS NULL") == 0) {
                    break;
                }
                Thread.sleep(500);
            }
            audit(jdbc, stripe, kafka, producer, lostCommits, total);
            if (kills.get() < minKills) {
                violations.add("only " + kills.get() + " kill -9s (minimum " + minKills + "): the run proved too little");
            }
            if (groupChanges.get() < minGroupChanges) {
                violations.add("only " + groupChanges.get() + " group changes (minimum " + minGroupChanges + ")");
            }
            if (lostCommits.count() < minLostCommits) {
                violations.add("only " + lostCommits.count() + " lost commits (minimum " + minLostCommits + ")");
            }
            lostCommits.failures.forEach(f -> violations.add("a fault switch failed: " + f));
            for (Member member : members) {
                member.process.close();
            }
            log("faults: " + kills.get() + " kill -9, " + groupChanges.get() + " group changes (kills, restarts, joins, leaves), "
                    + lostCommits.count() + " lost commits");
            log(lostCommits.summary());
        }
        if (violations.isEmpty()) {
            log("AUDIT PASSED: every command charged exactly once, every result published and equal to its row, every lost"
                    + " command read again and finished under its one charge id");
            return 0;
        }
        log("AUDIT FAILED: " + violations.size() + " violation(s)");
        violations.stream().limit(50).forEach(v -> log("  - " + v));
        return 1;
    }

    static Map<String, String> serviceConfig(String jdbc, StripeSandbox stripe, KafkaBroker broker) {
        Map<String, String> config = new LinkedHashMap<>();
        config.put("quarkus.datasource.jdbc.url", jdbc);
        config.put("quarkus.datasource.username", "postgres");
        config.put("quarkus.datasource.password", "postgres");
        config.put("chargeonce.stripe.api-key", "sk_test_sandbox");
        config.put("chargeonce.stripe.api-base", stripe.baseUrl());
        config.put("chargeonce.auth.clients", "nobody:" + "0".repeat(64));
        config.putAll(dev.chargeonce.testing.TestKeys.config());
        config.put("chargeonce.reconciliation.enabled", "false");
        config.put("chargeonce.recovery.interval", "1s");
        // A short lease (and Stripe timeouts that fit in it): takeovers after a kill within seconds.
        config.put("chargeonce.idempotency.lease", "6000ms");
        config.put("chargeonce.stripe.connect-timeout", "500ms");
        config.put("chargeonce.stripe.read-timeout", "3000ms");
        config.put("dev.chargeonce.stripe.StripeApi/create/Retry/maxRetries", "0");
        config.put("dev.chargeonce.stripe.StripeApi/createRefund/Retry/maxRetries", "0");
        config.put("chargeonce.kafka.enabled", "true");
        config.put("chargeonce.kafka.bootstrap-servers", broker.bootstrapServers());
        config.put("chargeonce.kafka.commands-topic", "commands");
        config.put("chargeonce.kafka.results-topic", "results");
        config.put("chargeonce.kafka.dead-letter-topic", "dead-letters");
        config.put("chargeonce.kafka.group-id", GROUP);
        config.put("chargeonce.kafka.client-id", CLIENT);
        config.put("chargeonce.kafka.max-poll-records", "10");
        config.put("chargeonce.kafka.client.\"session.timeout.ms\"", "6000");
        config.put("chargeonce.kafka.client.\"heartbeat.interval.ms\"", "1000");
        return config;
    }

    /** A producer that retries like real ones do: the same record again, at once or a little later. */
    static final class Producer implements Runnable {
        final KafkaTestClients kafka;
        final Random random;
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicInteger sent = new AtomicInteger();
        final AtomicInteger resends = new AtomicInteger();
        final AtomicInteger poison = new AtomicInteger();
        /** event id → body of every valid command */
        final Map<String, String> commands = new LinkedHashMap<>();
        /** event ids reused with another body */
        final List<String> mismatches = new ArrayList<>();
        final List<String> later = new ArrayList<>();

        Producer(KafkaTestClients kafka, Random random) {
            this.kafka = kafka;
            this.random = random;
        }

        @Override
        public void run() {
            int n = 0;
            while (!stop.get()) {
                int roll = random.nextInt(100);
                if (roll < 3) {
                    kafka.send("commands", "evt-poison-" + n, roll == 0 ? "{not json" : "{\"amount\":0,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}");
                    poison.incrementAndGet();
                } else if (roll < 5 && !commands.isEmpty()) {
                    List<String> ids = new ArrayList<>(commands.keySet());
                    String reused = ids.get(random.nextInt(ids.size()));
                    kafka.send("commands", reused, body(99_999, "other-" + n, "pm_card_visa"));
                    mismatches.add(reused);
                } else if (roll < 15 && !later.isEmpty()) {
                    String again = later.remove(random.nextInt(later.size()));
                    kafka.send("commands", again, commands.get(again));
                    resends.incrementAndGet();
                } else {
                    String event = "evt-" + n + "-" + Long.toHexString(random.nextLong());
                    String body = body(100 + random.nextInt(5_000), "O-" + n, random.nextInt(10) == 0 ? "pm_card_chargeDeclined" : "pm_card_visa");
                    commands.put(event, body);
                    kafka.send("commands", event, body);
                    if (random.nextInt(5) == 0) {
                        kafka.send("commands", event, body);   // retried at once (the ack was lost)
                        resends.incrementAndGet();
                        sent.incrementAndGet();
                    }
                    if (random.nextInt(5) == 0) {
                        later.add(event);                       // retried later
                    }
                }
                sent.incrementAndGet();
                n++;
                try {
                    Thread.sleep(20 + random.nextInt(60));
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        static String body(long amount, String order, String paymentMethod) {
            return "{\"amount\":" + amount + ",\"currency\":\"usd\",\"payment_method\":\"" + paymentMethod
                    + "\",\"metadata\":{\"order_id\":\"" + order + "\"}}";
        }
    }

    void audit(String jdbc, StripeSandbox stripe, KafkaTestClients kafka, Producer producer, KafkaLostCommits lostCommits,
               long total) throws Exception {
        long committed = kafka.committedTotal(GROUP, "commands");
        check(committed == total, "the group acknowledged " + committed + " of " + total + " records (lost or stuck)");
        long stored = storedTotal(jdbc);
        check(stored == total, "the database's offsets acknowledge " + stored + " of " + total + " records (lost commits not read again)");
        Map<String, String[]> rows = new HashMap<>();
        try (Connection c = DriverManager.getConnection(jdbc, "postgres", "postgres"); PreparedStatement ps = c.prepareStatement(
                "SELECT idempotency_key, id, status, response_status, response_body, client_id FROM stripe_intents")) {
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    check(CLIENT.equals(rs.getString(6)), "a row of another client: " + rs.getString(2));
                    check(rows.put(rs.getString(1), new String[]{rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5)}) == null,
                            "two rows for event " + rs.getString(1));
                }
            }
        }
        check(rows.keySet().equals(producer.commands.keySet()), "rows " + rows.size() + " for " + producer.commands.size()
                + " commands; without a row: " + diff(producer.commands.keySet(), rows.keySet()) + "; rows of no command: "
                + diff(rows.keySet(), producer.commands.keySet()));

        // Results, deduplicated by charge id: exactly one distinct result per charge, equal to the row's answer. A
        // command whose row a lost commit took has its row made again by the record's second reading: under the same
        // charge id, the same answer but for the new row's creation time (`created`), so those are compared without it.
        Map<String, Set<String>> byCharge = new HashMap<>();
        Map<String, Set<String>> byChargeSansCreated = new HashMap<>();
        // Every charge id the topic names for a command: exactly one, the row's (also across lost commits).
        Map<String, Set<String>> chargeIdsOfEvent = new HashMap<>();
        Map<String, Integer> refusedByEvent = new TreeMap<>();
        // What a compacted results topic keeps (or a consumer keeping the latest record per key): the latest per key.
        Map<String, JsonNode> latestByKey = new HashMap<>();
        int published = 0;
        for (KafkaTestClients.Message m : kafka.readAll("results")) {
            published++;
            JsonNode result = JSON.readTree(m.value());
            latestByKey.put(m.key(), result);   // one key, one partition, read in offset order
            String kind = m.headers().get("chargeonce-result-kind");
            if (result.get("charge_id").isNull()) {
                check(result.get("status").asInt() == 422, "a result without charge id that is not a 422: " + m.value());
                check("refusal".equals(kind), "a 422 whose kind is " + kind);
                check(m.key().startsWith(result.get("event_id").asText() + "\trefused\tkafka:commands-"),
                        "a refusal not keyed apart from its event id: " + m.key());
                refusedByEvent.merge(result.get("event_id").asText(), 1, Integer::sum);
            } else {
                check(result.get("event_id").asText().equals(m.key()), "a charge's result keyed by another event id");
                check("outcome".equals(kind) || "accepted".equals(kind), "a charge's result of kind " + kind + ": " + m.value());
                String chargeId = result.get("charge_id").asText();
                byCharge.computeIfAbsent(chargeId, k -> new HashSet<>())
                        .add(result.get("status").asInt() + " " + JSON.readTree(result.get("body").toString()));
                byChargeSansCreated.computeIfAbsent(chargeId, k -> new HashSet<>())
                        .add(sansCreated(result.get("status").asInt(), result.get("body").toString()));
                chargeIdsOfEvent.computeIfAbsent(m.key(), k -> new HashSet<>()).add(chargeId);
            }
        }
        int charged = 0;
        Set<String> lost = lostCommits.lostByEvent().keySet();
        int lostWithTwoCreated = 0;   // lost commands whose results before and after the loss differ in `created`
        for (Map.Entry<String, String> command : producer.commands.entrySet()) {
            String event = command.getKey();
            String[] row = rows.get(event);
            List<StripeSandbox.PaymentIntent> intents = stripe.intentsForKey(dev.chargeonce.testing.TestKeys.identity(CLIENT, event));
            check(intents.size() == 1, event + ": " + intents.size() + " PaymentIntents");
            if (row == null) {
                continue;
            }
            check(!row[1].equals("processing"), event + ": still processing after the settle phase");
            check(chargeIdsOfEvent.getOrDefault(event, Set.of()).equals(Set.of(row[0])), event + ": the results topic names charge ids "
                    + chargeIdsOfEvent.get(event) + ", its row " + row[0]);
            boolean wasLost = lost.contains(event);
            Set<String> results = (wasLost ? byChargeSansCreated : byCharge).getOrDefault(row[0], Set.of());
            if (wasLost && byCharge.getOrDefault(row[0], Set.of()).size() > 1) {
                lostWithTwoCreated++;
            }
            check(results.size() == 1, event + " (" + row[0] + "): " + results.size() + " distinct results after dedup"
                    + (wasLost ? " (but for `created`: its row was lost and made again)" : "") + ": " + results);
            if (row[3] != null) {
                String expected = row[2] + " " + JSON.readTree(row[3]);
                check(results.contains(wasLost ? sansCreated(Integer.parseInt(row[2]), row[3]) : expected),
                        event + ": the published result is not the row's answer");
                JsonNode kept = latestByKey.get(event);
                check(kept != null && row[0].equals(kept.get("charge_id").asText())
                        && expected.equals(kept.get("status").asInt() + " " + kept.get("body")),
                        event + ": the latest record under its event id (what compaction keeps) is not its outcome: " + kept);
                if (intents.size() == 1) {
                    check(row[3].contains(intents.get(0).id()), event + ": the answer does not name the PaymentIntent");
                }
            }
            if (row[1].equals("completed")) {
                charged++;
            }
        }
        Set<String> rowIds = new HashSet<>();
        rows.values().forEach(r -> rowIds.add(r[0]));
        check(rowIds.containsAll(byCharge.keySet()), "results for charges no row has: " + diff(byCharge.keySet(), rowIds));
        check(stripe.ledger().size() == producer.commands.size(), stripe.ledger().size() + " PaymentIntents at Stripe for "
                + producer.commands.size() + " commands");
        Map<String, Integer> expectedRefused = new TreeMap<>();
        producer.mismatches.forEach(e -> expectedRefused.merge(e, 1, Integer::sum));
        long distinctRefusals = count(jdbc, "SELECT count(*) FROM kafka_outbox WHERE charge_id IS NULL");
        check(distinctRefusals == producer.mismatches.size(), distinctRefusals + " refusals queued for "
                + producer.mismatches.size() + " records reusing an event id");
        for (Map.Entry<String, Integer> e : expectedRefused.entrySet()) {
            check(refusedByEvent.getOrDefault(e.getKey(), 0) >= e.getValue(), e.getKey() + ": fewer 422 results than reuses");
        }
        Set<String> letters = new HashSet<>();
        for (KafkaTestClients.Message m : kafka.readAll("dead-letters")) {
            check(m.headers().get("chargeonce-dead-letter-reason") != null, "a dead letter without a reason");
            letters.add(m.headers().get("chargeonce-original-partition") + "@" + m.headers().get("chargeonce-original-offset"));
        }
        check(letters.size() == producer.poison.get(), letters.size() + " dead-lettered records for " + producer.poison.get() + " poison");
        lostCommits.audit(rows, chargeIdsOfEvent, this::check);
        log("audit: " + producer.commands.size() + " commands, " + charged + " charged (the rest declined), "
                + stripe.ledger().size() + " PaymentIntents, " + published + " results published for " + byCharge.size()
                + " charges (" + (published - byCharge.size() - refusedByEvent.values().stream().mapToInt(Integer::intValue).sum())
                + " published twice; " + lostWithTwoCreated + " lost commands' results differ in `created` only, before and"
                + " after the loss), " + distinctRefusals + " refusals, " + letters.size() + " dead letters");
    }

    /** A result as a row made again after a lost commit must repeat it: all but the creation time. */
    static String sansCreated(int status, String body) throws java.io.IOException {
        JsonNode node = JSON.readTree(body);
        if (node instanceof com.fasterxml.jackson.databind.node.ObjectNode object) {
            object.remove("created");
        }
        return status + " " + node;
    }

    void check(boolean ok, String violation) {
        if (!ok) {
            violations.add(violation);
        }
    }

    static Set<String> diff(Set<String> a, Set<String> b) {
        Set<String> d = new HashSet<>(a);
        d.removeAll(b);
        return d.size() > 10 ? Set.of(d.size() + " ids") : d;
    }

    /** The group's offsets the database has stored, summed over the commands topic's partitions. */
    static long storedTotal(String jdbc) {
        return count(jdbc, "SELECT coalesce(sum(next_offset), 0) FROM kafka_offsets WHERE group_id = '" + GROUP + "' AND topic = 'commands'");
    }

    static long count(String jdbc, String sql) {
        try (Connection c = DriverManager.getConnection(jdbc, "postgres", "postgres"); PreparedStatement ps = c.prepareStatement(sql);
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        } catch (Exception e) {
            return -1;
        }
    }
}

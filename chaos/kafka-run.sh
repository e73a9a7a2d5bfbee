#!/usr/bin/env bash
# chargeonce Kafka chaos run: one command (see README "Chaos" and "Kafka ingress").
#
#   chaos/kafka-run.sh [--duration 45s] [--seed N] [--min-kills 3] [--min-group-changes 8] [--min-lost-commits 2]
#
# A real Kafka broker (single-node KRaft, from Maven Central, on loopback), a PostgreSQL 15 (bench/lib.sh start_pg,
# as every script starts one), the Stripe stand-in, and two to three instances of the packaged service in one consumer
# group. A producer retries (the same event id again, at once or later), reuses event ids for other payments and
# sends poison records, while the harness kill -9s and restarts members, has a third member join and leave
# (rebalances), slows Stripe down so that kills land between the claim and Stripe's answer, and loses commits (what
# a failover to an asynchronous standby leaves: a partition's last rows, their results and its stored offset gone
# from the database, Kafka's committed offset left ahead). Then the audit: one row and one PaymentIntent per command,
# none beyond, every record acknowledged, one distinct result per charge after dedup by charge id and equal to its
# row, one charge id per command on the results topic (a lost command's before and after its loss alike), every lost
# command read again and finished, a 422 per reused event id, a dead letter per poison record. Exits non-zero on any
# violation, or when the run injected fewer kills, group changes or lost commits than the minimums.
# Starts everything on 127.0.0.1 and stops everything it started, nothing else.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
source bench/lib.sh
trap cleanup_started EXIT
pick_java
pick_postgres

SERVICE_JAR=target/quarkus-app/quarkus-run.jar
APP_JAR=target/quarkus-app/app/chargeonce-1.0.0-SNAPSHOT.jar
# The Stripe stand-in is a jar of its own (the prod package does not carry it).
SANDBOX_JAR=target/chargeonce-1.0.0-SNAPSHOT-sandbox.jar
if [ ! -f "$SERVICE_JAR" ] || [ ! -f "$APP_JAR" ] || [ ! -f "$SANDBOX_JAR" ]; then
  log "building the service package"
  ./mvnw -B -ntp -q -Dmaven.test.skip=true package
fi
RESULTS="$ROOT/chaos/results/kafka-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$RESULTS/classes"
# The test classpath (kafka-clients, the JDBC driver, Jackson), the app jar (KeyIdentities) and the Stripe
# stand-in's jar, with the test suite's broker launcher, Kafka clients, service launcher and database helpers, and
# what the chaos runs share (chaos/Harness.java).
./mvnw -B -ntp -q dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$RESULTS/test-classpath.txt" >/dev/null
CP="$(cat "$RESULTS/test-classpath.txt"):$ROOT/$APP_JAR:$ROOT/$SANDBOX_JAR"
javac --release 21 -nowarn -d "$RESULTS/classes" -cp "$CP" chaos/KafkaChaos.java chaos/KafkaLostCommits.java chaos/Harness.java \
  src/test/java/dev/chargeonce/testing/KafkaBroker.java src/test/java/dev/chargeonce/testing/KafkaTestClients.java \
  src/test/java/dev/chargeonce/testing/ServiceProcess.java src/test/java/dev/chargeonce/testing/TestPostgres.java \
  src/test/java/dev/chargeonce/testing/TestKeys.java src/test/java/dev/chargeonce/testing/FreePorts.java

# The database: the scripts' PostgreSQL (what chaos/run.sh and bench/run.sh start too), set up as the test suite's
# own server is (no fsync, no waiting for the WAL at commit: the run audits the service, not the disk).
make_work_dir chargeonce-kafka-chaos
PG_PORT=$(free_port)
start_pg primary "$PG_PORT" "max_connections = 300" "fsync = off" "synchronous_commit = off" "log_min_messages = warning"
log "Kafka chaos: PostgreSQL on 127.0.0.1:$PG_PORT; results and process logs in $RESULTS (service logs in target/process-logs/kafka-chaos-*)"
set +e
java -Xmx768m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$RESULTS/classes:$CP" chaos.KafkaChaos --work "$RESULTS" \
  --pg-port "$PG_PORT" "$@" 2>&1 | grep --line-buffered -v -E '^(WARNING|SLF4J|org.slf4j)' | tee "$RESULTS/summary.log"
status=${PIPESTATUS[0]}
set -e
exit $status

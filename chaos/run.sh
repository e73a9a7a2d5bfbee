#!/usr/bin/env bash
# chargeonce chaos run: one command (see README "Chaos").
#
#   chaos/run.sh [--duration 180s] [--naive-duration D] [--instances 2] [--clients 24] [--seed N]
#                [--no-naive] [--allow-naive-without-duplicates] [--min-faults 15] [--min-payments 50]
#                [--lookup-skew 10s] [--citus]
#                [--catch-up-page-size 100] [--catch-up-max-pages 1000] [--catch-up-overlap 10s]
#                [--require-catch-up-overflow] [--stripe-rate-limit N]
#
# Clients with many logical payments (random timeouts and retries, concurrent duplicates, a key reused with
# another body now and then) against --instances packaged service processes sharing one PostgreSQL primary,
# while the harness kill -9s / SIGTERMs and restarts instances, cuts their database connections through TCP
# proxies it owns, deletes recently finished rows (lost commits), and switches the Stripe stand-in's faults
# (latency spikes, requests that keep running after the client gave up, edge 502s, 500 before and after charging,
# dropped connections, 429) and its webhook deliveries to the instances (duplicates, reordering, outages), while
# customers complete or fail 3-D Secure, and clients refund some of their charges (full, partial, several at once
# from both instances, more than the charge in all). Then the faults stop, recovery finishes, the charges' states
# settle, and the audit compares clients, rows, every charge's state and Stripe, and every refund with Stripe's (at most
# one per refund key, never more than the charge). The same chaos (no webhooks, no refunds: the control has neither)
# then runs against the deliberately naive check-then-act control (chaos/NaiveService.java)
# whose lookups go to a streaming replica 2 s behind. Prints both side by side; exits non-zero on any duplicate,
# loss, inconsistent answer, charge state unlike Stripe's, refund made twice or over its charge of chargeonce, on a
# fault switch that failed, on fewer faults or settled payments than the minimums (or a kind of fault missing from a
# run of 60 s or more, or no refund made, refused amount_too_large or asked at once in such a run), and when
# the control shows no duplicate (unless --allow-naive-without-duplicates; --require-naive-duplicates, the default,
# is still accepted).
# The service's event catch-up reads Stripe's events in passes of --catch-up-max-pages pages of --catch-up-page-size;
# made smaller than the window (the CI run), a pass stops on its budget and the next goes on from its place;
# --require-catch-up-overflow fails a run in which no pass did (it would not have tested that).
# With --stripe-rate-limit N the stand-in limits PaymentIntent creates and refunds to N in any one second and
# answers 429 beyond, as Stripe does, and the instances' shared rate budget is set to 80% of it.
# With --citus (scale/citus/run.sh), the instances run on a Citus coordinator with two workers instead of one
# primary (the service's migrations distribute its tables), without a replica and without the control (both are
# about a lagging replica); Citus is built when it is missing (bench/lib.sh need_citus).
# Starts everything on 127.0.0.1 and stops everything it started, nothing else.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
source bench/lib.sh

DURATION=180s
NAIVE_DURATION=""
INSTANCES=2
CLIENTS=24
SEED=$(( $(date +%s) ))
NAIVE=1
# The control must show duplicates, or the audit proved nothing: on by default.
REQUIRE_NAIVE=true
MIN_FAULTS=15
# A 60 s run settles 140-800 payments and injects 30-45 faults on this 2-core machine (instances take 5-12 s to
# restart); the 30 s control about 20 faults. The minimums catch a run in which the chaos or the clients stalled.
MIN_PAYMENTS=50
REPLICA_DELAY_MS=2000
# chargeonce.stripe.lookup-skew for the instances: the stand-in shares this host's clock (see README "Chaos").
LOOKUP_SKEW=10s
CITUS=0
CATCH_UP_PAGE_SIZE=100
CATCH_UP_MAX_PAGES=1000
CATCH_UP_OVERLAP=10s
REQUIRE_CATCH_UP_OVERFLOW=false
STRIPE_RATE_LIMIT=0
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="$2"; shift 2 ;;
    --naive-duration) NAIVE_DURATION="$2"; shift 2 ;;
    --instances) INSTANCES="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --no-naive) NAIVE=0; shift ;;
    --require-naive-duplicates) REQUIRE_NAIVE=true; shift ;;
    --allow-naive-without-duplicates) REQUIRE_NAIVE=false; shift ;;
    --min-faults) MIN_FAULTS="$2"; shift 2 ;;
    --min-payments) MIN_PAYMENTS="$2"; shift 2 ;;
    --lookup-skew) LOOKUP_SKEW="$2"; shift 2 ;;
    --citus) CITUS=1; NAIVE=0; shift ;;
    --catch-up-page-size) CATCH_UP_PAGE_SIZE="$2"; shift 2 ;;
    --catch-up-max-pages) CATCH_UP_MAX_PAGES="$2"; shift 2 ;;
    --catch-up-overlap) CATCH_UP_OVERLAP="$2"; shift 2 ;;
    --require-catch-up-overflow) REQUIRE_CATCH_UP_OVERFLOW=true; shift ;;
    --stripe-rate-limit) STRIPE_RATE_LIMIT="$2"; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) die "unknown option $1" ;;
  esac
done
NAIVE_DURATION="${NAIVE_DURATION:-$DURATION}"
RESULTS="$ROOT/chaos/results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$RESULTS"

cleanup() {
  [ -n "$WORK_DIR" ] && kill_recorded_children "$WORK_DIR/children.pids"
  cleanup_started
}
trap cleanup EXIT
pick_java
pick_postgres

SERVICE_JAR=target/quarkus-app/quarkus-run.jar
# The Stripe sandbox runs as a process of its own, from its own jar: the prod package does not carry it.
SANDBOX_JAR=target/chargeonce-1.0.0-SNAPSHOT-sandbox.jar
if [ ! -f "$SERVICE_JAR" ] || [ ! -f "$SANDBOX_JAR" ]; then
  log "building the service package"
  # The package only: the chaos run needs no test classes, so it does not compile them either.
  ./mvnw -B -ntp -q -Dmaven.test.skip=true package
fi
PGJDBC=$(ls target/quarkus-app/lib/main/org.postgresql.postgresql-*.jar | head -1)

make_work_dir chargeonce-chaos
mkdir -p "$WORK_DIR/classes"
# The harness (package chaos: every chaos/*.java but the Kafka run's, which needs the Kafka clients and has
# chaos/kafka-run.sh) with the test suite's JDK-only service launcher, TCP proxy and API clients
# (src/test/.../testing), not copies of them.
CHAOS_SOURCES=()
for source in chaos/*.java; do
  case "$source" in chaos/Kafka*.java) ;; *) CHAOS_SOURCES+=("$source") ;; esac
done
javac --release 21 -d "$WORK_DIR/classes" -cp "$PGJDBC" "${CHAOS_SOURCES[@]}" \
  src/test/java/dev/chargeonce/testing/ServiceProcess.java src/test/java/dev/chargeonce/testing/FreePorts.java \
  src/test/java/dev/chargeonce/testing/TcpProxy.java src/test/java/dev/chargeonce/testing/TestClients.java

PG_PORT=$(free_port); REPLICA_PORT=$(free_port)
SERVICE_REPLICA=false
if [ "$CITUS" = 1 ]; then
  need_citus
  W1=$(free_port); W2=$(free_port)
  log "Citus: coordinator on 127.0.0.1:$PG_PORT, workers on :$W1 and :$W2 (no replica, no control)"
  start_citus citus chargeonce "$PG_PORT" "$W1" "$W2"
  REPLICA_PORT=0
else
  log "PostgreSQL 15 primary on 127.0.0.1:$PG_PORT, lagging replica on :$REPLICA_PORT (${REPLICA_DELAY_MS} ms behind)"
  start_pg primary "$PG_PORT" "synchronous_commit = on" "max_connections = 300" "wal_level = replica" "max_wal_senders = 4" \
    "log_min_messages = warning"
  psql_at "$PG_PORT" postgres -c "CREATE DATABASE chargeonce" -c "CREATE DATABASE naive"
  start_lagging_replica replica "$PG_PORT" "$REPLICA_PORT" "${REPLICA_DELAY_MS}ms"
  # The service reads from the replica only when it has a `replica` datasource; without one the replica serves the
  # naive control alone, and the service runs on the primary only.
  if grep -q '^quarkus\.datasource\.replica\.' src/main/resources/application.properties; then
    SERVICE_REPLICA=true
  fi
fi
log "service uses the replica datasource: $SERVICE_REPLICA"

# The harness runs in the background so that a SIGINT/SIGTERM to this script reaches it at once (bash defers traps
# while a foreground child runs); it kills its own children on the way out, then the EXIT trap cleans up the rest.
HARNESS_PID=""
stop_harness() { [ -n "$HARNESS_PID" ] && kill -TERM "$HARNESS_PID" 2>/dev/null; wait "$HARNESS_PID" 2>/dev/null; exit 130; }
trap stop_harness INT TERM
set +e
java -cp "$WORK_DIR/classes:$PGJDBC" chaos.Chaos \
  --work "$WORK_DIR" --results "$RESULTS" \
  --service-jar "$SERVICE_JAR" --sandbox-jar "$SANDBOX_JAR" --naive-classpath "$WORK_DIR/classes:$PGJDBC" \
  --pg-port "$PG_PORT" --replica-port "$REPLICA_PORT" --replica-delay-ms "$REPLICA_DELAY_MS" \
  --service-replica "$SERVICE_REPLICA" --duration "$DURATION" --naive-duration "$NAIVE_DURATION" \
  --instances "$INSTANCES" --clients "$CLIENTS" --seed "$SEED" --skip-naive "$([ "$NAIVE" = 1 ] && echo false || echo true)" \
  --require-naive-duplicates "$REQUIRE_NAIVE" --min-faults "$MIN_FAULTS" --min-payments "$MIN_PAYMENTS" \
  --lookup-skew "$LOOKUP_SKEW" --catch-up-page-size "$CATCH_UP_PAGE_SIZE" --catch-up-max-pages "$CATCH_UP_MAX_PAGES" \
  --catch-up-overlap "$CATCH_UP_OVERLAP" \
  --require-catch-up-overflow "$REQUIRE_CATCH_UP_OVERFLOW" --stripe-rate-limit "$STRIPE_RATE_LIMIT" &
HARNESS_PID=$!
wait "$HARNESS_PID"
status=$?
HARNESS_PID=""
set -e
log "results, process logs and audit evidence: $RESULTS"
exit $status

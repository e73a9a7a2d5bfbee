#!/usr/bin/env bash
# chargeonce benchmark: one command, everything measured side by side in the same run (see README "Benchmarks").
#
#   bench/run.sh [--duration 10s] [--with-10m] [--quick] [--out DIR]
#
#   --duration D   length of each measurement (default 10s; the whole default run takes about 10 minutes)
#   --with-10m     growth scenario also at 10 million rows (adds about 6 minutes: an 8 GB bulk load)
#   --quick        smoke run: 3 s per measurement (refunds included), growth up to 100k rows only
#   --out DIR      where raw results and report.md go (default bench/results/<timestamp>)
#   --profile      after the warm-up, profile the service with async-profiler (CPU and allocations, flame graphs
#                  as HTML in the results) under new charges and under replays at concurrency 32, and its CPU under
#                  scenario 4 (slow Stripe, the most requests in flight), then stop
#   --focus        after the warm-up, only the cost of exactly-once: new charges (service, pass-through, and the
#                  floor: the pass-through plus a committed claim and finish) and replays at concurrency 32, with CPU
#                  per request of each process, then stop (a few minutes)
#   --service-jar J  measure another build of the service (its quarkus-run.jar), e.g. an earlier commit's
#   --versus-jar J with --focus: also start that build of the service beside this one (same database, same stand-in)
#                  and measure both in the same rounds, interleaved: a change's effect without the drift between runs;
#                  odd rounds measure this build first, even rounds the other (on this machine the first place in a
#                  round costs more, whichever build has it: run an even number of rounds)
#   --rounds N     with --focus or --slow: rounds of measurements (default 2)
#   --focus-concurrency C   with --focus: the concurrency of its runs (default 32; 1 measures the added latency)
#   --slow         after the warm-up, only scenario 4 (slow Stripe) at its largest number in flight: service,
#                  pass-through (and --versus-jar's build), with CPU per charge of each process and the statements
#                  PostgreSQL ran, interleaved in rounds, and each service's zero-latency rate at concurrency 16
#                  in the same round (the goal's denominator), then stop
#   SERVICE_OPTS   (environment) more JVM options for the service only, e.g. a setting to compare
#   VERSUS_OPTS    (environment) more JVM options for --versus-jar's service only (the same jar, another setting)
#   --soak D       only new charges at concurrency 16 for D (e.g. 15m) against a PostgreSQL with default settings,
#                  minute by minute: throughput, latency, CPU per charge, WAL per charge, the service's memory and the
#                  table's size; soak.md and soak.svg in the results
#
# It starts, on 127.0.0.1 only, a fresh PostgreSQL 15 (synchronous_commit=on), the Stripe stand-in in its own
# process, the packaged service and the pass-through baseline, drives them with wrk over real HTTP (charges and
# refunds), runs pgbench with the service's own statements, prints the tables, and stops everything it started
# (and nothing else).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
source bench/lib.sh

DURATION=10
PROFILE=0
SLOW_ONLY=0
FOCUS_C=32
FOCUS=0
SOAK_MINUTES=0
SERVICE_JAR_ARG=""
VERSUS_JAR=""
ROUNDS=2
WITH_10M=0
QUICK=0
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="${2%s}"; shift 2 ;;
    --with-10m) WITH_10M=1; shift ;;
    --quick) QUICK=1; DURATION=3; shift ;;
    --out) OUT="$2"; shift 2 ;;
    --profile) PROFILE=1; shift ;;
    --focus) FOCUS=1; shift ;;
    --slow) SLOW_ONLY=1; shift ;;
    --focus-concurrency) FOCUS_C="$2"; shift 2 ;;
    --soak) SOAK_MINUTES="${2%m}"; shift 2 ;;
    --service-jar) SERVICE_JAR_ARG="$2"; shift 2 ;;
    --versus-jar) VERSUS_JAR="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^# It starts/ {exit} NR > 1' "$0"; exit 0 ;;
    *) die "unknown option $1" ;;
  esac
done
CONCURRENCY=(1 16 64 256)
SLOW_INFLIGHTS=(200 2000)   # the last one is scenario 4's target
SLOW_LATENCY_MS=300
SLOW_PEAK_CONCURRENCY=16     # --slow: the zero-latency rate scenario 4 is measured against (the full run's peak)
GROWTH_C=16
# The heap of the image (Dockerfile.jvm): 256 MiB from the start, none of it ever given back (as the image does it: an
# initial size and MaxHeapFreeRatio=100, not -Xms). Left to size itself, G1 shrank it to ~80 MiB under light load and
# paid for that in CPU per request (README, "a heap of fixed size"). The pass-through runs the same.
SERVICE_JVM="-Xmx256m -XX:InitialHeapSize=256m -XX:MaxHeapFreeRatio=100"
REFUND_AMOUNT=1              # cents per refund: partial refunds, many of them fit on one charge
REFUND_REPLAY_POOL=2000      # finished refunds rbulk-0..1999 (bench/sql/bulk_refunds.sql), replayed
PGB_REFUND_CHARGES=100000    # charges the pgbench refund reference spreads its refunds over
HOT_CHARGE_AMOUNT=99999999   # the hot charges: the largest amount, room for every refund of a run
API_KEY="sk_bench_0123456789"
# The key-hash secret (version 1) the service is given: bench/sql computes the same identities for the rows it loads.
KEY_SECRET="Y2hhcmdlb25jZSBiZW5jaCBrZXkgaGFzaCBzZWNyZXQsIHYx"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"

trap cleanup_started EXIT
pick_java
pick_postgres
need_wrk
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

# ---- build what is missing ------------------------------------------------------------------------------------
SERVICE_JAR=target/quarkus-app/quarkus-run.jar
SANDBOX_JAR=target/chargeonce-1.0.0-SNAPSHOT-sandbox.jar   # the Stripe sandbox: not in the prod package
PASSTHROUGH_JAR=bench/passthrough/target/quarkus-app/quarkus-run.jar
if [ ! -f "$SERVICE_JAR" ] || [ ! -f "$SANDBOX_JAR" ] \
   || [ -n "$(find src/main pom.xml -newer "$SERVICE_JAR" -print -quit)" ]; then
  log "building the service package"
  ./mvnw -B -ntp -q -DskipTests package
fi
if [ ! -f "$PASSTHROUGH_JAR" ] || [ -n "$(find bench/passthrough/src bench/passthrough/pom.xml -newer "$PASSTHROUGH_JAR" -print -quit)" ]; then
  log "building the pass-through baseline (bench/passthrough)"
  ./mvnw -B -ntp -q -f bench/passthrough/pom.xml -DskipTests package
fi

make_work_dir chargeonce-bench
# pgbench runs the store's statements as the package runs them: the package writes them out (StatementCatalog).
java -cp "target/quarkus-app/app/*:target/quarkus-app/lib/main/*" dev.chargeonce.idempotency.StatementCatalog "$WORK_DIR/statements"
bench_tool pgbench-scripts "$WORK_DIR/statements" "$WORK_DIR/pgbench"
# and the statements of a new charge and of a replay as they were before they were reworked for cost (main as of
# 71fb6c2), for "before / after" side by side
cp bench/sql/before/claim_finish.sql "$WORK_DIR/pgbench/before_claim_finish.sql"
cp bench/sql/before/replay.sql "$WORK_DIR/pgbench/before_replay.sql"

if [ -n "$SERVICE_JAR_ARG" ]; then
  SERVICE_JAR="$SERVICE_JAR_ARG"
  log "measuring the service built at $SERVICE_JAR"
fi

# ---- processes ------------------------------------------------------------------------------------------------
PG_PORT=$(free_port); STRIPE_PORT=$(free_port); SVC_PORT=$(free_port); PT_PORT=$(free_port)
SVC_MANAGEMENT_PORT=$(free_port)   # the service's health and metrics: its management interface
VS_PORT=$(free_port); VS_MANAGEMENT_PORT=$(free_port)   # --versus-jar's service
log "PostgreSQL 15 on 127.0.0.1:$PG_PORT (work dir $WORK_DIR)"
PG_EXTRA=()
# --focus also counts the statements each request makes PostgreSQL run (pg_stat_statements: a little CPU of its own)
[ "$FOCUS" = 1 ] || [ "$SLOW_ONLY" = 1 ] && PG_EXTRA+=("shared_preload_libraries = 'pg_stat_statements'" "pg_stat_statements.track = all")
if [ "$SOAK_MINUTES" -gt 0 ]; then
  # the soak: PostgreSQL as installed (its default settings), so that what decays with volume shows
  start_pg pg "$PG_PORT" "log_min_messages = warning"
else
  start_pg pg "$PG_PORT" "synchronous_commit = on" "fsync = on" "max_connections = 400" "shared_buffers = 1GB" \
    "max_wal_size = 8GB" "checkpoint_timeout = 15min" "log_min_messages = warning" ${PG_EXTRA[@]+"${PG_EXTRA[@]}"}
fi
psql_at "$PG_PORT" postgres -c "CREATE DATABASE chargeonce"
# hmac() for the identities bench/sql computes (KeyIdentities: HMAC-SHA256 under the secret)
psql_at "$PG_PORT" chargeonce -c "CREATE EXTENSION pgcrypto"
{ [ "$FOCUS" = 1 ] || [ "$SLOW_ONLY" = 1 ]; } && psql_at "$PG_PORT" chargeonce -c "CREATE EXTENSION pg_stat_statements"
# The schema the statements before that rework ran on (bench/sql/before/): the migrations up to V1.7.0 (Flyway's
# files never change once released), in a database of its own on the same server.
psql_at "$PG_PORT" postgres -c "CREATE DATABASE chargeonce_before"
psql_at "$PG_PORT" chargeonce_before -c "CREATE EXTENSION pgcrypto"
# the minimal pair's table (bench/PgbenchScripts.java, minimal_pair.sql): a key and the answer, nothing else
psql_at "$PG_PORT" postgres -c "CREATE DATABASE chargeonce_minimal"
psql_at "$PG_PORT" chargeonce_minimal -c "CREATE TABLE bench_minimal (id text PRIMARY KEY, status text NOT NULL, body text)"
for migration in $(ls src/main/resources/db/migration/V1.[0-7].*__*.sql | sort -V); do
  psql_at "$PG_PORT" chargeonce_before -f "$migration" >/dev/null
done

log "Stripe stand-in on :$STRIPE_PORT"
# The stand-in keeps every PaymentIntent, event and stored answer in memory (a few KB per charge): 2 GB hold the
# default run; a soak of a million charges needs more (with 2 GB it ran out of memory past ~550,000 charges, and the
# collapse of the curve was its garbage collector's, not the service's).
STRIPE_HEAP=$([ "$SOAK_MINUTES" -gt 0 ] && echo 10g || echo 2g)
start_bg "$OUT/stripe.log" java -Xmx"$STRIPE_HEAP" -cp "$SANDBOX_JAR" dev.chargeonce.sandbox.StripeSandbox "$STRIPE_PORT" 0
STRIPE_PID=$LAST_PID
wait_http "http://127.0.0.1:$STRIPE_PORT/_sandbox/stats" 30 "$STRIPE_PID" || die "sandbox did not start"
stripe_faults() { curl -fsS -X POST "http://127.0.0.1:$STRIPE_PORT/_sandbox/faults?$1" >/dev/null; }
stripe_reset() { curl -fsS -X POST "http://127.0.0.1:$STRIPE_PORT/_sandbox/reset" >/dev/null; stripe_faults "latency_ms=${1:-0}"; }

# Reconciliation and the Events API catch-up are off: both page through Stripe's lists of the last day or month, which
# the stand-in (a test tool) walks from the start for every page; past a few hundred thousand charges a pass took most
# of both cores, and the run measured the stand-in. Against Stripe they cost API calls and reads of the service's own
# rows, on their own schedule, not per request.
log "chargeonce on :$SVC_PORT (management interface :$SVC_MANAGEMENT_PORT)"
start_chargeonce "$OUT/service.log" "$SVC_PORT" "$SVC_MANAGEMENT_PORT" "$PG_PORT" "$STRIPE_PORT" "bench:$API_KEY" \
  "$KEY_SECRET" $SERVICE_JVM ${SERVICE_OPTS:-}
SVC_PID=$LAST_PID
VS_PID=$$ # without --versus-jar its CPU column reads the script's own (0)
if [ -n "$VERSUS_JAR" ]; then
  [ "$FOCUS" = 1 ] || [ "$SLOW_ONLY" = 1 ] || die "--versus-jar is for --focus and --slow"
  log "versus: chargeonce built at $VERSUS_JAR on :$VS_PORT (management interface :$VS_MANAGEMENT_PORT)"
  SERVICE_JAR="$VERSUS_JAR" start_chargeonce "$OUT/versus.log" "$VS_PORT" "$VS_MANAGEMENT_PORT" "$PG_PORT" "$STRIPE_PORT" \
    "bench:$API_KEY" "$KEY_SECRET" $SERVICE_JVM ${VERSUS_OPTS:-}
  VS_PID=$LAST_PID
fi

# start_passthrough <name> <port> [more -D options]: the pass-through application (bench/passthrough) on loopback,
# against the Stripe stand-in and the load generator's API key; sets LAST_PID once it answers.
start_passthrough() {
  local name="$1" port="$2"; shift 2
  log "$name on :$port"
  start_bg "$OUT/$name.log" java $SERVICE_JVM -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
    -Dpassthrough.stripe.api-base="http://127.0.0.1:$STRIPE_PORT" -Dpassthrough.client-key-sha256="$(sha256_hex "$API_KEY")" \
    "$@" -jar "$PASSTHROUGH_JAR"
  wait_http "http://127.0.0.1:$port/" 60 "$LAST_PID" any || die "$name did not start, see $OUT/$name.log"
}
PT_PID=$$ # no pass-through in a soak; its CPU column reads the script's own (0)
FL_PID=$$ # nor the floor in a soak, --slow or --profile
if [ "$SOAK_MINUTES" -eq 0 ]; then
  start_passthrough passthrough "$PT_PORT"
  PT_PID=$LAST_PID
fi
FLOOR=1   # the floor runs beside the pass-through in scenario 1 and in --focus
{ [ "$SOAK_MINUTES" -gt 0 ] || [ "$SLOW_ONLY" = 1 ] || [ "$PROFILE" = 1 ]; } && FLOOR=0
if [ "$FLOOR" = 1 ]; then
  # The floor: the pass-through plus the least exactly-once needs (a committed claim before Stripe, a committed finish
  # after, on the minimal pair's table; bench/passthrough, MinimalPair), through the service's pool and driver.
  FL_PORT=$(free_port)
  start_passthrough floor "$FL_PORT" -Dpassthrough.floor.enabled=true \
    -Dquarkus.datasource.jdbc.url="jdbc:postgresql://127.0.0.1:$PG_PORT/chargeonce_minimal"
  FL_PID=$LAST_PID
fi

# ---- how a measurement is taken, the runs of one question, the full run's scenarios ------------------------------
# shellcheck source=bench/measure.sh
source bench/measure.sh
# shellcheck source=bench/modes.sh
source bench/modes.sh
# shellcheck source=bench/scenarios.sh
source bench/scenarios.sh

if [ "$SOAK_MINUTES" -gt 0 ]; then
  soak_run
  exit 0
fi

REFUND_POOL=$(( 2000 * DURATION ))   # charges per new-refunds run: more than it can refund, one refund each
HOT_CHARGES=$(( DURATION + 3 ))      # one hot charge per second of a run

# ---- metadata -----------------------------------------------------------------------------------------------------
{
  echo "started=$(date -u +%Y-%m-%dT%H:%MZ)"
  echo "machine=$(nproc) cores ($(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}')), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM, $(uname -sr)"
  echo "software=$(java -version 2>&1 | head -1); PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') (synchronous_commit=on, shared_buffers=1GB); $(wrk --version 2>&1 | head -1 | awk '{print $1, $2}'); service and pass-through with \`$SERVICE_JVM\`."
  echo "duration=${DURATION}s"
  echo "service_jvm=$SERVICE_JVM"
  echo "slow_inflights=${SLOW_INFLIGHTS[*]}"
  echo "slow_latency_ms=$SLOW_LATENCY_MS"
  echo "growth_concurrency=$GROWTH_C"
  echo "refund_amount=$REFUND_AMOUNT"
  echo "refund_pool=$REFUND_POOL"
  echo "hot_charges=$HOT_CHARGES"
  echo "pgbench_refund_charges=$PGB_REFUND_CHARGES"
} >"$OUT/meta.properties"

# ---- warm-up ----------------------------------------------------------------------------------------------------
REPLAY_POOL=20000   # bulk rows 0..19999; every 10th (2,000 keys) belongs to client "bench" and is replayed
bulk_load 0 "$REPLAY_POOL"
bulk_load 0 "$REPLAY_POOL" chargeonce_before
# Refunds: finished refunds to replay (with their charges); the pgbench reference's charges, many and one hot.
psql_at "$PG_PORT" chargeonce -v from=0 -v upto="$REFUND_REPLAY_POOL" -v key_secret="$KEY_SECRET" -f bench/sql/bulk_refunds.sql
psql_at "$PG_PORT" chargeonce -c "CREATE UNLOGGED TABLE bench_pool (n integer, pi text)" \
  -c "INSERT INTO bench_pool SELECT n, 'pi_pgbref_' || n FROM generate_series(0, $PGB_REFUND_CHARGES - 1) n"
psql_at "$PG_PORT" chargeonce -v client=pgbench -v prefix=pgbref -v amount="$HOT_CHARGE_AMOUNT" -v key_secret="$KEY_SECRET" -f bench/sql/refund_charges.sql
psql_at "$PG_PORT" chargeonce -c "TRUNCATE bench_pool" -c "INSERT INTO bench_pool VALUES (0, 'pi_pgbhot_0')"
psql_at "$PG_PORT" chargeonce -v client=pgbench -v prefix=pgbhot -v amount="$HOT_CHARGE_AMOUNT" -v key_secret="$KEY_SECRET" -f bench/sql/refund_charges.sql
psql_at "$PG_PORT" chargeonce -c "VACUUM ANALYZE stripe_intents" -c "VACUUM ANALYZE stripe_refunds"
# JIT warm-up: on 2 busy cores C2 needs tens of seconds for the service's many paths (JSON, pgjdbc, Agroal, the
# Stripe SDK); measured before that, the first scenario would report the compiler, not the service.
log "warm-up (JIT) of service and pass-through"
WARMUP=$(( QUICK == 1 ? 5 : 30 ))
wrk_run warmup-svc "$SVC_PORT" 16 "$WARMUP" new
wrk_run warmup-svc-replay "$SVC_PORT" 16 "$(( WARMUP / 3 ))" replay $(( REPLAY_POOL / 10 ))
wrk_run warmup-svc-mix "$SVC_PORT" 64 "$(( WARMUP / 3 ))" mix
if [ -n "$VERSUS_JAR" ]; then
  wrk_run warmup-vs "$VS_PORT" 16 "$WARMUP" new
  wrk_run warmup-vs-replay "$VS_PORT" 16 "$(( WARMUP / 3 ))" replay $(( REPLAY_POOL / 10 ))
  wrk_run warmup-vs-mix "$VS_PORT" 64 "$(( WARMUP / 3 ))" mix
fi
wrk_run warmup-pt "$PT_PORT" 16 "$WARMUP" new
[ "$FLOOR" = 1 ] && wrk_run warmup-fl "$FL_PORT" 16 "$WARMUP" new
stripe_reset 0
refund_pool warmup-refunds $(( 1000 * WARMUP )) svc
wrk_refunds warmup-svc-refunds "$SVC_PORT" 16 "$(( WARMUP / 2 ))" new svc "$OUT/warmup-refunds.pool"
wrk_refunds warmup-svc-refund-replay "$SVC_PORT" 16 "$(( WARMUP / 3 ))" replay svc
wrk_refunds warmup-pt-refunds "$PT_PORT" 16 "$(( WARMUP / 2 ))" new pt "$OUT/warmup-refunds.pool"
stripe_reset 0
# The JIT: on 2 busy cores the C2 compiler is still at work on the service's many paths well after the fixed warm-up
# above; each JVM is warmed on until it is quiet (warm_until_quiet, bench/measure.sh).
if [ "$QUICK" != 1 ]; then
  log "warm-up until the JIT is quiet"
  warm_until_quiet jit-svc "$SVC_PID" "$SVC_PORT" svc
  [ -n "$VERSUS_JAR" ] && warm_until_quiet jit-vs "$VS_PID" "$VS_PORT" svc
  warm_until_quiet jit-pt "$PT_PID" "$PT_PORT" pt
  [ "$FLOOR" = 1 ] && warm_until_quiet jit-fl "$FL_PID" "$FL_PORT" pt
  stripe_reset 0
fi

if [ "$PROFILE" = 1 ]; then
  profile_run
  exit 0
fi
if [ "$FOCUS" = 1 ]; then
  focus_run
  exit 0
fi
if [ "$SLOW_ONLY" = 1 ]; then
  slow_run
  exit 0
fi

full_run

# ---- report -----------------------------------------------------------------------------------------------------
bench_tool report "$OUT" | tee "$OUT/report.md"
log "raw results and report: $OUT"

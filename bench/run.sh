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
SLOW_INFLIGHTS=(200 2000)   # the last one is the issue's scenario 4
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
java bench/BenchTool.java pgbench-scripts "$WORK_DIR/statements" "$WORK_DIR/pgbench"
# and the statements of a new charge and of a replay as they were before issue 14, for "before / after" side by side
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
# The schema the statements before issue 14 ran on (bench/sql/before/): the migrations up to V1.7.0 (Flyway's
# files never change once released), in a database of its own on the same server.
psql_at "$PG_PORT" postgres -c "CREATE DATABASE chargeonce_before"
psql_at "$PG_PORT" chargeonce_before -c "CREATE EXTENSION pgcrypto"
# the minimal pair's table (bench/BenchTool.java, minimal_pair.sql): a key and the answer, nothing else
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
wait_http "http://127.0.0.1:$SVC_MANAGEMENT_PORT/q/health/ready" 90 "$SVC_PID" || die "service did not start, see $OUT/service.log"
VS_PID=$$ # without --versus-jar its CPU column reads the script's own (0)
if [ -n "$VERSUS_JAR" ]; then
  [ "$FOCUS" = 1 ] || [ "$SLOW_ONLY" = 1 ] || die "--versus-jar is for --focus and --slow"
  log "versus: chargeonce built at $VERSUS_JAR on :$VS_PORT (management interface :$VS_MANAGEMENT_PORT)"
  SERVICE_JAR="$VERSUS_JAR" start_chargeonce "$OUT/versus.log" "$VS_PORT" "$VS_MANAGEMENT_PORT" "$PG_PORT" "$STRIPE_PORT" \
    "bench:$API_KEY" "$KEY_SECRET" $SERVICE_JVM ${VERSUS_OPTS:-}
  VS_PID=$LAST_PID
  wait_http "http://127.0.0.1:$VS_MANAGEMENT_PORT/q/health/ready" 90 "$VS_PID" || die "versus service did not start, see $OUT/versus.log"
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

# ---- helpers ----------------------------------------------------------------------------------------------------
RUN_ID=$(date +%s)
CLK_TCK=$(getconf CLK_TCK)
PG_POSTMASTER=$(head -1 "$WORK_DIR/pg/postmaster.pid")
proc_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
cpu_snapshot() { # CPU ticks used so far by: service, pass-through, Stripe stand-in, PostgreSQL (postmaster + backends),
                 # the --versus-jar service, the floor
  echo "$(proc_cpu_ticks "$SVC_PID") $(proc_cpu_ticks "$PT_PID") $(proc_cpu_ticks "$STRIPE_PID") $(pg_cpu_ticks "$PG_POSTMASTER")" \
    "$(proc_cpu_ticks "$VS_PID") $(proc_cpu_ticks "$FL_PID")"
}
wrk_measure() { # wrk_measure <result name> <port> <connections> <seconds> <lua script> [script arguments...]
  local name="$1" port="$2" c="$3" d="$4" script="$5"; shift 5
  local threads=$(( c < 2 ? 1 : 2 )) before after
  before=$(cpu_snapshot)
  wrk -t "$threads" -c "$c" -d "${d}s" --timeout 30s -s "$script" "http://127.0.0.1:$port" \
    -- "threads=$threads" "prefix=$name-$RUN_ID" "key=$API_KEY" "$@" >"$OUT/$name.json" 2>"$OUT/$name.err" || true
  after=$(cpu_snapshot)
  # CPU milliseconds each process used during the run: service, pass-through, Stripe stand-in, PostgreSQL
  paste -d' ' <(echo "$before" | tr ' ' '\n') <(echo "$after" | tr ' ' '\n') \
    | awk -v tck="$CLK_TCK" '{printf "%d ", ($2 - $1) * 1000 / tck} END {print ""}' >"$OUT/$name.cpu"
  log "  $name: $(grep '^{' "$OUT/$name.json" | sed -E 's/.*"requests":([0-9]+).*"p50":([0-9]+).*"p99":([0-9]+).*/\1 requests, p50 \2 us, p99 \3 us/')"
}
wrk_run() { # wrk_run <result name> <port> <connections> <seconds> <mode> [replay_rows]: POST /v1/charges
  wrk_measure "$1" "$2" "$3" "$4" bench/lua/charges.lua "mode=$5" "replay_rows=${6:-1000}"
}
wrk_refunds() { # wrk_refunds <result name> <port> <connections> <seconds> <mode> <svc|pt> [pool file]: refunds
  wrk_measure "$1" "$2" "$3" "$4" bench/lua/refunds.lua "mode=$5" "target=$6" "pool=${7:-}" "amount=$REFUND_AMOUNT" \
    "replay_rows=$REFUND_REPLAY_POOL"
}
pgbench_run() { # pgbench_run <result name> <script> <clients> <seconds> [replay_rows]
  local name="$1" script="$2" c="$3" d="$4" rows="${5:-1000}"
  local threads=$(( c < 2 ? 1 : 2 )) defines=() line
  while IFS= read -r line; do defines+=(-D "$line"); done <"$WORK_DIR/pgbench/defines.txt"
  local before after
  before=$(cpu_snapshot)
  PGPASSWORD=x "$PG_BIN/pgbench" -n -M prepared -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "$c" -j "$threads" -T "$d" \
    -D "replay_rows=$rows" -D "refund_charges=$PGB_REFUND_CHARGES" -D "refund_replay_rows=$REFUND_REPLAY_POOL" \
    "${defines[@]}" -f "$WORK_DIR/pgbench/$script" -l --log-prefix="$OUT/$name.log" "${PGB_DB:-chargeonce}" \
    >"$OUT/$name.txt" 2>&1 || { log "pgbench $name failed: $(tail -3 "$OUT/$name.txt")"; return 0; }
  sleep 1.5 # pgbench's backends exit with it: once the postmaster reaped them their CPU is in its children's total
  after=$(cpu_snapshot)
  # the same columns as a wrk run's (service, pass-through, stand-in, PostgreSQL): PostgreSQL's is the one that counts
  paste -d' ' <(echo "$before" | tr ' ' '\n') <(echo "$after" | tr ' ' '\n') \
    | awk -v tck="$CLK_TCK" '{printf "%d ", ($2 - $1) * 1000 / tck} END {print ""}' >"$OUT/$name.cpu"
  log "  $name: $(grep -E '^tps' "$OUT/$name.txt" | head -1)"
}
bulk_load() { # bulk_load <from> <upto> [database]
  # the schema before issue 14 finds rows by their key (stored) and its unkeyed hash: no secret there
  local secret="$KEY_SECRET"; [ "${3:-chargeonce}" = chargeonce_before ] && secret=""
  psql_at "$PG_PORT" "${3:-chargeonce}" -v from="$1" -v upto="$2" -v key_secret="$secret" -f bench/sql/bulk_rows.sql
  psql_at "$PG_PORT" "${3:-chargeonce}" -c "VACUUM ANALYZE stripe_intents"
  # the load dirtied a gigabyte of pages: write them now, not during the measurement that follows (a checkpoint in
  # the middle of it measures the disk, and makes every page the run touches first a full-page image in the WAL)
  psql_at "$PG_PORT" "${3:-chargeonce}" -c "CHECKPOINT"
}
table_size() { psql_at "$PG_PORT" chargeonce -At -c "SELECT pg_size_pretty(pg_total_relation_size('stripe_intents'))"; }
# refund_pool <name> <count> <svc|pt>: count charges to refund, each with its own PaymentIntent seeded at the
# Stripe stand-in (so that the stand-in's checks pass: a succeeded PaymentIntent of 1000 cents), and for svc also
# in stripe_intents (bench/sql/refund_charges.sql, client "bench"). Writes $OUT/<name>.pool ("<charge> <pi>" lines).
refund_pool() {
  local name="$1" count="$2" target="$3"
  curl -fsS -X POST "http://127.0.0.1:$STRIPE_PORT/_sandbox/seed?count=$count&metadata%5Bchargeonce_charge_id%5D=$name-$RUN_ID" >/dev/null
  curl -fsS "http://127.0.0.1:$STRIPE_PORT/_sandbox/ledger?charge_id=$name-$RUN_ID" | grep -o '"id":"pi_[A-Za-z0-9]*"' \
    | cut -d'"' -f4 | awk '{print NR - 1 "\t" $1}' >"$WORK_DIR/$name.pis"
  [ "$(wc -l <"$WORK_DIR/$name.pis")" -eq "$count" ] || die "the stand-in seeded $(wc -l <"$WORK_DIR/$name.pis") of $count PaymentIntents"
  if [ "$target" = svc ]; then
    psql_at "$PG_PORT" chargeonce -c "TRUNCATE bench_pool" -c "\\copy bench_pool FROM '$WORK_DIR/$name.pis'"
    psql_at "$PG_PORT" chargeonce -v client=bench -v prefix="$name" -v amount=1000 -v key_secret="$KEY_SECRET" -f bench/sql/refund_charges.sql
  fi
  # the ids bench/sql/refund_charges.sql gives them: chg_ + the name's letters and digits (12, padded with x) + n (12 digits)
  awk -v p="$name" 'BEGIN { gsub(/[^A-Za-z0-9]/, "", p); p = substr(p, 1, 12); while (length(p) < 12) p = p "x" }
    { printf "chg_%s%012d %s\n", p, $1, $2 }' "$WORK_DIR/$name.pis" >"$OUT/$name.pool"
}
# hot_charges <name> <count>: count charges made through the service (POST /v1/charges, the largest amount), one
# hot charge per second of a run (see bench/lua/refunds.lua, mode=hot). Writes $OUT/<name>.pool.
hot_charges() {
  local name="$1" count="$2" i answer
  : >"$OUT/$name.pool"
  for i in $(seq 1 "$count"); do
    answer=$(curl -fsS -X POST -H "Authorization: Bearer $API_KEY" -H 'Content-Type: application/json' \
      -H "Idempotency-Key: hot-$name-$RUN_ID-$i" "http://127.0.0.1:$SVC_PORT/v1/charges" \
      -d "{\"amount\":$HOT_CHARGE_AMOUNT,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\"}")
    echo "$answer" | sed -nE 's/.*"id":"(chg_[^"]+)".*"payment_intent":"(pi_[^"]+)".*/\1 \2/p' >>"$OUT/$name.pool"
  done
  [ "$(wc -l <"$OUT/$name.pool")" -eq "$count" ] || die "could not make the hot charges for $name: $answer"
}
lock_sampler() { # lock_sampler <file> <stop file>: the service's PostgreSQL backends (busy, waiting on a lock) twice a
  # second, through one psql session for the whole run (a new connection per sample would cost PostgreSQL CPU that
  # the run's CPU accounting counts), until <stop file> exists.
  while [ ! -e "$2" ]; do
    echo "SELECT count(*) FILTER (WHERE state <> 'idle'), count(*) FILTER (WHERE wait_event_type = 'Lock')
            FROM pg_stat_activity WHERE datname = 'chargeonce' AND application_name = 'PostgreSQL JDBC Driver';"
    sleep 0.5
  done | psql_at "$PG_PORT" chargeonce -At -F' ' >>"$1" 2>/dev/null || true
}
# wrk_refunds_sampled: wrk_refunds with lock_sampler; the means go to meta.properties as <name>_busy, <name>_lock_waits
wrk_refunds_sampled() {
  local name="$1" sampler
  : >"$OUT/$name-locks.txt"
  rm -f "$WORK_DIR/$name.stop"
  lock_sampler "$OUT/$name-locks.txt" "$WORK_DIR/$name.stop" &
  sampler=$!
  wrk_refunds "$@"
  touch "$WORK_DIR/$name.stop"; wait "$sampler" 2>/dev/null || true
  awk -v n="$name" '{ b += $1; l += $2; if ($2 > m) m = $2; k++ } END { if (k) printf "%s_busy=%.1f\n%s_lock_waits=%.1f\n%s_lock_waits_max=%d\n", n, b / k, n, l / k, n, m }' \
    "$OUT/$name-locks.txt" >>"$OUT/meta.properties"
}
rss_sampler() { # rss_sampler <pid> <file>: VmRSS and VmHWM (kB) twice a second until stopped
  while kill -0 "$1" 2>/dev/null; do
    awk '/^VmRSS|^VmHWM/ {printf "%s ", $2} END {print ""}' "/proc/$1/status" >>"$2" 2>/dev/null || true
    sleep 0.5
  done
}

# ---- soak (--soak): new charges for a long time, minute by minute ----------------------------------------------
if [ "$SOAK_MINUTES" -gt 0 ]; then
  log "soak: new charges at concurrency 16 for $SOAK_MINUTES minutes against PostgreSQL's default settings"
  {
    echo "started=$(date -u +%Y-%m-%dT%H:%MZ)"
    echo "machine=$(nproc) cores, $(uname -sr)"
    echo "software=$(java -version 2>&1 | head -1); PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') (default settings); service with \`$SERVICE_JVM\`"
    echo "git=$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+changes')"
  } >"$OUT/meta.properties"
  wrk_run soak-warmup "$SVC_PORT" 16 30 new
  pg_value() { psql_at "$PG_PORT" chargeonce -At -c "$1"; }
  echo "minute charges_per_s p50_us p99_us rss_kib table_bytes rows service_cpu_ms pg_cpu_ms wal_bytes checkpoints" >"$OUT/soak.txt"
  rows=0
  for minute in $(seq 1 "$SOAK_MINUTES"); do
    wal_before=$(pg_value "SELECT pg_current_wal_lsn() - '0/0'")
    wrk_run "soak-m$minute" "$SVC_PORT" 16 60 new
    wal_after=$(pg_value "SELECT pg_current_wal_lsn() - '0/0'")
    made=$(grep -o '"s201":[0-9]*' "$OUT/soak-m$minute.json" | cut -d: -f2)
    rows=$(( rows + made ))
    read -r svc_ms _ _ pg_ms <"$OUT/soak-m$minute.cpu"
    echo "$minute $(( made / 60 )) $(grep -o '"p50":[0-9]*' "$OUT/soak-m$minute.json" | cut -d: -f2)" \
      "$(grep -o '"p99":[0-9]*' "$OUT/soak-m$minute.json" | cut -d: -f2) $(awk '/^VmRSS/ {print $2}' "/proc/$SVC_PID/status")" \
      "$(pg_value "SELECT pg_total_relation_size('stripe_intents')") $rows $svc_ms $pg_ms $(( wal_after - wal_before ))" \
      "$(pg_value "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter")" >>"$OUT/soak.txt"
    log "  minute $minute: $(( made / 60 )) charges/s, $rows rows"
  done
  java bench/BenchTool.java soak "$OUT" | tee "$OUT/soak.md"
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
# above (a profile taken right after it put 16-25% of the service's CPU in the compiler threads; the pass-through, with
# less code, settles sooner). CPU per request measured then counts the compiler, not the steady state a pod runs in.
# So each JVM is warmed on until a round (10 s of new charges, and 5 s of replays for the service) adds less than
# half a second of compilation (jstat: the compilers' time), six rounds at most.
jit_seconds() { jstat -compiler "$1" 2>/dev/null | awk 'NR == 2 {print $4}'; }
warm_until_quiet() { # warm_until_quiet <name> <pid> <port> <svc|pt>
  local name="$1" pid="$2" port="$3" kind="$4" round before after spent
  if ! command -v jstat >/dev/null || [ -z "$(jit_seconds "$pid")" ]; then
    log "  $name: no jstat for this JVM, the JIT's warm-up is not checked"; return 0
  fi
  for round in 1 2 3 4 5 6; do
    before=$(jit_seconds "$pid")
    stripe_reset 0; wrk_run "$name-quiet-$round" "$port" 16 10 new
    [ "$kind" = svc ] && wrk_run "$name-quiet-replay-$round" "$port" 16 5 replay $(( REPLAY_POOL / 10 ))
    after=$(jit_seconds "$pid")
    spent=$(awk -v a="$after" -v b="$before" 'BEGIN {printf "%.2f", a - b}')
    log "  $name: the compilers spent $spent s in round $round"
    echo "jit_warmup_${name}_round_$round=$spent" >>"$OUT/meta.properties"
    if awk -v s="$spent" 'BEGIN {exit !(s < 0.5)}'; then return 0; fi
  done
  log "  $name: the JIT was still compiling after 6 rounds (measured anyway)"
}
if [ "$QUICK" != 1 ]; then
  log "warm-up until the JIT is quiet"
  warm_until_quiet jit-svc "$SVC_PID" "$SVC_PORT" svc
  [ -n "$VERSUS_JAR" ] && warm_until_quiet jit-vs "$VS_PID" "$VS_PORT" svc
  warm_until_quiet jit-pt "$PT_PID" "$PT_PORT" pt
  [ "$FLOOR" = 1 ] && warm_until_quiet jit-fl "$FL_PID" "$FL_PORT" pt
  stripe_reset 0
fi

# ---- profiles (--profile): where the service's CPU and allocations go, as flame graphs -------------------------
if [ "$PROFILE" = 1 ]; then
  PROFILER_DIR="$ROOT/target/async-profiler"
  if [ ! -f "$PROFILER_DIR/linux-x64/libasyncProfiler.so" ]; then
    ./mvnw -B -ntp -q dependency:copy -Dartifact=tools.profiler:async-profiler:4.1 -DoutputDirectory="$PROFILER_DIR"
    (cd "$PROFILER_DIR" && unzip -q -o async-profiler-4.1.jar 'linux-x64/*')
  fi
  AGENT="$PROFILER_DIR/linux-x64/libasyncProfiler.so"
  profile() { # profile <name> <event> <mode> [replay rows [concurrency [Stripe latency ms]]]: one run of wrk on the
    local name="$1" event="$2" mode="$3"   # service with the profiler attached
    # (quoted inside: jcmd would read "start,event=..." as a named argument "start,event" and drop it)
    jcmd "$SVC_PID" JVMTI.agent_load "$AGENT" "\"start,event=$event,interval=1ms\"" >/dev/null
    stripe_reset "${6:-0}"
    wrk_run "$name" "$SVC_PORT" "${5:-32}" "$DURATION" "$mode" "${4:-1000}"
    jcmd "$SVC_PID" JVMTI.agent_load "$AGENT" "\"dump,collapsed,file=$OUT/stacks-$name.txt\"" >/dev/null
    jcmd "$SVC_PID" JVMTI.agent_load "$AGENT" "\"stop,file=$OUT/flame-$name.html\"" >/dev/null
    [ -s "$OUT/flame-$name.html" ] || die "the profiler wrote no flame graph for $name"
    log "  flame graph: $OUT/flame-$name.html"
  }
  log "profiles: new charges and replays at concurrency 32, $DURATION s each (CPU, then allocations)"
  profile charges-cpu cpu new
  profile replays-cpu cpu replay $(( REPLAY_POOL / 10 ))
  profile charges-alloc alloc new
  profile replays-alloc alloc replay $(( REPLAY_POOL / 10 ))
  log "profile: new charges against a slow Stripe ($SLOW_LATENCY_MS ms), ${SLOW_INFLIGHTS[-1]} in flight (scenario 4)"
  profile slow-charges-cpu cpu new 1000 "${SLOW_INFLIGHTS[-1]}" "$SLOW_LATENCY_MS"
  stripe_reset 0
  exit 0
fi

# The builds a round of --focus or --slow measures, in its order: this one first in odd rounds, --versus-jar's first
# in even ones. Whichever runs first in a round was measured slower on this machine (README, "a queue before the
# claim"), so a fixed order favours one build.
builds_in_order() {
  if [ -z "$VERSUS_JAR" ]; then echo svc
  elif [ $(( $1 % 2 )) = 1 ]; then echo "svc vs"
  else echo "vs svc"; fi
}
port_of() { case $1 in svc) echo "$SVC_PORT" ;; vs) echo "$VS_PORT" ;; pt) echo "$PT_PORT" ;; esac; }

# ---- focus (--focus): CPU per new charge and per replay, service against pass-through, side by side -------------
if [ "$FOCUS" = 1 ]; then
  log "focus: new charges and replays at concurrency $FOCUS_C, $DURATION s each, $ROUNDS rounds, interleaved"
  statements() { # statements <file>: what PostgreSQL ran since the last reset, most called first
    psql_at "$PG_PORT" chargeonce -At -F' | ' -c "SELECT calls, round(total_exec_time::numeric, 1), rows, wal_records, wal_fpi,
        regexp_replace(left(query, 160), '\s+', ' ', 'g') FROM pg_stat_statements ORDER BY calls DESC LIMIT 25" >"$1"
  }
  focus_new() { # focus_new <svc|vs> <round>: new charges (and, for this build, the statements they ran)
    psql_at "$PG_PORT" chargeonce -c "SELECT pg_stat_statements_reset()" >/dev/null
    stripe_reset 0; wrk_run "f-$1-new-$2" "$(port_of "$1")" "$FOCUS_C" "$DURATION" new
    if [ "$1" = svc ]; then statements "$OUT/f-svc-new-$2.statements"; fi
  }
  focus_replay() { # focus_replay <svc|vs> <round>
    psql_at "$PG_PORT" chargeonce -c "SELECT pg_stat_statements_reset()" >/dev/null
    wrk_run "f-$1-replay-$2" "$(port_of "$1")" "$FOCUS_C" "$DURATION" replay $(( REPLAY_POOL / 10 ))
    if [ "$1" = svc ]; then statements "$OUT/f-svc-replay-$2.statements"; fi
  }
  for round in $(seq 1 "$ROUNDS"); do
    builds=$(builds_in_order "$round"); first=${builds%% *}
    focus_new "$first" "$round"
    stripe_reset 0; wrk_run "f-pt-new-$round" "$PT_PORT" "$FOCUS_C" "$DURATION" new
    stripe_reset 0; wrk_run "f-fl-new-$round" "$FL_PORT" "$FOCUS_C" "$DURATION" new
    for build in ${builds#"$first"}; do focus_new "$build" "$round"; done
    for build in $builds; do focus_replay "$build" "$round"; done
  done
  for round in 1 2; do # today's statements and those before issue 14, interleaved
    pgbench_run "f-pgb-pair-$round" claim_finish.sql 16 "$DURATION"
    PGB_DB=chargeonce_before pgbench_run "f-pgb-before-pair-$round" before_claim_finish.sql 16 "$DURATION"
    pgbench_run "f-pgb-replay-$round" replay.sql 16 "$DURATION" $(( REPLAY_POOL / 10 ))
    PGB_DB=chargeonce_before pgbench_run "f-pgb-before-replay-$round" before_replay.sql 16 "$DURATION" $(( REPLAY_POOL / 10 ))
    PGB_DB=chargeonce_minimal pgbench_run "f-pgb-minimal-pair-$round" minimal_pair.sql 16 "$DURATION"
  done
  java bench/BenchTool.java focus "$OUT" | tee "$OUT/focus.md"
  exit 0
fi

# ---- slow (--slow): scenario 4 alone, where in-flight requests meet a slow Stripe ----------------------------------
if [ "$SLOW_ONLY" = 1 ]; then
  inflight=${SLOW_INFLIGHTS[-1]}
  SLOW_D=$(( DURATION < 10 ? 10 : DURATION ))
  log "slow: Stripe latency ${SLOW_LATENCY_MS} ms, $inflight in flight, $SLOW_D s each, $ROUNDS rounds, interleaved"
  targets="svc pt"; [ -n "$VERSUS_JAR" ] && targets="svc vs pt"
  for round in $(seq 1 "$ROUNDS"); do
    for target in $(builds_in_order "$round") pt; do
      port=$(port_of "$target")
      psql_at "$PG_PORT" chargeonce -c "SELECT pg_stat_statements_reset()" >/dev/null
      stripe_reset "$SLOW_LATENCY_MS"
      wrk_run "slow-$target-$round" "$port" "$inflight" "$SLOW_D" new
      psql_at "$PG_PORT" chargeonce -At -F' | ' -c "SELECT calls, round(total_exec_time::numeric, 1), rows,
          regexp_replace(left(query, 120), '\s+', ' ', 'g') FROM pg_stat_statements ORDER BY calls DESC LIMIT 12" \
          >"$OUT/slow-$target-$round.statements"
      # The same process without latency, in the same round: the peak that scenario 4's goal is a share of.
      [ "$target" = pt ] || { stripe_reset 0; wrk_run "peak-$target-$round" "$port" "$SLOW_PEAK_CONCURRENCY" "$SLOW_D" new; }
    done
  done
  stripe_reset 0
  { echo "| run | charges/s | p50 ms | p99 ms | non-201 | CPU ms per charge: process | PostgreSQL | stand-in |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    for f in "$OUT"/slow-*.json "$OUT"/peak-*.json; do
      name=$(basename "$f" .json); target=$(echo "$name" | cut -d- -f2)
      col=1; [ "$target" = pt ] && col=2; [ "$target" = vs ] && col=5
      grep -h '^{' "$f" | tr -d '{}"' | tr ',' '\n' | awk -F: -v name="$name" -v col="$col" -v cpu="$(cat "$OUT/$name.cpu")" '
        { v[$1] = $2 }
        END { split(cpu, c, " "); n = v["requests"]; if (n == 0) n = 1
              printf "| %s | %.0f | %.1f | %.1f | %d | %.3f | %.3f | %.3f |\n", name, v["requests"] * 1e6 / v["duration_us"],
                v["p50"] / 1000, v["p99"] / 1000, v["requests"] - v["s201"], c[col] / n, c[4] / n, c[3] / n }'
    done; } | tee "$OUT/slow.md"
  rate() { grep -h '^{' "$OUT/$1.json" | tr -d '{}"' | tr ',' '\n' | awk -F: '{ v[$1] = $2 } END { printf "%.0f", v["requests"] * 1e6 / v["duration_us"] }'; }
  { echo; echo "Scenario 4's goal, per round: charges/s with $inflight in flight ÷ charges/s without latency at concurrency $SLOW_PEAK_CONCURRENCY (the full run's peak), same process, same round."
    echo; echo "| round | process | slow | peak | slow ÷ peak |"; echo "|---|---|---:|---:|---:|"
    for round in $(seq 1 "$ROUNDS"); do
      for target in $targets; do
        [ "$target" = pt ] && continue
        slow=$(rate "slow-$target-$round"); peak=$(rate "peak-$target-$round")
        echo "| $round | $target | $slow | $peak | $(awk -v s="$slow" -v p="$peak" 'BEGIN {printf "%.2f", s / p}') |"
      done
    done; } | tee -a "$OUT/slow.md"
  exit 0
fi

# ---- references: pgbench ------------------------------------------------------------------------------------------
log "reference (a): pgbench, the service's claim + finish, and its replay read; the same for refunds"
for c in "${CONCURRENCY[@]}"; do
  pgbench_run "pgb-pair-c$c" claim_finish.sql "$c" "$DURATION"
  PGB_DB=chargeonce_before pgbench_run "pgb-before-pair-c$c" before_claim_finish.sql "$c" "$DURATION"
  PGB_DB=chargeonce_minimal pgbench_run "pgb-minimal-pair-c$c" minimal_pair.sql "$c" "$DURATION"
  pgbench_run "pgb-replay-c$c" replay.sql "$c" "$DURATION" $(( REPLAY_POOL / 10 ))
  PGB_DB=chargeonce_before pgbench_run "pgb-before-replay-c$c" before_replay.sql "$c" "$DURATION" $(( REPLAY_POOL / 10 ))
  pgbench_run "pgb-refund-c$c" refund_many.sql "$c" "$DURATION"
  pgbench_run "pgb-refund-hot-c$c" refund_hot.sql "$c" "$DURATION"
  pgbench_run "pgb-refund-replay-c$c" refund_replay.sql "$c" "$DURATION"
done

# ---- scenario 1 + reference (b), interleaved per concurrency so that drift hits both alike ----------------------
log "scenario 1: new charges, Stripe latency 0 (service, pass-through and the floor)"
for c in "${CONCURRENCY[@]}"; do
  stripe_reset 0; wrk_run "s1-svc-c$c" "$SVC_PORT" "$c" "$DURATION" new
  stripe_reset 0; wrk_run "s1-pt-c$c" "$PT_PORT" "$c" "$DURATION" new
  stripe_reset 0; wrk_run "s1-fl-c$c" "$FL_PORT" "$c" "$DURATION" new
done

log "scenario 2: replays of finished keys"
for c in "${CONCURRENCY[@]}"; do
  wrk_run "s2-svc-c$c" "$SVC_PORT" "$c" "$DURATION" replay $(( REPLAY_POOL / 10 ))
done

# ---- scenarios 6 and 7: refunds, next to the charges -----------------------------------------------------------
# Every run starts from an empty Stripe stand-in (reset) with the charges it refunds made just before it.
log "scenario 6: new refunds of $REFUND_AMOUNT cent, Stripe latency 0: many charges (one refund each) and one hot charge"
for c in "${CONCURRENCY[@]}"; do
  stripe_reset 0; refund_pool "r1-svc-c$c" "$REFUND_POOL" svc
  wrk_refunds_sampled "r1-svc-c$c" "$SVC_PORT" "$c" "$DURATION" new svc "$OUT/r1-svc-c$c.pool"
  stripe_reset 0; refund_pool "r1-pt-c$c" "$REFUND_POOL" pt
  wrk_refunds "r1-pt-c$c" "$PT_PORT" "$c" "$DURATION" new pt "$OUT/r1-pt-c$c.pool"
  stripe_reset 0; hot_charges "r2-svc-c$c" "$HOT_CHARGES"
  wrk_refunds_sampled "r2-svc-c$c" "$SVC_PORT" "$c" "$DURATION" hot svc "$OUT/r2-svc-c$c.pool"
  stripe_reset 0; hot_charges "r2-pt-c$c" "$HOT_CHARGES"
  wrk_refunds "r2-pt-c$c" "$PT_PORT" "$c" "$DURATION" hot pt "$OUT/r2-pt-c$c.pool"
done
stripe_reset 0

log "scenario 7: replays of finished refunds"
for c in "${CONCURRENCY[@]}"; do
  wrk_refunds "r3-svc-c$c" "$SVC_PORT" "$c" "$DURATION" replay svc
done

log "scenario 3: mix (10% retries, 1% key reuse with another body)"
for c in "${CONCURRENCY[@]}"; do
  stripe_reset 0; wrk_run "s3-svc-c$c" "$SVC_PORT" "$c" "$DURATION" mix
done

# ---- scenario 4 -------------------------------------------------------------------------------------------------
# At 2,000 in flight; and at 200, where the 2 cores can carry the ceiling, so that what caps the 2,000 shows.
log "scenario 4: Stripe latency ${SLOW_LATENCY_MS} ms, ${SLOW_INFLIGHTS[*]} requests in flight"
SLOW_D=$(( DURATION < 10 ? 10 : DURATION * 2 ))
for inflight in "${SLOW_INFLIGHTS[@]}"; do
  for target in svc pt; do
    if [ "$target" = svc ]; then port=$SVC_PORT; pid=$SVC_PID; else port=$PT_PORT; pid=$PT_PID; fi
    stripe_reset "$SLOW_LATENCY_MS"
    : >"$OUT/s4-$target-$inflight-rss.txt"
    rss_sampler "$pid" "$OUT/s4-$target-$inflight-rss.txt" &
    sampler=$!
    wrk_run "s4-$target-$inflight" "$port" "$inflight" "$SLOW_D" new
    kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true
    peak=$(awk '{ if ($1 > m) m = $1 } END { print m + 0 }' "$OUT/s4-$target-$inflight-rss.txt")
    hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
    echo "s4_${target}_${inflight}_rss_peak_kb=$peak" >>"$OUT/meta.properties"
    echo "s4_${target}_${inflight}_hwm_kb=$hwm" >>"$OUT/meta.properties"
    log "  RSS peak $((peak / 1024)) MiB, VmHWM $((hwm / 1024)) MiB"
  done
done
stripe_reset 0

# ---- scenario 5: growth -------------------------------------------------------------------------------------------
log "scenario 5: growth of stripe_intents"
psql_at "$PG_PORT" chargeonce -c "TRUNCATE stripe_refunds, stripe_intents"
STEPS=(empty 1m); ROWS=(20000 1000000)
if [ "$QUICK" = 1 ]; then STEPS=(empty 100k); ROWS=(20000 100000); fi
if [ "$WITH_10M" = 1 ]; then STEPS+=(10m); ROWS+=(10000000); fi
loaded=0
load_times=""
growth_steps=""
for i in "${!STEPS[@]}"; do
  step=${STEPS[$i]}; rows=${ROWS[$i]}
  t0=$(date +%s)
  bulk_load "$loaded" "$rows"
  t1=$(date +%s)
  load_times="$load_times${load_times:+, }$(( rows - loaded )) rows in $(( t1 - t0 )) s"
  loaded=$rows
  size=$(table_size)
  log "  $step: $rows rows, $size"
  echo "growth_rows_$step=$(printf "%'d" "$rows" 2>/dev/null || echo "$rows")$([ "$step" = empty ] && echo ' (replay pool only)')" >>"$OUT/meta.properties"
  echo "growth_size_$step=$size" >>"$OUT/meta.properties"
  stripe_reset 0; wrk_run "s5-$step-claim" "$SVC_PORT" "$GROWTH_C" "$DURATION" new
  wrk_run "s5-$step-replay" "$SVC_PORT" "$GROWTH_C" "$DURATION" replay $(( rows / 10 ))
  pgbench_run "pgb-s5-$step-pair" claim_finish.sql "$GROWTH_C" "$DURATION"
  growth_steps="$growth_steps${growth_steps:+,}$step"
done
echo "growth_steps=$growth_steps" >>"$OUT/meta.properties"
echo "growth_load_seconds=$load_times" >>"$OUT/meta.properties"

# ---- report -----------------------------------------------------------------------------------------------------
java bench/BenchTool.java report "$OUT" | tee "$OUT/report.md"
log "raw results and report: $OUT"

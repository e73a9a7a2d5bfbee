#!/usr/bin/env bash
# The benchmark's Citus column: the same scenarios against the service on a plain PostgreSQL and on a
# Citus coordinator with two workers, side by side in one run, one Stripe stand-in for both: new charges and replays
# through the service over HTTP (wrk, bench/lua/charges.lua), and the database's own limit for the same statements
# (pgbench with the service's statements, as bench/run.sh runs them). Every node runs on this one machine, so this
# measures what Citus costs per statement (the coordinator's planning and the hop to a worker), not what it scales
# to: see docs/citus.md, "The benchmark's Citus column", for the estimate on N real workers.
#
#   scale/citus/bench.sh [--duration 10s] [--out DIR]      (as root; results in DIR/citus.md)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
source bench/lib.sh

DURATION=10
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION="${2%s}"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) die "unknown option $1" ;;
  esac
done
OUT="${OUT:-$ROOT/bench/results/citus-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$OUT"
CONCURRENCY=(16 64)
REPLAY_POOL=20000
API_KEY="sk_bench_0123456789"
KEY_SECRET="Y2hhcmdlb25jZSBiZW5jaCBrZXkgaGFzaCBzZWNyZXQsIHYx"   # bench/run.sh's: bench/sql computes the same identities

trap cleanup_started EXIT
pick_java
pick_postgres
need_citus
need_wrk
ulimit -n 65536 2>/dev/null || true
SERVICE_JAR=target/quarkus-app/quarkus-run.jar
SANDBOX_JAR=target/chargeonce-1.0.0-SNAPSHOT-sandbox.jar
if [ ! -f "$SERVICE_JAR" ] || [ ! -f "$SANDBOX_JAR" ]; then
  log "building the service package"
  ./mvnw -B -ntp -q -DskipTests package
fi
make_work_dir chargeonce-citus-bench

PLAIN=$(free_port); C=$(free_port); W1=$(free_port); W2=$(free_port); STRIPE=$(free_port)
SETTINGS=("synchronous_commit = on" "fsync = on" "max_connections = 400" "shared_buffers = 512MB" "log_min_messages = warning")
start_pg plain "$PLAIN" "${SETTINGS[@]}"
psql_at "$PLAIN" postgres -c "CREATE DATABASE chargeonce" >/dev/null
for port in "$C" "$W1" "$W2"; do
  start_pg "citus-$port" "$port" "shared_preload_libraries = 'citus'" "${SETTINGS[@]}"
  psql_at "$port" postgres -c "CREATE DATABASE chargeonce" >/dev/null
  psql_at "$port" chargeonce -c "CREATE EXTENSION citus" >/dev/null
done
psql_at "$C" chargeonce -c "SELECT citus_set_coordinator_host('127.0.0.1', $C)" >/dev/null
for port in "$W1" "$W2"; do psql_at "$C" chargeonce -c "SELECT citus_add_node('127.0.0.1', $port)" >/dev/null; done
for port in "$PLAIN" "$C"; do psql_at "$port" chargeonce -c "CREATE EXTENSION pgcrypto" >/dev/null; done
log "plain PostgreSQL on :$PLAIN; Citus coordinator on :$C, workers on :$W1 and :$W2"

start_bg "$OUT/stripe.log" java -Xmx2g -cp "$SANDBOX_JAR" dev.chargeonce.sandbox.StripeSandbox "$STRIPE" 0
wait_http "http://127.0.0.1:$STRIPE/_sandbox/stats" 30 "$LAST_PID" || die "the Stripe stand-in did not start"

declare -A SVC_PORT
start_service() { # start_service <engine> <database port>: the service on it (its migrations distribute on Citus)
  local engine="$1" db="$2" port management
  port=$(free_port); management=$(free_port)
  start_chargeonce "$OUT/service-$engine.log" "$port" "$management" "$db" "$STRIPE" "bench:$API_KEY" "$KEY_SECRET" -Xmx256m
  wait_http "http://127.0.0.1:$management/q/health/ready" 120 "$LAST_PID" || die "the service on $engine did not start: $OUT/service-$engine.log"
  SVC_PORT[$engine]=$port
}
start_service plain "$PLAIN"
start_service citus "$C"
[ "$(psql_at "$C" chargeonce -Atc "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text IN ('stripe_intents', 'stripe_refunds')")" = 2 ] \
  || die "the tables were not distributed on the coordinator"
for port in "$PLAIN" "$C"; do
  psql_at "$port" chargeonce -v from=0 -v upto="$REPLAY_POOL" -v key_secret="$KEY_SECRET" -f bench/sql/bulk_rows.sql >/dev/null
  psql_at "$port" chargeonce -c "VACUUM ANALYZE stripe_intents" >/dev/null
done

# pgbench with the service's own statements (bench/PgbenchScripts.java), on each engine
java -cp "target/quarkus-app/app/*:target/quarkus-app/lib/main/*" dev.chargeonce.idempotency.StatementCatalog "$WORK_DIR/statements"
bench_tool pgbench-scripts "$WORK_DIR/statements" "$WORK_DIR/pgbench" >/dev/null
DEFINES=()
while IFS= read -r line; do DEFINES+=(-D "$line"); done <"$WORK_DIR/pgbench/defines.txt"

RUN_ID=$(date +%s)
declare -A RESULT
wrk_run() { # wrk_run <engine> <mode> <connections>
  local engine="$1" mode="$2" c="$3" name="$1-$2-c$3" line
  wrk -t 2 -c "$c" -d "${DURATION}s" --timeout 30s -s bench/lua/charges.lua "http://127.0.0.1:${SVC_PORT[$engine]}" \
    -- "threads=2" "prefix=$name-$RUN_ID" "key=$API_KEY" "mode=$mode" "replay_rows=$(( REPLAY_POOL / 10 ))" \
    >"$OUT/$name.json" 2>"$OUT/$name.err" || true
  line=$(grep '^{' "$OUT/$name.json" | head -1)
  local requests p50 p99 bad
  requests=$(echo "$line" | sed -E 's/.*"requests":([0-9]+).*/\1/')
  p50=$(echo "$line" | sed -E 's/.*"p50":([0-9]+).*/\1/')
  p99=$(echo "$line" | sed -E 's/.*"p99":([0-9]+).*/\1/')
  bad=$(echo "$line" | sed -E 's/.*"s409":([0-9]+),"s422":([0-9]+),"s503":([0-9]+),"other":([0-9]+).*/\1 \2 \3 \4/' \
    | awk '{print $1 + $2 + $3 + $4}')
  RESULT[$name]="$(( requests / DURATION ))/s, p50 $(( p50 / 1000 )).$(( p50 % 1000 / 100 )) ms, p99 $(( p99 / 1000 )) ms"
  if [ "$bad" -gt 0 ]; then RESULT[$name]+=", $bad not 2xx"; fi
  RATE[$name]=$(( requests / DURATION ))
  log "  $name: ${RESULT[$name]}"
}
CLK_TCK=$(getconf CLK_TCK)
tree_ticks() { pg_cpu_ticks "$(head -1 "$WORK_DIR/$1/postmaster.pid")"; } # CPU ticks of a PostgreSQL node so far
nodes_ticks() { echo "$(tree_ticks plain) $(tree_ticks "citus-$C") $(( $(tree_ticks "citus-$W1") + $(tree_ticks "citus-$W2") ))"; }
declare -A CPU
pgbench_run() { # pgbench_run <engine> <database port> <script> <clients>
  local engine="$1" port="$2" script="$3" c="$4" name="$1-pgb-${3%.sql}-c$4" tps before after
  before=$(nodes_ticks)
  PGPASSWORD=x "$PG_BIN/pgbench" -n -M prepared -h 127.0.0.1 -p "$port" -U postgres -c "$c" -j 2 -T "$DURATION" \
    -D "replay_rows=$(( REPLAY_POOL / 10 ))" "${DEFINES[@]}" -f "$WORK_DIR/pgbench/$script" chargeonce \
    >"$OUT/$name.txt" 2>&1 || { log "pgbench $name failed: $(tail -3 "$OUT/$name.txt")"; RESULT[$name]="failed"; RATE[$name]=0; return 0; }
  tps=$(grep -E '^tps' "$OUT/$name.txt" | head -1 | sed -E 's/tps = ([0-9]+).*/\1/')
  sleep 1.5 # pgbench's backends exit with it: once reaped, their CPU is in the postmaster's children's total
  after=$(nodes_ticks)
  local transactions
  transactions=$(grep -E '^number of transactions actually processed' "$OUT/$name.txt" | sed -E 's/.*: ([0-9]+).*/\1/')
  # CPU per transaction, microseconds: plain PostgreSQL / the coordinator / the two workers together
  CPU[$name]=$(paste -d' ' <(echo "$before" | tr ' ' '\n') <(echo "$after" | tr ' ' '\n') \
    | awk -v tck="$CLK_TCK" -v n="$transactions" '{printf "%d ", ($2 - $1) * 1000000 / tck / n}')
  RESULT[$name]="$tps/s"
  RATE[$name]=$tps
  log "  $name: $tps/s"
}
declare -A RATE
log "warm-up (both engines, new charges and replays)"
for engine in plain citus; do
  wrk -t 2 -c 16 -d 5s -s bench/lua/charges.lua "http://127.0.0.1:${SVC_PORT[$engine]}" -- threads=2 "prefix=warm-$engine-$RUN_ID" \
    "key=$API_KEY" mode=new >/dev/null 2>&1 || true
  wrk -t 2 -c 16 -d 5s -s bench/lua/charges.lua "http://127.0.0.1:${SVC_PORT[$engine]}" -- threads=2 "prefix=warm-$engine-$RUN_ID" \
    "key=$API_KEY" mode=replay "replay_rows=$(( REPLAY_POOL / 10 ))" >/dev/null 2>&1 || true
done
log "measuring, ${DURATION} s each, the engines interleaved"
for c in "${CONCURRENCY[@]}"; do
  for mode in new replay; do
    for engine in plain citus; do wrk_run "$engine" "$mode" "$c"; done
  done
done
for script in claim_finish.sql replay.sql; do
  pgbench_run plain "$PLAIN" "$script" 16
  pgbench_run citus "$C" "$script" 16
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }'; }
{
  echo "# The service on plain PostgreSQL and on Citus (coordinator + 2 workers), one machine, $(date -u +%Y-%m-%d)"
  echo
  echo "$(nproc) cores; every node, the service, the Stripe stand-in and the load generator share them. ${DURATION} s per line."
  echo
  echo "| scenario | plain PostgreSQL | Citus | Citus / plain |"
  echo "|---|---|---|---|"
  for c in "${CONCURRENCY[@]}"; do
    for mode in new replay; do
      echo "| $([ "$mode" = new ] && echo "new charges" || echo "replays"), concurrency $c | ${RESULT[plain-$mode-c$c]} | ${RESULT[citus-$mode-c$c]} | $(ratio "${RATE[plain-$mode-c$c]}" "${RATE[citus-$mode-c$c]}") |"
    done
  done
  echo "| pgbench: read + claim + finish (the database's part of a new charge), 16 clients | ${RESULT[plain-pgb-claim_finish-c16]} | ${RESULT[citus-pgb-claim_finish-c16]} | $(ratio "${RATE[plain-pgb-claim_finish-c16]}" "${RATE[citus-pgb-claim_finish-c16]}") |"
  echo "| pgbench: the replay's read, 16 clients | ${RESULT[plain-pgb-replay-c16]} | ${RESULT[citus-pgb-replay-c16]} | $(ratio "${RATE[plain-pgb-replay-c16]}" "${RATE[citus-pgb-replay-c16]}") |"
  echo
  echo "Database CPU per pgbench transaction (µs; the clock ticks of each node's processes over the transactions):"
  echo
  echo "| pgbench script | plain PostgreSQL | Citus: coordinator | Citus: the workers |"
  echo "|---|---|---|---|"
  for script in claim_finish replay; do
    read -r plain_us _ _ <<<"${CPU[plain-pgb-$script-c16]}"
    read -r _ coordinator_us workers_us <<<"${CPU[citus-pgb-$script-c16]}"
    echo "| $script | $plain_us | $coordinator_us | $workers_us |"
  done
} | tee "$OUT/citus.md"
log "results in $OUT"

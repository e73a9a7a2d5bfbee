#!/usr/bin/env bash
# Where the service stands on Citus: starts a Citus cluster on loopback (a coordinator and two workers),
# applies the service's migrations (V1.15.0 distributes the two tables by client_id on Citus),
# then runs the store's hot-path statements, exactly as the package writes them (StatementCatalog, the scripts
# bench/run.sh gives pgbench), against the distributed tables, and prints which ones Citus runs and which it refuses.
#
#   scale/citus/probe.sh [--keep]      (as root; ./mvnw package first, or the script builds the package)
#
# Citus: used as installed in the machine's PostgreSQL 15 (citus.so in pg_config --pkglibdir); when it is missing,
# built by CITUS_BUILD (default ../shared/citus/build.sh beside the project). Starts everything on 127.0.0.1 and
# stops everything it started (--keep leaves the work directory), nothing else.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
source bench/lib.sh
[ "${1:-}" = --keep ] && KEEP_WORK=1
trap cleanup_started EXIT
pick_java
pick_postgres
need_citus

if [ ! -f target/quarkus-app/quarkus-run.jar ]; then
  log "building the service package"
  ./mvnw -B -ntp -q -DskipTests package
fi
make_work_dir chargeonce-citus
COORDINATOR=$(free_port); WORKER1=$(free_port); WORKER2=$(free_port)
log "Citus: coordinator 127.0.0.1:$COORDINATOR, workers $WORKER1 and $WORKER2 (work dir $WORK_DIR)"
start_citus citus chargeonce "$COORDINATOR" "$WORKER1" "$WORKER2"
for migration in $(ls src/main/resources/db/migration/*.sql | sort -V); do
  psql_at "$COORDINATOR" chargeonce -f "$migration" >/dev/null
done
log "schema migrated; stripe_intents and stripe_refunds distributed by client_id (V1.15.0)"

java -cp "target/quarkus-app/app/*:target/quarkus-app/lib/main/*" dev.chargeonce.idempotency.StatementCatalog "$WORK_DIR/statements"
bench_tool pgbench-scripts "$WORK_DIR/statements" "$WORK_DIR/pgbench" >/dev/null
defines=()
while IFS= read -r line; do defines+=(-D "$line"); done <"$WORK_DIR/pgbench/defines.txt"
# charges for the refund scripts (client pgbench, as bench/run.sh makes them)
KEY_SECRET=$(head -c 32 /dev/urandom | base64)
psql_at "$COORDINATOR" chargeonce -c "CREATE EXTENSION IF NOT EXISTS pgcrypto" \
  -c "CREATE TABLE bench_pool AS SELECT n, 'pi_probe' || n AS pi FROM generate_series(0, 99) n" >/dev/null
psql_at "$COORDINATOR" chargeonce -v client=pgbench -v prefix=pgbref -v amount=1000000 -v key_secret="$KEY_SECRET" \
  -f bench/sql/refund_charges.sql >/dev/null
psql_at "$COORDINATOR" chargeonce -v client=pgbench -v prefix=pgbhot -v amount=1000000 -v key_secret="$KEY_SECRET" \
  -f bench/sql/refund_charges.sql >/dev/null

echo
echo "| statement set (pgbench script) | on the distributed tables |"
echo "|---|---|"
for script in claim_finish replay refund_hot refund_many; do
  status=0
  out=$("$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$COORDINATOR" -U postgres -t 5 -c 1 -M prepared "${defines[@]}" \
        -D replay_rows=1 -D refund_charges=100 -D refund_replay_rows=1 -D key_secret="$KEY_SECRET" \
        -f "$WORK_DIR/pgbench/$script.sql" chargeonce 2>&1) || status=$?
  refusal=$(grep -o 'ERROR: .*' <<<"$out" | head -1 || true)
  if [ -n "$refusal" ]; then
    echo "| $script | refused: ${refusal#ERROR:  } |"
  elif [ "$status" -ne 0 ] || grep -q 'aborted' <<<"$out"; then
    echo "| $script | failed (pgbench exit $status): $(grep -v '^$' <<<"$out" | tail -1) |"
  else
    echo "| $script | runs ($(grep -o 'tps = [0-9.]*' <<<"$out" | head -1)) |"
  fi
done

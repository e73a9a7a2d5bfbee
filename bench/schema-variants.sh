#!/usr/bin/env bash
# What PostgreSQL's CPU per charge would have to give up for "a third less than before": today's pair
# (the claim's read and insert, and the finish, as the package runs them) on today's schema, on the same schema
# without its CHECK guards, and without those and three secondary indexes (the client's listing, finished_at for
# retention and reconciliation, payment_intent for webhooks), against the pair before its rework for cost (main as of
# 71fb6c2, bench/sql/before/) on its schema
# (migrations V1.0.0-V1.7.0). pgbench, 16 clients, rounds in shuffled order, 200,000 rows each, autovacuum off.
#
#   bench/schema-variants.sh [rounds (8)] [seconds per run (6)]
#
# Prints one line per run and the mean of each variant; like bench/run.sh it starts its own PostgreSQL on 127.0.0.1
# and stops what it started (and nothing else). An experiment, not a proposal: every index and guard it drops is
# what a guarantee or a feature stands on (README, on the floor).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
source bench/lib.sh
ROUNDS=${1:-8}
SECONDS_PER_RUN=${2:-6}
KEY_SECRET="Y2hhcmdlb25jZSBiZW5jaCBrZXkgaGFzaCBzZWNyZXQsIHYx"   # as bench/run.sh: the identities bench/sql computes
trap cleanup_started EXIT
pick_java
pick_postgres
[ -f target/quarkus-app/quarkus-run.jar ] || ./mvnw -B -ntp -q -DskipTests package
make_work_dir chargeonce-schema-variants
java -cp "target/quarkus-app/app/*:target/quarkus-app/lib/main/*" dev.chargeonce.idempotency.StatementCatalog "$WORK_DIR/statements" >/dev/null
bench_tool pgbench-scripts "$WORK_DIR/statements" "$WORK_DIR/pgbench"
cp bench/sql/before/claim_finish.sql "$WORK_DIR/pgbench/before_claim_finish.sql"

PG_PORT=$(free_port)
start_pg pg "$PG_PORT" "synchronous_commit = on" "fsync = on" "max_connections = 400" "shared_buffers = 1GB" \
  "max_wal_size = 8GB" "checkpoint_timeout = 15min" "log_min_messages = warning" "autovacuum = off"
PG_POSTMASTER=$(head -1 "$WORK_DIR/pg/postmaster.pid")
CLK_TCK=$(getconf CLK_TCK)
load_database() { # load_database <name> <migrations glob> <key secret>
  psql_at "$PG_PORT" postgres -c "CREATE DATABASE $1" >/dev/null
  psql_at "$PG_PORT" "$1" -c "CREATE EXTENSION pgcrypto" >/dev/null
  for migration in $(ls $2 | sort -V); do psql_at "$PG_PORT" "$1" -f "$migration" >/dev/null; done
  psql_at "$PG_PORT" "$1" -v from=0 -v upto=200000 -v key_secret="$3" -f bench/sql/bulk_rows.sql >/dev/null
  psql_at "$PG_PORT" "$1" -c "VACUUM ANALYZE stripe_intents" -c CHECKPOINT >/dev/null
}
log "loading four databases of 200,000 rows"
for db in today nochecks lean; do load_database "$db" 'src/main/resources/db/migration/V*.sql' "$KEY_SECRET"; done
load_database before 'src/main/resources/db/migration/V1.[0-7].*__*.sql' ""
for db in nochecks lean; do
  psql_at "$PG_PORT" "$db" -c "DO \$\$ DECLARE c text; BEGIN
      FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = 'stripe_intents'::regclass AND contype = 'c' LOOP
        EXECUTE format('ALTER TABLE stripe_intents DROP CONSTRAINT %I', c);
      END LOOP; END \$\$" >/dev/null
done
psql_at "$PG_PORT" lean -c "DROP INDEX stripe_intents_client_created, stripe_intents_finished_at, stripe_intents_payment_intent" >/dev/null
for db in today nochecks lean before; do
  log "$db: $(psql_at "$PG_PORT" "$db" -At -c "SELECT count(*) FROM pg_index WHERE indrelid = 'stripe_intents'::regclass") indexes, $(psql_at "$PG_PORT" "$db" -At -c "SELECT count(*) FROM pg_constraint WHERE conrelid = 'stripe_intents'::regclass AND contype = 'c'") checks on stripe_intents"
done

defines=()
while IFS= read -r line; do defines+=(-D "$line"); done <"$WORK_DIR/pgbench/defines.txt"
: >"$WORK_DIR/runs.txt"
for round in $(seq 1 "$ROUNDS"); do
  for db in $(printf '%s\n' today nochecks lean before | shuf); do
    script="$WORK_DIR/pgbench/claim_finish.sql"; [ "$db" = before ] && script="$WORK_DIR/pgbench/before_claim_finish.sql"
    before=$(pg_cpu_ticks "$PG_POSTMASTER")
    PGPASSWORD=x "$PG_BIN/pgbench" -n -M prepared -h 127.0.0.1 -p "$PG_PORT" -U postgres -c 16 -j 2 -T "$SECONDS_PER_RUN" \
      -D replay_rows=1000 -D refund_charges=1000 -D refund_replay_rows=1000 "${defines[@]}" -f "$script" "$db" \
      >"$WORK_DIR/out.txt" 2>&1 || die "pgbench on $db failed: $(tail -3 "$WORK_DIR/out.txt")"
    sleep 1.5 # see pg_cpu_ticks
    after=$(pg_cpu_ticks "$PG_POSTMASTER")
    n=$(awk '/number of transactions actually processed/ {print $NF}' "$WORK_DIR/out.txt" | cut -d/ -f1)
    tps=$(awk '/^tps/ {printf "%.0f", $3; exit}' "$WORK_DIR/out.txt")
    ms=$(awk -v a="$after" -v b="$before" -v n="$n" -v t="$CLK_TCK" 'BEGIN {printf "%.4f", (a - b) * 1000 / t / n}')
    echo "$round $db $tps $ms" | tee -a "$WORK_DIR/runs.txt"
  done
done
echo
echo "| variant (indexes, checks on stripe_intents) | pairs/s (mean) | PostgreSQL ms per pair (mean) | ÷ before |"
echo "|---|---:|---:|---:|"
awk '{ tps[$2] += $3; ms[$2] += $4; n[$2]++ }
  END { b = ms["before"] / n["before"]
        split("today nochecks lean before", order, " ")
        label["today"] = "today (7 indexes, 6 checks)"; label["nochecks"] = "today without the checks (7, 0)"
        label["lean"] = "and without 3 secondary indexes (4, 0)"; label["before"] = "before the rework (8, 5)"
        for (i = 1; i <= 4; i++) { v = order[i]
          printf "| %s | %.0f | %.3f | %.2f |\n", label[v], tps[v] / n[v], ms[v] / n[v], ms[v] / n[v] / b } }' \
  "$WORK_DIR/runs.txt"

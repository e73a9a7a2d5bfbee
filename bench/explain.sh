#!/usr/bin/env bash
# bench/explain.sh: what PostgreSQL does for one new charge (claim + finish) and one replay, with the statements before
# their rework for cost (bench/sql/before/: main as of 71fb6c2, on the schema of migrations V1.0.0-V1.7.0) and today's
# (from the package, on today's schema), each on 200,000 bulk-loaded rows: EXPLAIN (ANALYZE, BUFFERS, WAL) of each
# statement after a warm-up of the same statement (generic plans, as the service's prepared statements use), printed
# side by side.
#
#   bench/explain.sh [--rows 200000] [--out FILE]
#
# Starts its own PostgreSQL 15 on a free loopback port in a temporary directory and stops it on exit.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source bench/lib.sh
ROWS=200000
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    *) die "unknown option $1" ;;
  esac
done
trap cleanup_started EXIT
pick_java
pick_postgres
SERVICE_JAR=target/quarkus-app/quarkus-run.jar
[ -f "$SERVICE_JAR" ] || ./mvnw -B -ntp -q -DskipTests package
make_work_dir chargeonce-explain
java -cp "target/quarkus-app/app/*:target/quarkus-app/lib/main/*" dev.chargeonce.idempotency.StatementCatalog "$WORK_DIR/statements"
bench_tool pgbench-scripts "$WORK_DIR/statements" "$WORK_DIR/pgbench"
PORT=$(free_port)
start_pg pg "$PORT" "shared_buffers = 1GB" "log_min_messages = warning"
psql_at "$PORT" postgres -c "CREATE DATABASE before" -c "CREATE DATABASE after"
# hmac() for the identities bench/sql computes (KeyIdentities: HMAC-SHA256 under the bench's secret)
psql_at "$PORT" before -c "CREATE EXTENSION pgcrypto"
psql_at "$PORT" after -c "CREATE EXTENSION pgcrypto"
for migration in $(ls src/main/resources/db/migration/V*.sql | sort -V); do
  case "$(basename "$migration")" in V1.[0-7].*) psql_at "$PORT" before -f "$migration" >/dev/null ;; esac
  psql_at "$PORT" after -f "$migration" >/dev/null
done
for db in before after; do
  # the schema before the rework finds rows by their key: it keeps them, and no secret
  secret="Y2hhcmdlb25jZSBiZW5jaCBrZXkgaGFzaCBzZWNyZXQsIHYx"; [ "$db" = before ] && secret=""
  psql_at "$PORT" "$db" -v from=0 -v upto="$ROWS" -v key_secret="$secret" -f bench/sql/bulk_rows.sql
  psql_at "$PORT" "$db" -c "VACUUM ANALYZE stripe_intents"
done
# A pgbench script's statements, with its variables set for key n, as EXPLAIN-able statements: the explain runs the
# statement for real (ANALYZE), so each statement sees the rows the one before it made.
bench_tool explain-scripts "$WORK_DIR/pgbench" bench/sql/before "$WORK_DIR/explain"
report() {
  local db="$1" file="$2"
  # six runs first, so that the plan is the generic one a prepared statement gets, then the one shown
  psql_at "$PORT" "$db" -X -q -f "$file" 2>&1 | sed -n '/^-- shown$/,$p'
}
{
  for case in pair replay; do
    for side in before after; do
      echo "==== $case, $side"
      report "$side" "$WORK_DIR/explain/$side-$case.sql"
    done
  done
  echo "==== index sizes and counts after the bulk load ($ROWS rows)"
  for db in before after; do
    psql_at "$PORT" "$db" -At -c "SELECT '$db: ' || count(*) || ' indexes on stripe_intents, ' || pg_size_pretty(sum(pg_relation_size(indexrelid))) FROM pg_index WHERE indrelid = 'stripe_intents'::regclass"
  done
} | tee "${OUT:-/dev/stdout}" >/dev/null
[ -n "$OUT" ] && cat "$OUT"

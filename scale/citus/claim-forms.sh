#!/usr/bin/env bash
# The claim in three forms, side by side, on plain PostgreSQL and on Citus: what each costs a new key and
# a replay, measured with pgbench in one run.
#
#   read-first (the CLAIM of earlier releases): one statement, a CTE that reads the key's row and inserts only when there is none
#   insert-first (the form proposed against it): INSERT … ON CONFLICT DO NOTHING RETURNING; only on conflict, a read of the row
#   read-then-insert (today's PEEK then CLAIM): a plain read of the key's row; only when there is none, INSERT … ON CONFLICT DO NOTHING RETURNING
#                     (a conflict there: a concurrent claim won, read again)
#
#   scale/citus/claim-forms.sh [seconds per run, default 15] [clients, default 8]      (as root)
#
# The forms run the same columns as StatementCatalog's CLAIM and READ_COLUMNS (copied here: this compares forms,
# not the store's current text). Identities and clients are plain strings (no HMAC): only the claim is measured.
# Citus: a coordinator and two workers with the tables distributed by client_id (the service's migration V1.15.0); on one
# machine this measures Citus's overhead per statement, not its scale. Starts everything on 127.0.0.1, stops it all.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
source bench/lib.sh
SECONDS_PER_RUN=${1:-15}
CLIENTS=${2:-8}
REPLAY_ROWS=20000
trap cleanup_started EXIT
pick_postgres
need_citus
make_work_dir chargeonce-claim-forms

PLAIN=$(free_port); COORDINATOR=$(free_port); WORKER1=$(free_port); WORKER2=$(free_port)
log "plain PostgreSQL on $PLAIN; Citus coordinator $COORDINATOR, workers $WORKER1 and $WORKER2 (work dir $WORK_DIR)"
start_pg plain "$PLAIN" "max_connections = 300"
psql_at "$PLAIN" postgres -c "CREATE DATABASE chargeonce" >/dev/null
start_citus citus chargeonce "$COORDINATOR" "$WORKER1" "$WORKER2"
for port in "$PLAIN" "$COORDINATOR"; do
  for migration in $(ls src/main/resources/db/migration/*.sql | sort -V); do
    psql_at "$port" chargeonce -f "$migration" >/dev/null
  done
done
for port in "$PLAIN" "$COORDINATOR"; do
  psql_at "$port" chargeonce -c "
    INSERT INTO stripe_intents (id, client_id, fingerprint, request, amount, currency, status, response_status,
                                response_body, finished_at, stripe_identity)
    SELECT 'chg_replay' || n, 'cl' || (n % 64), 'f', '{}', 1000, 'usd', 'completed', 201, '{\"id\":\"x\"}', now(), 'r' || n
      FROM generate_series(0, $REPLAY_ROWS - 1) n" >/dev/null
  psql_at "$port" chargeonce -c "VACUUM ANALYZE stripe_intents" >/dev/null
done
log "schema migrated on both, $REPLAY_ROWS answered keys to replay"

READ_COLUMNS="x.id, x.client_id, x.fingerprint, x.request, x.amount, x.currency, x.status, x.lease_gen, x.stripe_attempt,
  x.last_stripe_error, x.needs_reconciliation, x.response_status, x.response_body, x.created_at, x.finished_at,
  x.stripe_key_first_sent, x.stripe_key_last_sent, x.payment_intent_id AS object_id, x.pending_checks, x.stripe_identity,
  statement_timestamp() AS db_now,
  (statement_timestamp() - x.stripe_key_first_sent) > 82800000 * interval '1 millisecond' AS beyond_horizon,
  ceil(extract(epoch FROM (x.lease_until - statement_timestamp())) * 1000)::bigint AS lease_left_ms"
INSERT_COLUMNS="(id, client_id, idempotency_key, fingerprint, request, amount, currency, status, lease_until,
   stripe_sending_until, stripe_identity, origin, created_at, updated_at, stripe_key_first_sent)"
insert_values() { # <id expr> <client expr> <identity expr>
  echo "$1, $2, NULL, 'f', '{\"amount\":1000}', 1000, 'usd', 'processing',
   statement_timestamp() + 30000 * interval '1 millisecond', statement_timestamp() + 30000 * interval '1 millisecond',
   $3, NULL, statement_timestamp(), statement_timestamp(), statement_timestamp()"
}
read_first() { # <id expr> <client expr> <identity expr>
  cat <<SQL
WITH existing AS (
    SELECT false AS fresh, $READ_COLUMNS FROM stripe_intents x WHERE x.stripe_identity = $3 AND x.client_id = $2),
inserted AS (
    INSERT INTO stripe_intents AS si $INSERT_COLUMNS
    SELECT $(insert_values "$1" "$2" "$3")
     WHERE NOT EXISTS (SELECT 1 FROM existing)
    ON CONFLICT DO NOTHING
    RETURNING si.lease_gen, si.created_at, si.stripe_key_first_sent)
SELECT i.lease_gen AS new_lease_gen, i.created_at AS new_created_at, i.stripe_key_first_sent AS new_key_first_sent, e.*
  FROM (SELECT 1) AS one LEFT JOIN existing e ON true LEFT JOIN inserted i ON true;
SQL
}
insert_first() { # <id expr> <client expr> <identity expr> <replay: read after the conflict>
  cat <<SQL
INSERT INTO stripe_intents AS si $INSERT_COLUMNS
VALUES ($(insert_values "$1" "$2" "$3"))
ON CONFLICT DO NOTHING
RETURNING si.lease_gen, si.created_at, si.stripe_key_first_sent;
SQL
  if [ "$4" = replay ]; then
    echo "SELECT false AS fresh, $READ_COLUMNS FROM stripe_intents x WHERE x.stripe_identity = $3 AND x.client_id = $2;"
  fi
}
read_then_insert() { # <id expr> <client expr> <identity expr> <new: the read misses, then the insert>
  echo "SELECT false AS fresh, $READ_COLUMNS FROM stripe_intents x WHERE x.stripe_identity = $3 AND x.client_id = $2;"
  if [ "$4" = new ]; then
    insert_first "$1" "$2" "$3" new
  fi
}
NEW_VARS=$'\\set k random(1, 9000000000000000000)\n\\set c random(0, 63)\n'
REPLAY_VARS=$'\\set i random(0, '"$((REPLAY_ROWS - 1))"$')\n'
NEW_ID="'chg_n' || CAST(:k AS text)"; NEW_CLIENT="'cl' || CAST(:c AS text)"; NEW_IDENTITY="'n' || CAST(:k AS text)"
REPLAY_ID="'chg_replay' || CAST(:i AS text)"; REPLAY_CLIENT="'cl' || CAST(:i % 64 AS text)"; REPLAY_IDENTITY="'r' || CAST(:i AS text)"
{ printf '%s' "$NEW_VARS"; read_first "$NEW_ID" "$NEW_CLIENT" "$NEW_IDENTITY"; } >"$WORK_DIR/read_first_new.sql"
{ printf '%s' "$NEW_VARS"; insert_first "$NEW_ID" "$NEW_CLIENT" "$NEW_IDENTITY" new; } >"$WORK_DIR/insert_first_new.sql"
{ printf '%s' "$REPLAY_VARS"; read_first "$REPLAY_ID" "$REPLAY_CLIENT" "$REPLAY_IDENTITY"; } >"$WORK_DIR/read_first_replay.sql"
{ printf '%s' "$REPLAY_VARS"; insert_first "$REPLAY_ID" "$REPLAY_CLIENT" "$REPLAY_IDENTITY" replay; } >"$WORK_DIR/insert_first_replay.sql"
{ printf '%s' "$NEW_VARS"; read_then_insert "$NEW_ID" "$NEW_CLIENT" "$NEW_IDENTITY" new; } >"$WORK_DIR/read_then_insert_new.sql"
{ printf '%s' "$REPLAY_VARS"; read_then_insert "$REPLAY_ID" "$REPLAY_CLIENT" "$REPLAY_IDENTITY" replay; } >"$WORK_DIR/read_then_insert_replay.sql"

run() { # <port> <script>: transactions per second (each script is one claim)
  local out
  out=$("$PG_BIN/pgbench" -n -h 127.0.0.1 -p "$1" -U postgres -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" -M prepared \
        -f "$WORK_DIR/$2.sql" chargeonce 2>&1) || { log "pgbench $2 on $1 failed: $(tail -3 <<<"$out")"; echo failed; return; }
  grep -q 'aborted' <<<"$out" && { log "pgbench $2 on $1: $(grep -m1 -o 'ERROR: .*' <<<"$out")"; echo failed; return; }
  grep -o 'tps = [0-9.]*' <<<"$out" | head -1 | sed 's/tps = //; s/\..*//'
}
log "each form ${SECONDS_PER_RUN}s at $CLIENTS clients, prepared statements"
echo
echo "| claim (pgbench, $CLIENTS clients, ${SECONDS_PER_RUN}s) | plain PostgreSQL, claims/s | Citus (coordinator + 2 workers), claims/s |"
echo "|---|---|---|"
for script in read_first_new insert_first_new read_then_insert_new read_first_replay insert_first_replay read_then_insert_replay; do
  echo "| $script | $(run "$PLAIN" "$script") | $(run "$COORDINATOR" "$script") |"
done

# Sourced by bench/run.sh: how one measurement is taken. wrk and pgbench runs with the CPU each process used over
# them (from /proc: the service, the pass-through, the Stripe stand-in, PostgreSQL, the --versus-jar service, the
# floor), the pools of charges refunds need, the samplers that run beside a measurement, the bulk loads, the JIT's
# warm-up check, and the order builds take turns in.
# shellcheck shell=bash
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
  # the schema before the statements were reworked (bench/sql/before/) finds rows by their key (stored) and its
  # unkeyed hash: no secret there
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

# The builds a round of --focus or --slow measures, in its order: this one first in odd rounds, --versus-jar's first
# in even ones. Whichever runs first in a round was measured slower on this machine (README, "a queue before the
# claim"), so a fixed order favours one build.
builds_in_order() {
  if [ -z "$VERSUS_JAR" ]; then echo svc
  elif [ $(( $1 % 2 )) = 1 ]; then echo "svc vs"
  else echo "vs svc"; fi
}
port_of() { case $1 in svc) echo "$SVC_PORT" ;; vs) echo "$VS_PORT" ;; pt) echo "$PT_PORT" ;; esac; }

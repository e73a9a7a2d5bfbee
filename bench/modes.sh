# Sourced by bench/run.sh: the runs that answer one question each, instead of the full run (their options in
# bench/run.sh's usage). bench/run.sh calls one of them and stops.
# shellcheck shell=bash

# soak_run (--soak): new charges for a long time, minute by minute, against PostgreSQL's default settings; soak.md and
# soak.svg in the results.
soak_run() {
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
  bench_tool soak "$OUT" | tee "$OUT/soak.md"
}

# profile_run (--profile): where the service's CPU and allocations go, as flame graphs (async-profiler).
profile_run() {
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
}

# focus_run (--focus): CPU per new charge and per replay, service against pass-through and the floor, side by side,
# in interleaved rounds; focus.md in the results.
focus_run() {
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
  for round in 1 2; do # today's statements and those before they were reworked (bench/sql/before/), interleaved
    pgbench_run "f-pgb-pair-$round" claim_finish.sql 16 "$DURATION"
    PGB_DB=chargeonce_before pgbench_run "f-pgb-before-pair-$round" before_claim_finish.sql 16 "$DURATION"
    pgbench_run "f-pgb-replay-$round" replay.sql 16 "$DURATION" $(( REPLAY_POOL / 10 ))
    PGB_DB=chargeonce_before pgbench_run "f-pgb-before-replay-$round" before_replay.sql 16 "$DURATION" $(( REPLAY_POOL / 10 ))
    PGB_DB=chargeonce_minimal pgbench_run "f-pgb-minimal-pair-$round" minimal_pair.sql 16 "$DURATION"
  done
  bench_tool focus "$OUT" | tee "$OUT/focus.md"
}

# slow_run (--slow): scenario 4 alone, where in-flight requests meet a slow Stripe, with each service's zero-latency
# rate in the same round; slow.md in the results.
slow_run() {
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
}

# Sourced by bench/run.sh: the full run's measurements, after the warm-up: the references (pgbench with the
# service's statements), then scenarios 1-7 (new charges with the pass-through and the floor, replays, refunds and
# their replays, the mix, a slow Stripe, the growth of the table). bench_tool report prints their tables.
# shellcheck shell=bash

full_run() {
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
  psql_at "$PG_PORT" chargeonce -c "TRUNCATE outside_refunds, stripe_refunds, stripe_intents"
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
}

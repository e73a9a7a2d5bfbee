#!/usr/bin/env bash
# Tables from results.tsv (run.sh): one row per scenario, load, variant and capacity; each cell lists the runs'
# values in the order they ran ("a / b"), so that the spread is seen, not averaged away.
set -euo pipefail
results="${1:-$(dirname "$0")/results.tsv}"
awk -F'\t' '
function v(name,   i, kv) { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] } return "" }
function add(key, col, val) { cell[key, col] = (cell[key, col] == "" ? val : cell[key, col] " / " val) }
{
  s = v("scenario"); key = s "|" v("offered") "|" v("variant") "|" (v("variant") ~ /^b4j/ ? v("capacity") : "-")
  if (!((s, v("offered")) in loads)) { loads[s, v("offered")] = 1; load[++m] = v("offered") }
  if (!(key in seen)) { seen[key] = 1; order[++n] = key }
  add(key, "rt", v("roundtrips_per_permit")); add(key, "p50", v("p50_ms")); add(key, "p99", v("p99_ms"))
  add(key, "cpu", v("jvm_cpu_us_per_permit")); add(key, "pg", v("pg_cpu_us_per_permit")); add(key, "load", v("load1"))
  add(key, "permits", v("permits")); add(key, "refused", v("refused"))
  add(key, "max", v("max_any_second")); add(key, "max2", v("max_any_second_after_2s"))
  add(key, "granted", v("granted_in_run") "/" v("allowed_in_run")); add(key, "steady", v("steady_rate"))
}
END {
  print "### Far below the limit (rate 1000/s)\n"
  print "| offered/s | variant | capacity | round trips/permit | p50 ms | p99 ms | JVM CPU µs/permit | PG CPU µs/permit | permits | load avg |"
  print "|---|---|---|---|---|---|---|---|---|---|"
  for (j = 1; j <= m; j++) for (i = 1; i <= n; i++) { split(order[i], k, "|"); if (k[1] != "below" || k[2] != load[j]) continue
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", k[2], k[3], k[4], cell[order[i], "rt"], cell[order[i], "p50"],
      cell[order[i], "p99"], cell[order[i], "cpu"], cell[order[i], "pg"], cell[order[i], "permits"], cell[order[i], "load"] }
  print "\n### At the limit (rate 20/s, 32 threads)\n"
  print "| variant | capacity | max in any 1 s | max in any 1 s after 2 s | granted in run / 20 x s | steady rate/s | round trips/permit | p50 wait ms | JVM CPU µs/permit | PG CPU µs/permit | refused | load avg |"
  print "|---|---|---|---|---|---|---|---|---|---|---|---|"
  for (i = 1; i <= n; i++) { split(order[i], k, "|"); if (k[1] != "limit") continue
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", k[3], k[4], cell[order[i], "max"],
      cell[order[i], "max2"], cell[order[i], "granted"], cell[order[i], "steady"], cell[order[i], "rt"], cell[order[i], "p50"],
      cell[order[i], "cpu"], cell[order[i], "pg"], cell[order[i], "refused"], cell[order[i], "load"] }
}' "$results"

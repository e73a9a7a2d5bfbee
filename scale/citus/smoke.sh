#!/usr/bin/env bash
# The service itself on a Citus cluster, by hand: a coordinator and two workers on loopback, the service
# started on the coordinator (its migration V1.15.0 distributes the tables), then 20 new charges, their replays
# (byte-identical), 16 posts of one key at once, a refund and its replay, and what the database and the Stripe
# sandbox hold. Prints; asserts nothing: scale/citus/run.sh is the proof (the process tests and chaos on Citus).
#
#   scale/citus/smoke.sh      (as root, after ./mvnw package)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source bench/lib.sh
trap cleanup_started EXIT
pick_java; pick_postgres; need_citus
make_work_dir chargeonce-citus-smoke
C=$(free_port); W1=$(free_port); W2=$(free_port); S=$(free_port); P=$(free_port); M=$(free_port)
start_citus citus chargeonce "$C" "$W1" "$W2"
SANDBOX_JAR=target/chargeonce-1.0.0-SNAPSHOT-sandbox.jar
start_bg "$WORK_DIR/stripe.log" java -Xmx512m -cp "$SANDBOX_JAR" dev.chargeonce.sandbox.StripeSandbox "$S" 0
wait_http "http://127.0.0.1:$S/_sandbox/stats" 30 "$LAST_PID" || die "sandbox"
API_KEY=sk_smoke_$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
SECRET=$(head -c 32 /dev/urandom | base64)
svc() {
  start_chargeonce "$WORK_DIR/service-$1.log" "$P" "$M" "$C" "$S" "smoke:$API_KEY" "$SECRET" -Xmx512m
  SVC=$LAST_PID
  wait_http "http://127.0.0.1:$M/q/health/ready" 90 "$SVC" || { tail -30 "$WORK_DIR/service-$1.log"; die "service $1"; }
}
svc 1
psql_at "$C" chargeonce -Atc "SELECT logicalrelid, partmethod FROM pg_dist_partition"
post() { curl -s -o "$WORK_DIR/body" -w '%{http_code}' -X POST "http://127.0.0.1:$P/v1/charges" -H "Authorization: Bearer $API_KEY" \
  -H "Idempotency-Key: $1" -H 'Content-Type: application/json' -d '{"amount":1000,"currency":"usd","payment_method":"pm_card_visa"}'; }
codes=""
for i in $(seq 1 20); do codes+="$(post "smoke-$i") "; done
echo "first posts: $codes"
cp "$WORK_DIR/body" "$WORK_DIR/body-20"
codes=""
for i in $(seq 1 20); do codes+="$(post "smoke-$i") "; done
echo "replays: $codes"
cmp -s "$WORK_DIR/body" "$WORK_DIR/body-20" && echo "replay of smoke-20 byte-identical" || { echo "replay differs:"; cat "$WORK_DIR/body-20"; echo; cat "$WORK_DIR/body"; }
# 16 concurrent posts of one key
pids=(); for i in $(seq 1 16); do (post smoke-race > "$WORK_DIR/race-$i") & pids+=($!); done; wait "${pids[@]}"; echo "16 at once, one key: $(cat "$WORK_DIR"/race-* | tr "\n" " ")"
CHG=$(sed -n 's/.*"id":"\(chg_[^"]*\)".*/\1/p' "$WORK_DIR/body-20")
echo "refund: $(curl -s -w ' %{http_code}' -X POST "http://127.0.0.1:$P/v1/charges/$CHG/refunds" -H "Authorization: Bearer $API_KEY" \
  -H "Idempotency-Key: r-1" -H 'Content-Type: application/json' -d '{"amount":100}')"
echo "refund replay: $(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$P/v1/charges/$CHG/refunds" -H "Authorization: Bearer $API_KEY" \
  -H "Idempotency-Key: r-1" -H 'Content-Type: application/json' -d '{"amount":100}')"
echo "get: $(curl -s -w ' %{http_code}' "http://127.0.0.1:$P/v1/charges/$CHG" -H "Authorization: Bearer $API_KEY")"
psql_at "$C" chargeonce -Atc "SELECT status, count(*) FROM stripe_intents GROUP BY 1"; psql_at "$C" chargeonce -Atc "SELECT count(*) FROM stripe_intents WHERE stripe_identity IN (SELECT stripe_identity FROM stripe_intents GROUP BY 1 HAVING count(*) > 1)"
psql_at "$C" chargeonce -Atc "SELECT status, count(*) FROM stripe_refunds GROUP BY 1"
curl -s "http://127.0.0.1:$S/_sandbox/stats"; echo
grep -c "ERROR" "$WORK_DIR/service-2.log" || true
grep "ERROR" "$WORK_DIR/service-2.log" | cut -c1-300 | sort | uniq -c | sort -rn | head -10

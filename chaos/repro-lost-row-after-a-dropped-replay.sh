#!/usr/bin/env bash
# A deterministic reproduction of a lost row charged twice (README "Chaos", known limits), for whoever fixes it:
#
#   1. attempt 1 charges and Stripe answers 500 (stored for the key); the retry gets the 500 replayed and the lookup
#      finds the PaymentIntent: 201, PaymentIntent 1;
#   2. more than lookup-skew later the database loses the row (a failover to an asynchronous standby, a restore);
#   3. the retry claims a new row; its first try of attempt 1 is answered by a replay that is dropped on the way (so
#      the try "may have executed"), the fault-tolerance retry of the same call gets the stored 500 replayed.
#
# Expected: 201 naming PaymentIntent 1 (or 503 charge_under_reconciliation). Exits 1 when Stripe then holds two
# PaymentIntents for the key. Same settings as the chaos instances; its own PostgreSQL 15, stand-in and one
# instance of the packaged service (./mvnw -B -q -Dmaven.test.skip=true package), all on 127.0.0.1, all stopped.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
source bench/lib.sh
trap cleanup_started EXIT
pick_java
pick_postgres
make_work_dir chargeonce-repro
PG=$(free_port); SB=$(free_port); SVC=$(free_port)
start_pg primary "$PG"
psql_at "$PG" postgres -c "CREATE DATABASE chargeonce"
APP=target/quarkus-app/app/chargeonce-1.0.0-SNAPSHOT.jar
start_bg "$WORK_DIR/stripe.log" java -cp "$APP" dev.chargeonce.sandbox.StripeSandbox "$SB" 0
wait_http "http://127.0.0.1:$SB/_sandbox/stats" 30 "$LAST_PID" || die "the Stripe stand-in did not start"
start_bg "$WORK_DIR/service.log" java -Xmx256m -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$SVC" \
  -Dquarkus.log.console.json.enabled=false \
  -Dquarkus.datasource.jdbc.url="jdbc:postgresql://127.0.0.1:$PG/chargeonce" -Dquarkus.datasource.username=postgres \
  -Dquarkus.datasource.password=x -Dchargeonce.stripe.api-key=sk_test_sandbox \
  -Dchargeonce.stripe.api-base="http://127.0.0.1:$SB" -Dchargeonce.auth.clients="acme:$(sha256_hex sk_acme_0123456789)" \
  -Dchargeonce.idempotency.lease=10s -Dchargeonce.stripe.connect-timeout=1s -Dchargeonce.stripe.read-timeout=2s \
  -Dchargeonce.stripe.request-max-duration=15s -Dchargeonce.stripe.lookup-skew=10s -Dchargeonce.recovery.enabled=false \
  -jar target/quarkus-app/quarkus-run.jar
wait_http "http://127.0.0.1:$SVC/q/health/ready" 90 "$LAST_PID" || die "the service did not start, see $WORK_DIR/service.log"

KEY="repro-$(date +%s)"
post() {
  curl -sS -m 30 -w ' -> %{http_code}\n' -H "Authorization: Bearer sk_acme_0123456789" -H "Idempotency-Key: $KEY" \
    -H 'Content-Type: application/json' -d '{"amount":1234,"currency":"usd","payment_method":"pm_card_visa"}' \
    "http://127.0.0.1:$SVC/v1/charges"
}
plan() { curl -sS -m 10 -o /dev/null -X POST "http://127.0.0.1:$SB/_sandbox/faults?plan=$1"; }

log "1. attempt 1 charges, then Stripe answers 500 (stored for the key); the retry's lookup finds the PaymentIntent"
plan fail_after; post; post
log "2. 13 s later (lookup-skew is 10 s) the database loses the row"
sleep 13
psql_at "$PG" chargeonce -c "DELETE FROM stripe_intents WHERE idempotency_key = '$KEY'"
log "3. the new row's first try gets a dropped replay, the retry of the same call the stored 500"
plan drop; post; post
IDENTITY=$(printf 'acme\n%s' "$KEY" | sha256sum | cut -c1-48)
LEDGER=$(curl -sS "http://127.0.0.1:$SB/_sandbox/ledger?key=$IDENTITY")
grep -h "ChargeDriver" "$WORK_DIR/service.log" | cut -c1-240 >&2
COUNT=$(grep -o '"id":"pi_[A-Za-z0-9]*"' <<<"$LEDGER" | sort -u | wc -l)
log "Stripe holds $COUNT PaymentIntent(s) for the key: $(grep -o '"id":"pi_[A-Za-z0-9]*"\|"sandbox_idempotency_key":"[^"]*"' <<<"$LEDGER" | tr '\n' ' ')"
[ "$COUNT" -le 1 ] || { log "CHARGED TWICE"; exit 1; }
log "one PaymentIntent: fixed"

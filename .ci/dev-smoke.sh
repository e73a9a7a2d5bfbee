#!/usr/bin/env bash
# The README's run command, for real: `./mvnw quarkus:dev` on this clone (embedded PostgreSQL, Stripe sandbox), then
# the README's first charge and its retry. A dev mode that cannot start, or reach its database, fails CI (it once
# could not: the driver of dev mode sits in a class loader that cannot see the application's classes).
set -euo pipefail
cd "$(dirname "$0")/.."
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP=$(free_port); MANAGEMENT=$(free_port); SANDBOX=$(free_port)
LOG=$(mktemp /tmp/chargeonce-dev-smoke.XXXXXX.log)
setsid ./mvnw -B -ntp quarkus:dev -Dquarkus.console.enabled=false -Ddebug=false \
  -Dquarkus.http.port="$HTTP" -Dquarkus.management.port="$MANAGEMENT" \
  -Dchargeonce.sandbox.port="$SANDBOX" -Dchargeonce.stripe.api-base="http://127.0.0.1:$SANDBOX" >"$LOG" 2>&1 &
DEV=$!
stop() { kill -TERM -- "-$DEV" 2>/dev/null || true; sleep 3; kill -KILL -- "-$DEV" 2>/dev/null || true; }
trap stop EXIT
fail() { echo "dev-smoke: $*; the last lines of $LOG:" >&2; tail -40 "$LOG" >&2; exit 1; }
for _ in $(seq 1 120); do # up to 4 minutes: the first start compiles and runs initdb
  curl -fsS -m 2 "http://127.0.0.1:$MANAGEMENT/q/health/ready" >/dev/null 2>&1 && break
  kill -0 "$DEV" 2>/dev/null || fail "quarkus:dev exited"
  ! grep -q "Failed to start application" "$LOG" || fail "the application failed to start"
  sleep 2
done
curl -fsS -m 2 "http://127.0.0.1:$MANAGEMENT/q/health/ready" >/dev/null || fail "not ready within 4 minutes"
charge() {
  curl -sS -m 30 -o "$1" -w '%{http_code}' "http://127.0.0.1:$HTTP/v1/charges" -H 'Authorization: Bearer sk_demo_key' \
    -H "Idempotency-Key: dev-smoke-$$" -H 'Content-Type: application/json' \
    -d '{"amount": 1000, "currency": "usd", "payment_method": "pm_card_visa", "metadata": {"order_id": "O-42"}}'
}
FIRST=$(mktemp); RETRY=$(mktemp)
[ "$(charge "$FIRST")" = 201 ] || fail "the README's first charge did not answer 201: $(cat "$FIRST")"
[ "$(charge "$RETRY")" = 201 ] || fail "its retry did not answer 201: $(cat "$RETRY")"
cmp -s "$FIRST" "$RETRY" || fail "the retry's answer differs from the first: $(cat "$FIRST") / $(cat "$RETRY")"
echo "dev-smoke: ./mvnw quarkus:dev started, charged once and replayed the same answer ($(cat "$FIRST" | head -c 60)...)"

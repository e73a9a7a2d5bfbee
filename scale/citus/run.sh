#!/usr/bin/env bash
# The exactly-once proof on a real Citus cluster: a coordinator and two workers on loopback, then the
# service's process tests against it (every test database is made on the cluster and distributed by the service's
# own migrations, V1.15.0), then a short chaos run against two instances on the cluster (kill -9, database cuts
# through the proxy, lost commits, Stripe faults), audited like the one on plain PostgreSQL: any duplicate or loss
# fails this script.
#
#   scale/citus/run.sh [--tests 'A,B,...'] [--chaos-duration 45s] [--no-tests] [--no-chaos]     (as root)
#
# Citus is built into the machine's PostgreSQL 15 when it is missing (bench/lib.sh need_citus: ../shared/citus/
# here, CITUS_BUILD=<build script> elsewhere; a user with their own Citus installation builds nothing). Builds the
# package and the test classes when they are missing. Starts everything on 127.0.0.1, stops all it started.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
source bench/lib.sh

# The process tests that run on Citus: every one but those about another database topology (a streaming replica of
# the test's server: TwoInstancesIT, ReadReplicaIT; a failover of its own server; the release before this one's
# schema) or the Kafka ingress (run by its own chaos on plain PostgreSQL; its outbox and offsets are local tables
# on the coordinator either way). Two instances on one cluster: WaitThenReplayIT, and the chaos run below.
TESTS="ChargeSequencesIT,CrashBetweenStripeAndUpdateIT,DatabaseCutAfterStripeIT,StripeTimeoutIT,\
SlowOriginalRacingTakeoverIT,MarkFailedWhileInFlightIT,RefundsIT,WebhooksIT,WaitThenReplayIT,CircuitBreakerIT,\
GracefulShutdownIT,IdleConnectionsIT,UnsafeConfigurationIT,ProdProfileIT,ReconciliationIT"
CHAOS_DURATION=45s
RUN_TESTS=1
RUN_CHAOS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tests) TESTS="$2"; shift 2 ;;
    --chaos-duration) CHAOS_DURATION="$2"; shift 2 ;;
    --no-tests) RUN_TESTS=0; shift ;;
    --no-chaos) RUN_CHAOS=0; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) die "unknown option $1" ;;
  esac
done

trap cleanup_started EXIT
pick_java
pick_postgres
need_citus

if [ "$RUN_TESTS" = 1 ]; then
  if [ ! -f target/quarkus-app/quarkus-run.jar ] || [ ! -d target/test-classes/dev ]; then
    log "building the package and the test classes"
    ./mvnw -B -ntp -q -DskipTests package
  fi
  make_work_dir chargeonce-citus-tests
  C=$(free_port); W1=$(free_port); W2=$(free_port)
  for port in "$C" "$W1" "$W2"; do
    start_pg "citus-$port" "$port" "shared_preload_libraries = 'citus'" "max_connections = 400" "fsync = off" \
      "log_min_messages = warning"
  done
  log "Citus: coordinator on :$C, workers on :$W1 and :$W2; process tests: $TESTS"
  # Each test database is made on all three with the extension, the coordinator told of the workers
  # (TestPostgres, CHARGEONCE_TEST_CITUS); the service's migrations distribute the tables.
  CHARGEONCE_TEST_CITUS="$C,$W1,$W2" ./mvnw -B -ntp ${MVN_OFFLINE:-} failsafe:integration-test failsafe:verify \
    -Dit.test="$TESTS" -Dfailsafe.failIfNoSpecifiedTests=true
fi

if [ "$RUN_CHAOS" = 1 ]; then
  bash chaos/run.sh --citus --duration "$CHAOS_DURATION" --no-naive
fi
log "Citus: every process test and the chaos audit passed"

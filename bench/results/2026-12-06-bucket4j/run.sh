#!/usr/bin/env bash
# The shared Stripe rate budget against Bucket4j's PostgreSQL proxy managers (README.md next to this file).
# Not part of the build: Bucket4j is taken from the local Maven repository (or fetched once with dependency:get),
# the harness compiled with javac against the project's test classpath, each run a JVM and a PostgreSQL of its own.
#
#   bench/results/2026-12-06-bucket4j/run.sh [rounds] [results.tsv]       # default: 2 rounds, results.tsv here
#   BENCH_OPTS="-Dseconds=5" for shorter runs;
#   SCENARIOS="below limit" BELOW_VARIANTS="..." LIMIT_VARIANTS="..." OFFERED="100 400" to narrow it down
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
rounds="${1:-2}"
results="${2:-$here/results.tsv}"
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
export PATH="$JAVA_HOME/bin:$PATH"
version=8.14.0
m2="${M2_REPO:-$HOME/.m2/repository}"
work="${WORK_DIR:-/tmp/bucket4j-bench}"
mkdir -p "$work/classes"

cd "$repo"
for artifact in bucket4j_jdk17-core bucket4j_jdk17-postgresql; do
  jar="$m2/com/bucket4j/$artifact/$version/$artifact-$version.jar"
  [[ -f "$jar" ]] || ./mvnw -B -ntp -q dependency:get -Dartifact="com.bucket4j:$artifact:$version" -Dtransitive=false
done
b4j="$m2/com/bucket4j/bucket4j_jdk17-core/$version/bucket4j_jdk17-core-$version.jar"
b4j="$b4j:$m2/com/bucket4j/bucket4j_jdk17-postgresql/$version/bucket4j_jdk17-postgresql-$version.jar"

if [[ ! -f target/test-classes/dev/chargeonce/testing/TestPostgres.class || ! -f target/classes/dev/chargeonce/ratebudget/StripeRateBudget.class ]]; then
  ./mvnw -B -ntp -q test-compile
fi
[[ -f "$work/classpath.txt" ]] || ./mvnw -B -ntp -q dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$work/classpath.txt"
cp="target/classes:target/test-classes:$(cat "$work/classpath.txt"):$b4j"
javac -nowarn -d "$work/classes" -cp "$cp" "$here/RateBudgetVersusBucket4j.java"

# run <capacity or -> <scenario> <variant> [offered]: a JVM and a PostgreSQL of its own
run() {
  local capacity=$1; shift
  echo "== $* (capacity $capacity)" >&2
  java -Xmx512m ${BENCH_OPTS:-} -cp "$work/classes:$cp" -Dout="$results" $([[ $capacity == - ]] || echo "-Dcapacity=$capacity") \
    dev.chargeonce.ratebudget.RateBudgetVersusBucket4j "$@" 2>>"$work/stderr.log" | grep -v '^\s*$' >&2
}

scenarios="${SCENARIOS:-below limit}"
below_variants="${BELOW_VARIANTS:-none ours b4j-sfu b4j-sfu-batching b4j-advisory b4j-sfu-delaying b4j-sfu-predicting}"
limit_variants="${LIMIT_VARIANTS:-ours b4j-sfu:20 b4j-sfu:2 b4j-sfu-batching:2 b4j-advisory:2 b4j-sfu-delaying:2 b4j-sfu-predicting:2}"
offered="${OFFERED:-100 400}"
for ((round = 1; round <= rounds; round++)); do
  # Interleaved: each round runs every variant once, in a different order from the last round.
  for scenario in $scenarios; do
    if [[ $scenario == below ]]; then
      list=$below_variants
      (( round % 2 == 0 )) && list=$(echo $list | tr ' ' '\n' | tac | tr '\n' ' ')
      for load in $offered; do
        for v in $list; do run - below "$v" "$load"; done
      done
    else
      list=$limit_variants
      (( round % 2 == 0 )) && list=$(echo $list | tr ' ' '\n' | tac | tr '\n' ' ')
      for vc in $list; do
        capacity=-; [[ $vc == *:* ]] && capacity="${vc#*:}"
        run "$capacity" limit "${vc%%:*}"
      done
    fi
  done
done
echo "results: $results" >&2

# Shared by bench/, chaos/ and scale/ scripts: tools, free loopback ports, a throwaway PostgreSQL 15 (the scripts' one
# launcher of it: start_pg, and start_lagging_replica and start_citus built on it), the service started by the test
# suite's launcher (start_chargeonce), the benchmark's Java tool (bench_tool), cleanup.
# Everything started here is recorded in STARTED_PIDS / PG_DATA_DIRS and stopped by cleanup_started (trap EXIT):
# nothing else on the machine is touched.

STARTED_PIDS=()
PG_DATA_DIRS=()
WORK_DIR=""
KEEP_WORK="${KEEP_WORK:-0}"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

pick_java() {
  java_major() { "$1" -XshowSettings:properties -version 2>&1 | awk -F'= ' '/java.specification.version/ {print $2}'; }
  if [ -z "${JAVA_HOME:-}" ] || [ "$(java_major "$JAVA_HOME/bin/java")" -lt 21 ] 2>/dev/null; then
    for candidate in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-2*-jdk* /usr/lib/jvm/java-2*-openjdk*; do
      if [ -x "$candidate/bin/java" ] && [ "$(java_major "$candidate/bin/java")" -ge 21 ]; then
        export JAVA_HOME="$candidate"
        break
      fi
    done
  fi
  [ -n "${JAVA_HOME:-}" ] || die "no JDK 21+ found"
  export PATH="$JAVA_HOME/bin:$PATH"
}

apt_install() {
  # Installs Debian packages the scripts need when they are missing (CI starts from a bare machine).
  log "installing $*"
  if ! apt-get install -y -q "$@" >/dev/null 2>&1; then
    apt-get update -q >/dev/null 2>&1 || true
    apt-get install -y -q "$@" >/dev/null || die "could not install $*"
  fi
}

pick_postgres() {
  PG_BIN=""
  for candidate in /usr/lib/postgresql/15/bin "$(pg_config --bindir 2>/dev/null || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate/initdb" ] && [ -x "$candidate/pg_ctl" ]; then PG_BIN="$candidate"; break; fi
  done
  if [ -z "$PG_BIN" ]; then
    apt_install postgresql-15
    PG_BIN=/usr/lib/postgresql/15/bin
  fi
  id postgres >/dev/null 2>&1 || die "the postgres user is missing (package postgresql-15 creates it)"
  export PG_BIN
}

need_wrk() {
  command -v wrk >/dev/null 2>&1 || apt_install wrk
}

# A free TCP port on 127.0.0.1 that none of ours took yet, below the kernel's ephemeral range: a port in that range
# can be taken at any moment as the local end of some outgoing connection, and then a server cannot bind it.
TAKEN_PORTS=" "
EPHEMERAL_LOW=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
free_port() {
  local port low=20000
  [ "$EPHEMERAL_LOW" -gt $(( low + 2000 )) ] || low=$(( EPHEMERAL_LOW - 2000 ))
  for _ in $(seq 1 200); do
    port=$(( low + RANDOM % (EPHEMERAL_LOW - low) ))
    case "$TAKEN_PORTS" in *" $port "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      TAKEN_PORTS="$TAKEN_PORTS$port "
      echo "$port"
      return 0
    fi
  done
  die "no free port"
}

make_work_dir() {
  WORK_DIR=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$WORK_DIR"
}

# start_pg <name> <port> [extra postgresql.conf lines...]: initdb + start as the postgres user in WORK_DIR/<name>.
start_pg() {
  local name="$1" port="$2"; shift 2
  local data="$WORK_DIR/$name"
  mkdir -p "$data" "$WORK_DIR/$name-sock" "$WORK_DIR/$name-log"
  chown postgres:postgres "$data" "$WORK_DIR/$name-sock" "$WORK_DIR/$name-log"
  chmod 700 "$data"
  runuser -u postgres -- "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-locale >"$WORK_DIR/$name-initdb.log" 2>&1 \
    || die "initdb failed, see $WORK_DIR/$name-initdb.log"
  {
    echo "listen_addresses = '127.0.0.1'"
    echo "port = $port"
    echo "unix_socket_directories = '$WORK_DIR/$name-sock'"
    for line in "$@"; do echo "$line"; done
  } >>"$data/postgresql.conf"
  PG_DATA_DIRS+=("$data")
  runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$data" -l "$WORK_DIR/$name-log/server.log" -w -t 60 start >/dev/null \
    || die "PostgreSQL $name did not start, see $WORK_DIR/$name-log/server.log"
}

# pg_cpu_ticks <postmaster pid>: the CPU ticks a PostgreSQL server has used so far, its postmaster's own and its
# reaped children's (backends that exited) and its live backends'. A pgbench's backends exit with it: sample after
# the postmaster reaped them (a second or so) to count them whole.
pg_cpu_ticks() {
  local pg child
  pg=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat")
  for child in $(ps -o pid= --ppid "$1"); do
    pg=$(( pg + $(awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null || echo 0) ))
  done
  echo "$pg"
}

psql_at() { # psql_at <port> <db> [psql args...]
  local port="$1" db="$2"; shift 2
  PGPASSWORD=x "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@"
}

# start_bg <log file> <command...>: starts a process in the background and records its pid.
start_bg() {
  local logfile="$1"; shift
  "$@" >"$logfile" 2>&1 &
  STARTED_PIDS+=("$!")
  LAST_PID=$!
}

stop_pid() { # kill -9 one pid we started, and reap it
  local pid="$1"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

wait_http() { # wait_http <url> <seconds> <pid> [any]: until the URL answers 2xx (or anything at all, with "any")
  local url="$1" deadline=$(( $(date +%s) + $2 )) pid="$3" fail="-f"
  [ "${4:-}" = any ] && fail=""
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    if curl $fail -sS -o /dev/null --max-time 2 "$url" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  return 1
}

sha256_hex() { printf '%s' "$1" | sha256sum | awk '{print $1}'; }

# harness_classes: the test suite's JDK-only service launcher (src/test/java/dev/chargeonce/testing/ServiceProcess.java,
# with its command line ServiceLauncher.java and FreePorts.java), compiled once per work directory: the scripts start
# the service through the same launcher as the process tests and the chaos runs. Prints the classes' directory.
harness_classes() {
  local classes="$WORK_DIR/harness" testing=src/test/java/dev/chargeonce/testing
  if [ ! -f "$classes/dev/chargeonce/testing/ServiceLauncher.class" ]; then
    javac --release 21 -d "$classes" "$testing/ServiceProcess.java" "$testing/ServiceLauncher.java" \
      "$testing/FreePorts.java" >&2 \
      || die "could not compile the service launcher ($testing/ServiceProcess.java, ServiceLauncher.java, FreePorts.java)"
  fi
  echo "$classes"
}

# start_chargeonce <log> <http port> <management port> <database port> <stripe port> <client>:<api key> <key secret>
#                  [JVM options...]: the packaged service ($SERVICE_JAR, default target/quarkus-app/quarkus-run.jar)
# on loopback as the scripts run it: database chargeonce on 127.0.0.1:<database port>, the Stripe stand-in, one
# client, key-hash version 1 under <key secret>, reconciliation and the Events API catch-up off (both page through
# the stand-in's lists, which it walks from the start for every page). Started by ServiceLauncher (harness_classes),
# which waits until it is ready (120 s at most) and leaves it running; sets LAST_PID.
start_chargeonce() {
  local logfile="$1" http="$2" management="$3" db="$4" stripe="$5" client="$6" secret="$7"; shift 7
  local options=() option pid
  for option in "$@"; do options+=(--jvm-option "$option"); done
  pid=$(java -cp "$(harness_classes)" dev.chargeonce.testing.ServiceLauncher --log "$logfile" --port "$http" \
    --management-port "$management" --jar "${SERVICE_JAR:-target/quarkus-app/quarkus-run.jar}" --timeout 120s \
    ${options[@]+"${options[@]}"} quarkus.http.host=127.0.0.1 quarkus.management.host=127.0.0.1 \
    "quarkus.datasource.jdbc.url=jdbc:postgresql://127.0.0.1:$db/chargeonce" \
    quarkus.datasource.username=postgres quarkus.datasource.password=x \
    chargeonce.stripe.api-key=sk_test_sandbox "chargeonce.stripe.api-base=http://127.0.0.1:$stripe" \
    "chargeonce.auth.clients=${client%%:*}:$(sha256_hex "${client#*:}")" \
    chargeonce.idempotency.key-hash-version=1 "chargeonce.idempotency.key-hash-secrets=1:$secret" \
    chargeonce.reconciliation.enabled=false chargeonce.webhooks.catch-up-enabled=false) \
    || die "chargeonce did not start, see $logfile"
  STARTED_PIDS+=("$pid")
  LAST_PID=$pid
}

# bench_tool <command> [args...]: bench/BenchTool.java with the files it uses (package bench: pgbench scripts, the
# reports), compiled once per work directory (or in target/ without one) with javac: a JDK 21 has no multi-file
# source launcher.
bench_tool() {
  local classes="${WORK_DIR:-target}/bench-tool"
  if [ ! -f "$classes/bench/BenchTool.class" ] || [ -n "$(find bench -maxdepth 1 -name '*.java' -newer "$classes/bench/BenchTool.class")" ]; then
    javac --release 21 -d "$classes" bench/*.java >&2 || die "bench/*.java did not compile"
  fi
  java -cp "$classes" bench.BenchTool "$@"
}

cleanup_started() {
  local pid
  for pid in "${STARTED_PIDS[@]}"; do
    kill -9 "$pid" 2>/dev/null || true
  done
  for pid in "${STARTED_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  local data
  for data in "${PG_DATA_DIRS[@]}"; do
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  done
  if [ -n "$WORK_DIR" ] && [ -d "$WORK_DIR" ] && [ "$KEEP_WORK" != 1 ]; then
    rm -rf "$WORK_DIR"
  fi
}

# start_lagging_replica <name> <primary port> <replica port> <apply delay>: a streaming replica of the primary
# (pg_basebackup -R) that applies WAL <apply delay> late, like a replica behind during a load spike.
start_lagging_replica() {
  local name="$1" primary="$2" port="$3" delay="$4"
  local data="$WORK_DIR/$name"
  mkdir -p "$WORK_DIR/$name-sock" "$WORK_DIR/$name-log"
  chown postgres:postgres "$WORK_DIR" "$WORK_DIR/$name-sock" "$WORK_DIR/$name-log"
  runuser -u postgres -- "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$primary" -U postgres -D "$data" -R -X stream --checkpoint=fast \
    >"$WORK_DIR/$name-log/basebackup.log" 2>&1 || die "pg_basebackup failed, see $WORK_DIR/$name-log/basebackup.log"
  {
    echo "port = $port"
    echo "unix_socket_directories = '$WORK_DIR/$name-sock'"
    echo "hot_standby = on"
    echo "recovery_min_apply_delay = '$delay'"
  } >>"$data/postgresql.conf"
  PG_DATA_DIRS+=("$data")
  runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$data" -l "$WORK_DIR/$name-log/server.log" -w -t 60 start >/dev/null \
    || die "replica $name did not start, see $WORK_DIR/$name-log/server.log"
}

# kill_recorded_children <pid file>: kill -9 the processes a harness recorded, if they are still the ones it
# started (same command: the packaged service, the naive control or the Stripe stand-in).
kill_recorded_children() {
  local file="$1" pid
  [ -f "$file" ] || return 0
  while read -r pid; do
    [ -n "$pid" ] || continue
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qE 'quarkus-run.jar|NaiveService|StripeSandbox'; then
      kill -9 "$pid" 2>/dev/null || true
    fi
  done <"$file"
}

# need_citus: installs Citus into PG_BIN's PostgreSQL when it is missing, with the build script in CITUS_BUILD
# (default: ../shared/citus/build.sh beside the project, which builds the release it carries). A user with their
# own Citus installation has citus.so in pg_config's pkglibdir already, and nothing is built.
need_citus() {
  local pkglib
  pkglib=$("$PG_BIN/pg_config" --pkglibdir)
  [ -f "$pkglib/citus.so" ] && return 0
  local build="${CITUS_BUILD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/../shared/citus/build.sh}"
  # a clone elsewhere than beside ../shared (a CI checkout) finds the workplace's copy
  [ -f "$build" ] || [ -n "${CITUS_BUILD:-}" ] || [ ! -f /work/shared/citus/build.sh ] || build=/work/shared/citus/build.sh
  [ -f "$build" ] || die "Citus is not installed in $pkglib and there is no build script at $build (set CITUS_BUILD)"
  log "building Citus with $build"
  bash "$build" >&2 || die "the Citus build failed"
  [ -f "$pkglib/citus.so" ] || die "the Citus build left no citus.so in $pkglib"
}

# start_citus <name> <database> <coordinator port> <worker port>...: a Citus cluster on loopback, each node a
# start_pg cluster with Citus preloaded and the database with the extension; the coordinator knows itself and the
# workers. Distributed tables are the schema's business (the migrations), not the cluster's.
start_citus() {
  local name="$1" db="$2" coordinator="$3"; shift 3
  local port
  for port in "$coordinator" "$@"; do
    start_pg "$name-$port" "$port" "shared_preload_libraries = 'citus'" "max_connections = 300" \
      "citus.log_remote_commands = off"
    psql_at "$port" postgres -c "CREATE DATABASE $db" >/dev/null
    psql_at "$port" "$db" -c "CREATE EXTENSION citus" >/dev/null
  done
  psql_at "$coordinator" "$db" -c "SELECT citus_set_coordinator_host('127.0.0.1', $coordinator)" >/dev/null
  for port in "$@"; do
    psql_at "$coordinator" "$db" -c "SELECT citus_add_node('127.0.0.1', $port)" >/dev/null
  done
}

#!/usr/bin/env bash
# The benchmarks of issue 7, side by side in one run (`make bench`): builds what it needs, runs
# every coordinator workload (W1-W5) and every peer (Redis with appendfsync always, the A2A
# JavaScript SDK's gRPC server in memory and on PostgreSQL 15 with synchronous_commit=on, its
# Express JSON-RPC server, the shell+jq and Python JSON-file approaches), the floors (a health
# check, the cheapest call; the gateway with its data on tmpfs), the resource figures and the
# disk's fsync latency, then writes bench/RESULTS.md and bench/throughput.png
# (bench/report.py, gnuplot).
#
#   bench/run.sh                       BUILD_DIR=build by default
#   BENCH_SECONDS=2 bench/run.sh       shorter windows (a smoke run; the committed figures use 10)
#   BENCH_CONTEXTS=1000000             contexts of the resource figures
#   BENCH_OUT=bench                    where RESULTS.md, throughput.png and results.jsonl go
#   BENCH_PARTS="w1 redis"             only these parts (w1 w2 w3 w4 w5 redis files resources etcd)
#   BENCH_NO_BUILD=1                   use the binaries already in BUILD_DIR/bin as they are
#
# Every process it starts is stopped by PID when it exits, whatever happens. Each coordinator
# runs the real binary with its default durable (WAL-synced) writes on a fresh data dir, on an
# ephemeral port. PostgreSQL is a throwaway cluster (initdb in the work dir, loopback, an
# ephemeral port), run as the postgres user when the bench runs as root (postgres refuses root).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIB_WHO=bench
# shellcheck source=../tests/lib.sh
. "$root/tests/lib.sh"
build="${BUILD_DIR:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
seconds="${BENCH_SECONDS:-10}"
warmup="${BENCH_WARMUP:-2}"
peer_seconds="${BENCH_PEER_SECONDS:-5}"
big_contexts="${BENCH_CONTEXTS:-1000000}"
out_dir="${BENCH_OUT:-$root/bench}"
concurrencies="1,16,64"
# Which parts run (all by default; a subset is for development, its report has gaps).
parts=" ${BENCH_PARTS:-w1 w2 w3 w4 w5 redis files resources etcd} "
want() { [[ "$parts" == *" $1 "* ]]; }
py=/usr/bin/python3  # Debian's, with the standard library only

for tool in jq redis-server redis-benchmark gnuplot node npm flock; do
  if ! command -v "$tool" >/dev/null; then
    echo "bench: $tool is missing (scripts/install_deps.sh installs it)" >&2
    exit 1
  fi
done
# PostgreSQL (Debian's postgresql package: the bench's own dependency, not the tests'), for W5's
# durable JS SDK peer; the newest installed major version.
pg_bin=""
if want w5; then
  pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ] || [ ! -x "$pg_bin/pg_ctl" ]; then
    echo "bench: PostgreSQL is missing (scripts/install_deps.sh postgresql installs it)" >&2
    exit 1
  fi
fi

# --- build
if [ -z "${BENCH_NO_BUILD:-}" ]; then
  if [ ! -f "$build/build.ninja" ]; then
    CC=${RELEASE_CC:-clang} CXX=${RELEASE_CXX:-clang++} cmake -S "$root" -B "$build" -G Ninja \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo
  fi
  cmake --build "$build" --target coordinator echo_agent coord_bench bench_bulk_load \
    bench_fsync_probe
fi
bin="$build/bin"

# --- the A2A JavaScript SDK (tests/interop's locked packages; its gRPC server is the peer)
interop="$root/tests/interop"
npm_ci_locked "$interop"

# --- processes, always cleaned up
work="$(mktemp -d "${BENCH_TMP:-/tmp}/coordinator-bench.XXXXXX")"
pids=()
# stop_pid <pid>: tests/lib.sh's stop_pids, for one.
stop_pid() { stop_pids "$1"; }
pg_data=""  # set while the PostgreSQL cluster may run: cleanup stops it (pg_ctl, by its pid file)
shm_dirs=()  # data dirs on tmpfs, outside $work
cleanup() {
  local pid
  for pid in "${pids[@]}"; do stop_pid "$pid"; done
  if [ "${#shm_dirs[@]}" -gt 0 ]; then rm -rf "${shm_dirs[@]}"; fi
  if [ -d "$work/etcd" ]; then "$root/tests/etcd_cluster.sh" stop "$work/etcd" || true; fi
  if [ -n "$pg_data" ] && [ -f "$pg_data/postmaster.pid" ]; then
    as_pg "$pg_bin/pg_ctl" -D "$pg_data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

results="$work/results.jsonl"
: >"$results"
log() { echo "bench: $(date -u +%H:%M:%S) $*" >&2; }
# record <system> <json lines on stdin>: tags each line and appends it to the results.
record() { jq -c --arg system "$1" '. + {system: $system}' | tee -a "$results" >&2; }

# as_pg <command...>: runs a PostgreSQL command as the postgres user when we are root.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

coord_pid=""
coord_addr=""
# start_coordinator <name> [flags...]: a coordinator on a fresh data dir $work/<name> (unless it
# exists), without its HTTP bindings unless the flags ask for them (later flags win).
start_coordinator() {
  "$bin/coordinator" --listen=127.0.0.1:0 --data_dir="$work/$1" --http_listen= "${@:2}" \
    >"$work/$1.log" 2>&1 &
  coord_pid=$!
  pids+=("$coord_pid")
  coord_addr="$(wait_for "$work/$1.log" 'listening on 127\.0\.0\.1:[0-9]+' "$coord_pid" \
    "coordinator $1" | sed 's/^listening on //')"
}
stop_coordinator() { stop_pid "$coord_pid"; }
# Each coordinator measurement also reports the coordinator's CPU time per call (from /proc).
bench() { "$bin/coord_bench" --target="$coord_addr" --cpu_pid="$coord_pid" --warmup_seconds="$warmup" --seconds="$seconds" "$@"; }

# --- the machine
log "machine and fsync probe"
{
  echo "{\"workload\":\"machine\",\"cores\":$(nproc),\"mem_kb\":$(awk '/MemTotal/ {print $2}' /proc/meminfo),\"cpu\":$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' | jq -R .),\"kernel\":\"$(uname -r)\",\"fs\":\"$(df -T "$work" | awk 'NR==2 {print $2}')\",\"loadavg\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"started\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)\",\"seconds\":$seconds,\"warmup\":$warmup,\"peer_seconds\":$peer_seconds}"
} | record machine
"$bin/bench_fsync_probe" --dir="$work" --count=500 | record probe
fsync_us="$(jq -s -r '[.[] | select(.workload == "fsync") | .p50_us] | min' "$results")"

# --- W1 durable update, W2 contention, W3 history growth: one fresh coordinator each
if want w1; then
log "W1 record-failure on distinct tasks"
start_coordinator w1
bench --workload=fail --run_id=w1 --tasks=1024 --concurrency="$concurrencies" | record coordinator
# The floor of every call: a health check passes the same transport and interceptors, then
# only reads a status (no storage).
log "the floor: grpc.health.v1.Health/Check"
bench --workload=ping --concurrency="$concurrencies" | record coordinator
stop_coordinator
fi

if want w2; then
log "W2 increment-attempt on one task"
start_coordinator w2
bench --workload=attempt --run_id=w2 --concurrency="$concurrencies" | record coordinator
stop_coordinator
fi

if want w3; then
log "W3 append to one conversation at 10, 10,000 and 100,000 messages"
start_coordinator w3
bench --workload=history --run_id=w3 --sizes=10,10000,100000 --point_calls=300 \
  --concurrency="$concurrencies" | record coordinator
stop_coordinator
fi

# --- W4 read: 100,000 contexts written offline with the coordinator's store code
if want w4; then
log "W4 get-context among 100,000 contexts"
"$bin/bench_bulk_load" --data_dir="$work/w4" --contexts=100000 --run_id=w4 | record coordinator
start_coordinator w4
bench --workload=get --run_id=w4 --contexts=100000 --create=false \
  --concurrency="$concurrencies" | record coordinator
stop_coordinator
fi

# --- W5 A2A: through the coordinator's gateway to echo_agent (gRPC and JSON-RPC), echo_agent
# directly, and the JavaScript SDK's servers directly: gRPC with its in-memory task store and with
# its DatabaseTaskStore on PostgreSQL (synchronous_commit=on), and Express JSON-RPC in memory
if want w5; then
log "W5 A2A SendMessage"
start_coordinator w5 --http_listen=127.0.0.1:0
coord_http="$(wait_for "$work/w5.log" 'agent card on http://127\.0\.0\.1:[0-9]+' "$coord_pid" \
  "coordinator w5" | sed 's/^agent card on //')"
# start_echo_agent <log name>: echo_agent registered with the running coordinator (echo_pid).
start_echo_agent() {
  "$bin/echo_agent" --listen=127.0.0.1:0 --name=echo --coordinator="$coord_addr" \
    >"$work/$1.log" 2>&1 &
  echo_pid=$!
  pids+=("$echo_pid")
  wait_for "$work/$1.log" 'registered with the coordinator' "$echo_pid" "$1" >/dev/null
}
start_echo_agent echo_agent
echo_addr="$(wait_for "$work/echo_agent.log" 'listening on 127\.0\.0\.1:[0-9]+' "$echo_pid" \
  echo_agent | sed 's/^listening on //')"
node "$interop/js_agent.mjs" --listen=127.0.0.1:0 --name=jsecho >"$work/js_agent.log" 2>&1 &
js_pid=$!
pids+=("$js_pid")
js_addr="$(wait_for "$work/js_agent.log" 'listening on 127\.0\.0\.1:[0-9]+' "$js_pid" js_agent |
  sed 's/^listening on //')"
a2a_bench() { "$bin/coord_bench" --warmup_seconds="$warmup" --seconds="$seconds" --workload=a2a \
  --concurrency="$concurrencies" "$@"; }
# cpu_us_per_call: the coordinator's own CPU for the gateway (the agent's is on top, as
# peer_cpu_us_per_call), the server's for the direct runs; client_cpu_us_per_call is the load
# generator's. RESULTS.md's CPU budget of each target is made of the three.
a2a_bench --target="$coord_addr" --tenant=echo --label=gateway --cpu_pid="$coord_pid" --peer_cpu_pid="$echo_pid" | record coordinator
a2a_bench --target="$echo_addr" --label=direct --cpu_pid="$echo_pid" | record echo_agent
a2a_bench --target="$js_addr" --label=js_sdk --cpu_pid="$js_pid" | record js_sdk
stop_pid "$js_pid"
# The JSON-RPC runs come after the gRPC ones, which stay as comparable with earlier runs as they
# were. Their failed calls are recorded (RESULTS.md shows the count in bold) instead of ending
# the run: at 64 streams the coordinator's HTTP server may reset a keep-alive connection.
log "W5 over JSON-RPC: the coordinator's binding"
{ a2a_bench --binding=jsonrpc --url="$coord_http/agents/echo" --label=gateway_jsonrpc --cpu_pid="$coord_pid" --peer_cpu_pid="$echo_pid" ||
  log "W5 gateway_jsonrpc had failed calls (recorded)"; } | record coordinator

log "W5 the JS SDK's Express JSON-RPC server"
node "$interop/js_rpc_agent.mjs" --listen=127.0.0.1:0 --name=jsrpc >"$work/js_rpc_agent.log" 2>&1 &
js_rpc_pid=$!
pids+=("$js_rpc_pid")
js_rpc_url="$(wait_for "$work/js_rpc_agent.log" 'listening on http://127\.0\.0\.1:[0-9]+' \
  "$js_rpc_pid" js_rpc_agent | sed 's/^listening on //')"
{ a2a_bench --binding=jsonrpc --url="$js_rpc_url/" --label=js_sdk_jsonrpc --cpu_pid="$js_rpc_pid" ||
  log "W5 js_sdk_jsonrpc had failed calls (recorded)"; } | record js_sdk_jsonrpc
stop_pid "$js_rpc_pid"
stop_pid "$echo_pid"
stop_coordinator

# The same gateway with its data dir on tmpfs, where a WAL sync costs nothing (and protects
# nothing): what the gateway costs without the disk. Skipped when /dev/shm is not a tmpfs.
if [ "$(df -T /dev/shm 2>/dev/null | awk 'NR==2 {print $2}')" = tmpfs ]; then
  log "W5 through the gateway with the data on tmpfs (no disk)"
  shm="$(mktemp -d /dev/shm/coordinator-bench.XXXXXX)"
  shm_dirs+=("$shm")
  start_coordinator w5_tmpfs --data_dir="$shm/data"
  start_echo_agent echo_agent_tmpfs
  a2a_bench --target="$coord_addr" --tenant=echo --label=gateway_tmpfs --cpu_pid="$coord_pid" --peer_cpu_pid="$echo_pid" |
    record coordinator
  stop_pid "$echo_pid"
  stop_coordinator
  rm -rf "$shm"
else
  log "W5 on tmpfs skipped: /dev/shm is not a tmpfs"
fi

log "W5 the JS SDK on PostgreSQL (synchronous_commit=on)"
# A throwaway cluster in the work dir: trust on loopback only, durable settings stated.
mkdir -p "$work/pg"
if [ "$(id -u)" -eq 0 ]; then
  chmod o+x "$work"  # the postgres user only passes through
  chown postgres "$work/pg"
fi
pg_data="$work/pg/data"
as_pg "$pg_bin/initdb" -D "$pg_data" -A trust -U bench -E UTF8 --no-sync >"$work/pg/initdb.log"
pg_port="$(free_port)"
as_pg "$pg_bin/pg_ctl" -D "$pg_data" -l "$work/pg/postgres.log" -w -t 60 \
  -o "-c port=$pg_port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$work/pg \
-c fsync=on -c synchronous_commit=on -c full_page_writes=on" start >/dev/null
pg_url="postgres://bench@127.0.0.1:$pg_port/postgres"
# The table the store needs, by the SDK's own migration tool.
node "$interop/node_modules/.bin/a2a-db" upgrade --url "$pg_url" --store tasks >&2
pg_settings() {
  psql "$pg_url" -Atc "select setting from pg_settings where name = '$1'"
}
echo "{\"workload\":\"postgres\",\"version\":$(psql "$pg_url" -Atc 'show server_version' | jq -R .),\"synchronous_commit\":\"$(pg_settings synchronous_commit)\",\"fsync\":\"$(pg_settings fsync)\",\"wal_sync_method\":\"$(pg_settings wal_sync_method)\"}" |
  record postgres
node "$interop/js_agent.mjs" --listen=127.0.0.1:0 --name=jspg --store="$pg_url" \
  >"$work/js_agent_pg.log" 2>&1 &
js_pg_pid=$!
pids+=("$js_pg_pid")
js_pg_addr="$(wait_for "$work/js_agent_pg.log" 'listening on 127\.0\.0\.1:[0-9]+' "$js_pg_pid" \
  "js_agent (PostgreSQL)" | sed 's/^listening on //')"
a2a_bench --target="$js_pg_addr" --label=js_sdk_pg --cpu_pid="$js_pg_pid" | record js_sdk_pg
echo "{\"workload\":\"postgres_tasks\",\"rows\":$(psql "$pg_url" -Atc 'select count(*) from tasks')}" |
  record postgres
stop_pid "$js_pg_pid"
as_pg "$pg_bin/pg_ctl" -D "$pg_data" -m fast -w stop >/dev/null
fi

# --- Redis with appendonly yes, appendfsync always, on loopback
if want redis; then
log "Redis (appendfsync always) INCR, RPUSH, HSET, GET"
mkdir -p "$work/redis"
redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work/redis" --appendonly yes \
  --appendfsync always --save '' --daemonize no --protected-mode yes \
  >"$work/redis.log" 2>&1 &
redis_pid=$!
pids+=("$redis_pid")
wait_for "$work/redis.log" 'Ready to accept connections' "$redis_pid" redis-server >/dev/null
for c in 1 16 64; do
  # Enough requests for about $peer_seconds s each: a short INCR run first gives the rate.
  rate="$(redis-benchmark -h 127.0.0.1 -p "$redis_port" -c "$c" -n $((c * 10 + 100)) -t incr \
    --csv | "$py" "$root/bench/report.py" redis-csv "$c" | jq -r '.throughput')"
  n="$("$py" -c "print(int(min(max($rate * $peer_seconds, 200), 300000)))")"
  redis-benchmark -h 127.0.0.1 -p "$redis_port" -c "$c" -n "$n" -t incr,rpush,hset --csv |
    "$py" "$root/bench/report.py" redis-csv "$c" | record redis
  redis-benchmark -h 127.0.0.1 -p "$redis_port" -c "$c" -n $((20000 * ${peer_seconds%.*})) \
    -t get --csv | "$py" "$root/bench/report.py" redis-csv "$c" | record redis
done
stop_pid "$redis_pid"
fi

# --- the approach users run today: one JSON state file, flock, rewrite per update
if want files; then
for tasks in 50 1000; do
  for c in 1 16 64; do
    log "shell+jq and Python JSON file, $tasks tasks, $c writers"
    "$root/bench/peers/jq_state.sh" bench "$work/jq-state.json" "$tasks" "$c" "$warmup" \
      "$peer_seconds" "$work/jq-$tasks-$c"
    "$py" "$root/bench/report.py" latencies shell_jq "$tasks" "$c" "$peer_seconds" \
      "$work/jq-$tasks-$c"/lat.* | record shell_jq
    "$py" "$root/bench/peers/json_state.py" --state "$work/py-state.json" --tasks "$tasks" \
      --concurrency "$c" --warmup "$warmup" --seconds "$peer_seconds" | record python_json
  done
done
fi

# --- resource figures: 1,000,000 contexts written offline with the coordinator's store code
if want resources; then
log "resources: $big_contexts contexts"
"$bin/bench_bulk_load" --data_dir="$work/big" --contexts="$big_contexts" --run_id=big |
  record coordinator
bytes="$(du -sb "$work/big" | cut -f1)"
echo "{\"workload\":\"disk\",\"contexts\":$big_contexts,\"bytes\":$bytes}" | record coordinator
big_port="$(free_port)"
since="$(date +%s%N)"
"$bin/coordinator" --listen="127.0.0.1:$big_port" --data_dir="$work/big" --http_listen= \
  >"$work/big.log" 2>&1 &
coord_pid=$!
pids+=("$coord_pid")
coord_addr="127.0.0.1:$big_port"
"$bin/coord_bench" --target="$coord_addr" --workload=serving --since_unix_ns="$since" |
  record coordinator
# Random reads over every context, so the caches fill as they would in service.
bench --workload=get --run_id=big --contexts="$big_contexts" --create=false \
  --concurrency=64 | jq -c '.workload = "get_big"' | record coordinator
echo "{\"workload\":\"rss\",\"contexts\":$big_contexts,\"hwm_kb\":$(awk '/VmHWM/ {print $2}' "/proc/$coord_pid/status"),\"rss_kb\":$(awk '/VmRSS/ {print $2}' "/proc/$coord_pid/status")}" |
  record coordinator
stop_coordinator
fi

# --- The etcd backend (issue 21): W1, W2 and W5 through the gateway with --store=etcd://... on a
# 3-member etcd cluster on this machine (tests/etcd_cluster.sh: every member fsyncs its log), as
# ratios against the same workloads on RocksDB above (the w1, w2 and w5 parts).
if want etcd; then
log "etcd backend: a 3-member cluster on loopback"
"$root/tests/etcd_cluster.sh" start "$work/etcd" 3 >&2
etcd_store="--store=$(cat "$work/etcd/url")"
# W1 and W2 report etcd's KV requests per call too, from the members' own /metrics.
etcd_members="$(sed 's|^etcd://||' "$work/etcd/url")"
log "etcd W1 record-failure on distinct tasks"
start_coordinator etcd_w1 "$etcd_store" --etcd_prefix=/bench/w1/
bench --workload=fail --run_id=w1 --tasks=1024 --concurrency="$concurrencies" \
  --etcd_metrics="$etcd_members" | record coordinator_etcd
stop_coordinator
# Its raw peer: one etcd Put per call over etcd's own gRPC API, from a client of ours to the first
# member, with values the size of the task record W1 writes.
log "etcd raw Put of one key per call"
etcd_member="$(sed 's|^etcd://||; s|,.*||' "$work/etcd/url")"
"$bin/coord_bench" --target="$etcd_member" --workload=etcd_put --value_bytes=256 --run_id=raw \
  --warmup_seconds="$warmup" --seconds="$seconds" --concurrency="$concurrencies" | record etcd_raw
log "etcd W2 increment-attempt on one task"
start_coordinator etcd_w2 "$etcd_store" --etcd_prefix=/bench/w2/
bench --workload=attempt --run_id=w2 --concurrency="$concurrencies" \
  --etcd_metrics="$etcd_members" | record coordinator_etcd
stop_coordinator
log "etcd W5 A2A SendMessage through the gateway"
start_coordinator etcd_w5 "$etcd_store" --etcd_prefix=/bench/w5/
"$bin/echo_agent" --listen=127.0.0.1:0 --name=echo --coordinator="$coord_addr" \
  >"$work/etcd_echo_agent.log" 2>&1 &
echo_pid=$!
pids+=("$echo_pid")
wait_for "$work/etcd_echo_agent.log" 'registered with the coordinator' "$echo_pid" echo_agent >/dev/null
"$bin/coord_bench" --warmup_seconds="$warmup" --seconds="$seconds" --workload=a2a \
  --concurrency="$concurrencies" --target="$coord_addr" --tenant=echo --label=gateway \
  --cpu_pid="$coord_pid" | record coordinator_etcd
stop_pid "$echo_pid"
stop_coordinator
"$root/tests/etcd_cluster.sh" stop "$work/etcd"
fi

# --- the report
log "writing $out_dir/RESULTS.md and $out_dir/throughput.png"
mkdir -p "$out_dir"
# The run this one replaces is the baseline of the no-regression targets.
baseline="$work/baseline.jsonl"
if [ -s "$out_dir/results.jsonl" ]; then cp "$out_dir/results.jsonl" "$baseline"; fi
cp "$results" "$out_dir/results.jsonl"
"$py" "$root/bench/report.py" render "$out_dir/results.jsonl" "$out_dir" "$baseline"
log "done"

#!/usr/bin/env bash
# Heap allocations per call of the coordinator (issue 16: "allocation counts per call before and
# after each step"), counted by uprobes on libc's malloc, calloc and realloc (`perf probe`), for
# W1 (RecordFailure on distinct tasks) and W5 (blocking SendMessage through the gateway to
# echo_agent) at 1 and 16 streams. Counts, unlike times, do not depend on the machine's load, so
# this runs on a busy machine too; the uprobes slow every allocation, so it reports no timing.
#
#   bench/alloc_count.sh [<bin dir with coordinator and echo_agent>] [<bin dir with coord_bench>]
#
# Both default to build/bin. Comparing two builds: the first argument names the one measured,
# the load generator stays the same. Needs root (uprobes) and Debian's linux-perf.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIB_WHO=alloc_count
# shellcheck source=../tests/lib.sh
. "$root/tests/lib.sh"
server_bin="$(cd "${1:-$root/build/bin}" && pwd)"
client_bin="$(cd "${2:-$root/build/bin}" && pwd)"
seconds="${ALLOC_SECONDS:-3}"
libc="$(ldd "$server_bin/coordinator" | awk '/libc\.so/ {print $3}')"
events=()
for fn in malloc calloc realloc; do
  if ! perf probe -l 2>/dev/null | grep -q "probe_libc:$fn "; then
    perf probe -q -x "$libc" --add "$fn" >/dev/null
  fi
  events+=("probe_libc:$fn")
done

work="$(mktemp -d "${TMPDIR:-/tmp}/alloc-count-XXXXXX")"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

start() {  # start <name> <command...>: runs it in the background, its output in $work/<name>.log
  local name=$1
  shift
  "$@" >"$work/$name.log" 2>&1 &
  last_pid=$!
  pids+=("$last_pid")
}

# count <label> <pid> <coord_bench args...>: allocations of <pid> per completed call.
count() {
  local label=$1 pid=$2
  shift 2
  perf stat -x, -e "$(IFS=,; echo "${events[*]}")" -p "$pid" -o "$work/perf.csv" &
  local perf_pid=$!
  sleep 0.5
  "$client_bin/coord_bench" --warmup_seconds=0 --seconds="$seconds" "$@" >"$work/bench.json"
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
  local allocs calls
  allocs="$(awk -F, '/probe_libc/ {s += $1} END {print s + 0}' "$work/perf.csv")"
  calls="$(jq -s '[.[].calls] | add' "$work/bench.json")"
  echo "$label: $allocs allocations over $calls calls: $(awk -v a="$allocs" -v c="$calls" \
    'BEGIN {printf "%.0f", (c > 0 ? a / c : 0)}') per call"
}

echo "server binaries: $server_bin ($(stat -c %y "$server_bin/coordinator" | cut -c1-16))"
for c in 1 16; do
  start "w1-$c" "$server_bin/coordinator" --listen=127.0.0.1:0 --data_dir="$work/w1-$c" \
    --http_listen=
  coord=$last_pid
  addr="$(wait_for "$work/w1-$c.log" 'listening on 127\.0\.0\.1:[0-9]+' "$coord" coordinator |
    sed 's/^listening on //')"
  count "W1 RecordFailure @$c" "$coord" --target="$addr" --workload=fail --run_id=w1 \
    --tasks=1024 --concurrency="$c"
  kill "$coord"
  wait "$coord" 2>/dev/null || true

  start "w5-$c" "$server_bin/coordinator" --listen=127.0.0.1:0 --data_dir="$work/w5-$c" \
    --http_listen=
  coord=$last_pid
  addr="$(wait_for "$work/w5-$c.log" 'listening on 127\.0\.0\.1:[0-9]+' "$coord" coordinator |
    sed 's/^listening on //')"
  start "echo-$c" "$server_bin/echo_agent" --listen=127.0.0.1:0 --name=echo \
    --coordinator="$addr"
  agent=$last_pid
  wait_for "$work/echo-$c.log" 'registered with the coordinator' "$agent" echo_agent >/dev/null
  count "W5 SendMessage via the gateway @$c (coordinator only)" "$coord" --target="$addr" \
    --workload=a2a --tenant=echo --concurrency="$c"
  kill "$agent" "$coord"
  wait "$agent" "$coord" 2>/dev/null || true
done

#!/usr/bin/env bash
# W1 (RecordFailure on distinct tasks) on the etcd backend with two coordinator builds back to
# back on one fresh 3-member cluster (tests/etcd_cluster.sh), so that a change to the etcd path is
# measured against its parent in the same run (issue 38):
#
#   bench/etcd_ab.sh <old bin dir> <new bin dir> [concurrencies, default 1,16,64]
#
# For each concurrency, the old coordinator and then the new one, each on its own key prefix,
# driven by the new dir's coord_bench for BENCH_SECONDS (default 10, after 2 of warm-up). Beside
# each throughput: the coordinator's CPU per call and the etcd requests per call in the window
# (coord_bench --etcd_metrics: etcd's own grpc_server_handled_total of Txn, Range and Put, summed
# over the members' /metrics). Prints a JSON line per run and a markdown table.
# AB_OLD_FLAGS and AB_NEW_FLAGS add flags to one side's coordinator (e.g. --worker_threads=64).
set -euo pipefail
old=${1:?usage: bench/etcd_ab.sh <old bin dir> <new bin dir> [concurrencies]}
new=${2:?usage: bench/etcd_ab.sh <old bin dir> <new bin dir> [concurrencies]}
concurrencies=${3:-1,16,64}
seconds=${BENCH_SECONDS:-10}
root="$(cd "$(dirname "$0")/.." && pwd)"
LIB_WHO=etcd_ab
# shellcheck source=tests/lib.sh
. "$root/tests/lib.sh"

work="$(mktemp -d "${BENCH_TMP:-/tmp}/etcd-ab.XXXXXX")"
coord_pid=""
cleanup() {
  if [ -n "$coord_pid" ]; then stop_pids "$coord_pid"; fi
  "$root/tests/etcd_cluster.sh" stop "$work/etcd" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"$root/tests/etcd_cluster.sh" start "$work/etcd" 3 >&2
url="$(cat "$work/etcd/url")"
members="$(sed 's|^etcd://||' <<<"$url")"

results="$work/results.jsonl"
run=0
for c in ${concurrencies//,/ }; do
  for side in old new; do
    bin=$old
    flags=${AB_OLD_FLAGS:-}
    if [ "$side" = new ]; then
      bin=$new
      flags=${AB_NEW_FLAGS:-}
    fi
    run=$((run + 1))
    # shellcheck disable=SC2086  # $flags: words, by design
    "$bin/coordinator" --listen=127.0.0.1:0 --data_dir="$work/data-$run" --http_listen= \
      --store="$url" --etcd_prefix="/ab/$run/" $flags >"$work/coordinator-$run.log" 2>&1 &
    coord_pid=$!
    addr="$(wait_for "$work/coordinator-$run.log" 'listening on 127\.0\.0\.1:[0-9]+' "$coord_pid" \
      coordinator | sed 's/^listening on //')"
    "$new/coord_bench" --target="$addr" --cpu_pid="$coord_pid" --etcd_metrics="$members" \
      --warmup_seconds=2 --seconds="$seconds" --workload=fail --run_id="ab$run" --tasks=1024 \
      --concurrency="$c" | jq -c --arg side "$side" '. + {side: $side}' | tee -a "$results"
    stop_pids "$coord_pid"
    coord_pid=""
  done
done

echo
echo "| streams | old calls/s | new calls/s | new/old | old etcd req/call | new etcd req/call | old CPU us/call | new CPU us/call |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
jq -s -r 'group_by(.concurrency)[] | (map(select(.side == "old"))[0]) as $o |
  (map(select(.side == "new"))[0]) as $n |
  "| \($o.concurrency) | \($o.throughput | round) | \($n.throughput | round) | " +
  "\(($n.throughput / $o.throughput * 100 | round) / 100)x | " +
  "\(($o.etcd_requests_per_call * 100 | round) / 100) | \(($n.etcd_requests_per_call * 100 | round) / 100) | " +
  "\($o.cpu_us_per_call) | \($n.cpu_us_per_call) |"' "$results"

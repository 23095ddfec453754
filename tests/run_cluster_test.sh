#!/usr/bin/env bash
# make run-cluster, end to end (ctest run_cluster): scripts/run_cluster.sh on free ports and a
# temporary data dir until it serves; the sample evaluation is scored through replica 1 and
# listed through replica 2; then Ctrl-C (SIGINT to its process group) stops everything and halts
# the etcd cluster with its data kept; a second run resumes that cluster and still lists the
# first run's evaluation. SKIPPED (exit 77) without etcd.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin_dir=${1:?usage: run_cluster_test.sh BIN_DIR}
LIB_WHO=run_cluster_test
# shellcheck source=lib.sh
. "$root/tests/lib.sh"
if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
  echo "SKIPPED: etcd is not installed (scripts/install_deps.sh installs it)"
  exit 77
fi
work=$(mktemp -d /tmp/run-cluster-test.XXXXXX)
pid=""
cleanup() {
  [[ -n $pid ]] && kill -KILL -- "-$pid" 2>/dev/null || true
  "$root/tests/etcd_cluster.sh" stop "$work/data/etcd" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

run_once() {  # run_once <log>: starts make run-cluster's script, waits until it serves
  local log=$1
  setsid env BUILD_DIR="$(dirname "$bin_dir")" DATA_DIR="$work/data" \
    LISTEN="127.0.0.1:$(free_port)" REPLICA_LISTEN="127.0.0.1:$(free_port)" \
    REPLICA_HTTP="127.0.0.1:$(free_port)" COORD_FLAGS="--http_listen=127.0.0.1:$(free_port)" \
    "$root/scripts/run_cluster.sh" >"$log" 2>&1 &
  pid=$!
  wait_for "$log" 'serving until Ctrl-C' "$pid" run_cluster 240 >/dev/null
}

stop_once() {  # Ctrl-C, as a terminal sends it: to the whole process group
  kill -INT -- "-$pid"
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then echo "run_cluster did not stop on SIGINT" >&2; exit 1; fi
  pid=""
}

run_once "$work/first.log"
grep -q 'score' "$work/first.log" || { cat "$work/first.log" >&2; echo "no scored sample evaluation" >&2; exit 1; }
# make run says where the console is (scripts/run_stack.sh), and it answers there.
console=$(sed -n 's/^web console: \(http[^ ]*\)$/\1/p' "$work/first.log" | tail -1)
[[ -n $console ]] || { cat "$work/first.log" >&2; echo "no console address printed" >&2; exit 1; }
python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' "$console" || { echo "the console at $console does not answer" >&2; exit 1; }
grep -A5 'the same data through replica' "$work/first.log" | grep -q 'heap-overflow-record\|green' ||
  { cat "$work/first.log" >&2; echo "replica 2 did not list the evaluation" >&2; exit 1; }
stop_once
grep -q 'etcd cluster halted' "$work/first.log" || { cat "$work/first.log" >&2; exit 1; }

run_once "$work/second.log"
grep -q 'etcd cluster up again' "$work/second.log" || { cat "$work/second.log" >&2; exit 1; }
# Two sample evaluations now: the first run's is still there.
count=$(grep -A50 'the same data through replica' "$work/second.log" | grep -c 'green' || true)
[[ $count -ge 2 ]] || { cat "$work/second.log" >&2; echo "the first run's evaluation is gone" >&2; exit 1; }
stop_once
echo "run_cluster: sample evaluations scored on replica 1, read on replica 2, kept across a restart"

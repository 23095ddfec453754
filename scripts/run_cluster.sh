#!/usr/bin/env bash
# make run-cluster: the stack of `make run` on an etcd cluster instead of an embedded RocksDB.
# Three etcd members on loopback (tests/etcd_cluster.sh; their data in $DATA_DIR/etcd, kept
# across runs), two coordinator replicas on that data set ($LISTEN with the agents, and
# $REPLICA_LISTEN), the green and purple agents, one sample evaluation through the first replica
# and what the second replica sees of it; then serves until Ctrl-C, which stops everything
# (the cluster's data stays; `tests/etcd_cluster.sh stop $DATA_DIR/etcd` removes it).
# The background jobs (A2A deliveries included) run on the replica the election picked; every
# call, A2A included, may go to either replica (docs/storage.md, "Several replicas").
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
DATA_DIR=${DATA_DIR:-./data-cluster}
LISTEN=${LISTEN:-127.0.0.1:50051}
REPLICA_LISTEN=${REPLICA_LISTEN:-127.0.0.1:50052}
REPLICA_HTTP=${REPLICA_HTTP:-127.0.0.1:8081}
BIN=$BUILD_DIR/bin
mkdir -p "$DATA_DIR/replica2"

if [[ -f $DATA_DIR/etcd/url ]]; then
  tests/etcd_cluster.sh resume "$DATA_DIR/etcd"
else
  tests/etcd_cluster.sh start "$DATA_DIR/etcd" 3
fi
store="--store=$(cat "$DATA_DIR/etcd/url")"

replica=""
finish() {
  [[ -n $replica ]] && { kill -TERM "$replica" 2>/dev/null || true; wait "$replica" 2>/dev/null || true; }
  tests/etcd_cluster.sh halt "$DATA_DIR/etcd"
  echo "etcd cluster halted (data kept in $DATA_DIR/etcd)"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$BIN/coordinator" "$store" --listen="$REPLICA_LISTEN" --http_listen="$REPLICA_HTTP" \
  --data_dir="$DATA_DIR/replica2" 2>"$DATA_DIR/replica2.log" &
replica=$!
for _ in $(seq 100); do
  "$BIN/coordctl" --target "$REPLICA_LISTEN" --timeout 1s health >/dev/null 2>&1 && break
  kill -0 "$replica" 2>/dev/null || { cat "$DATA_DIR/replica2.log" >&2; exit 1; }
  sleep 0.1
done
echo "replica 2 serving on $REPLICA_LISTEN (logs in $DATA_DIR/replica2.log)"

COORD_FLAGS="$store ${COORD_FLAGS:-}" REPLICAS="$REPLICA_LISTEN" BUILD_DIR="$BUILD_DIR" \
  DATA_DIR="$DATA_DIR" LISTEN="$LISTEN" ./scripts/run_stack.sh

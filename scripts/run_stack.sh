#!/usr/bin/env bash
# Brings up the whole evaluation stack from an existing build (make run builds first): the
# coordinator on an embedded RocksDB, the green agent (the judge's environment host) and the
# purple agent (the agent under test, scripted policy). Both agents register with the
# coordinator at start-up. Then it runs one sample evaluation through the coordinator, prints
# the scored result, and keeps serving until Ctrl-C (SIGINT) or SIGTERM, which stop the
# children cleanly.
set -euo pipefail

BUILD_DIR=${BUILD_DIR:-build}
DATA_DIR=${DATA_DIR:-./data}
LISTEN=${LISTEN:-127.0.0.1:50051}
TASKS_DIR=${TASKS_DIR:-examples/tasks}
WORKSPACES_DIR=${WORKSPACES_DIR:-$DATA_DIR/workspaces}
SAMPLE_TASK=${SAMPLE_TASK:-heap-overflow-record}
POLICY=${POLICY:-script:$TASKS_DIR}
LOG_DIR=${LOG_DIR:-$DATA_DIR/logs}
# Further coordinator flags (make run-cluster: --store=etcd://...), and other replicas of the same
# data set whose view of the sample evaluation is printed after it (comma-separated targets).
read -r -a COORD_FLAGS <<<"${COORD_FLAGS:-}"
REPLICAS=${REPLICAS:-}
BIN=$BUILD_DIR/bin

for b in coordinator green_agent purple_agent coordctl; do
  [[ -x $BIN/$b ]] || { echo "run_stack: $BIN/$b is missing; run make build first" >&2; exit 1; }
done
mkdir -p "$DATA_DIR" "$LOG_DIR" "$WORKSPACES_DIR"

pids=()
stop() {
  trap - INT TERM
  echo
  echo "stopping..."
  # Agents first (their running tasks go back to the coordinator's queue), then the
  # coordinator, which drains and closes the database.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  echo "stopped"
  exit 0
}
trap stop INT TERM

"$BIN/coordinator" --listen="$LISTEN" --data_dir="$DATA_DIR" "${COORD_FLAGS[@]}" \
  2>"$LOG_DIR/coordinator.log" &
pids+=($!)
for _ in $(seq 100); do
  "$BIN/coordctl" --target "$LISTEN" --timeout 1s health >/dev/null 2>&1 && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$LOG_DIR/coordinator.log" >&2; exit 1; }
  sleep 0.1
done
if ((${#COORD_FLAGS[@]})); then store="${COORD_FLAGS[*]}"; else store="RocksDB in $DATA_DIR"; fi
echo "coordinator serving on $LISTEN ($store; logs in $LOG_DIR)"
# The console's address as the coordinator logged it (its HTTP port starts just after gRPC).
console=""
for _ in $(seq 50); do
  console=$(sed -n 's/.*web console on \(https\?:\/\/[^ "\\]*\).*/\1/p' "$LOG_DIR/coordinator.log" | tail -1)
  [[ -n $console ]] && break
  sleep 0.1
done
[[ -n $console ]] || console="(not served; see $LOG_DIR/coordinator.log)"
echo "web console: $console"

"$BIN/green_agent" --coordinator="$LISTEN" --tasks_dir="$TASKS_DIR" \
  --workspaces_dir="$WORKSPACES_DIR" 2>"$LOG_DIR/green_agent.log" &
pids+=($!)
"$BIN/purple_agent" --coordinator="$LISTEN" --policy="$POLICY" 2>"$LOG_DIR/purple_agent.log" &
pids+=($!)
for log in green_agent purple_agent; do
  for _ in $(seq 100); do
    grep -q "registered with the coordinator" "$LOG_DIR/$log.log" 2>/dev/null && break
    sleep 0.1
  done
done
"$BIN/coordctl" --target "$LISTEN" agent list

echo
echo "sample evaluation: coordctl send green \"Task ID: $SAMPLE_TASK\" --wait"
"$BIN/coordctl" --target "$LISTEN" send green "Task ID: $SAMPLE_TASK" --wait --for 5m || true
if [[ -n $REPLICAS ]]; then
  for replica in ${REPLICAS//,/ }; do
    echo
    echo "the same data through replica $replica: coordctl --target $replica context list"
    "$BIN/coordctl" --target "$replica" context list || true
  done
fi
echo
echo "web console: $console"
echo "serving until Ctrl-C. Try: $BIN/coordctl send green \"Task ID: uaf-list-remove\" --wait"
while true; do
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null || { echo "a process exited; see $LOG_DIR" >&2; stop; }
  done
  sleep 1 &
  wait $! || true
done

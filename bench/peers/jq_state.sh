#!/usr/bin/env bash
# Peer: the approach users run today, re-implemented faithfully. The state of every task lives
# in one JSON file; an update takes an exclusive flock, reads the whole file with jq, changes one
# task and rewrites the whole file through a temp file, fsync and rename (and fsyncs the
# directory, so the rename survives a crash: what a durable system must do).
#
#   jq_state.sh init  <state.json> <tasks>            writes a state file of <tasks> tasks
#   jq_state.sh bench <state.json> <tasks> <concurrency> <warmup s> <seconds> <out dir>
#       runs <concurrency> workers that record failures on random tasks; each worker writes the
#       latency (microseconds) of every update that ended in the measured window to
#       <out dir>/lat.<worker>, one a line (bench/report.py summarizes them).
set -euo pipefail

# The update under test: appends a failure to one task, counts the attempt, as the ARIA
# task-state scripts' record-failure does: one flock, one jq read-modify-write of the file.
record_failure() {
  local state="$1" task="$2" error="$3" now
  printf -v now '%(%s)T' -1
  (
    flock -x 9
    jq --arg t "$task" --arg e "$error" --arg now "$now" '
      .tasks[$t].failures += [{attempt: .tasks[$t].attempt_count, error: $e,
                               model: "codex-mini", timestamp: $now}]
      | .tasks[$t].attempt_count += 1' "$state" >"$state.tmp"
    sync "$state.tmp"
    mv "$state.tmp" "$state"
    sync "$(dirname "$state")"
  ) 9>"$state.lock"
}

init_state() {
  local state="$1" tasks="$2"
  jq -n --argjson n "$tasks" '
    {tasks: ([range(0; $n) | {key: ("task-\(.)"), value: {
      task_id: "task-\(.)", task_desc: "Fix the flaky integration test number \(.)",
      attempt_count: 2, model_tier: 2, created_at: "1731000000",
      failures: [{attempt: 1, error: "Timeout after 30s", model: "codex-mini",
                  timestamp: "1731000060"},
                 {attempt: 2, error: "Rate limit exceeded", model: "gpt-5.1",
                  timestamp: "1731000180"}],
      escalation_log: [{timestamp: "1731000120", reason: "Timeout on the smallest model",
                        from_tier: 1, to_tier: 2}],
      quality_gate_results: [], priority: "high", retry_budget: 5}}] | from_entries)}' \
    >"$state"
  sync "$state"
}

worker() {
  local state="$1" tasks="$2" from_us="$3" until_us="$4" out="$5" t0 t1 n=0
  : >"$out"
  while :; do
    t0="${EPOCHREALTIME/./}"
    ((t0 < until_us)) || break
    record_failure "$state" "task-$((RANDOM % tasks))" "AssertionError: expected 200, got 503 ($n)"
    t1="${EPOCHREALTIME/./}"
    # The updates that ended inside the measured window count (the completion rate).
    ((t1 < from_us || t1 > until_us)) || echo "$((t1 - t0))" >>"$out"
    n=$((n + 1))
  done
}

case "${1:-}" in
  init)
    init_state "$2" "$3"
    ;;
  bench)
    state="$2" tasks="$3" concurrency="$4" warmup="$5" seconds="$6" out="$7"
    mkdir -p "$out"
    init_state "$state" "$tasks"
    now="${EPOCHREALTIME/./}"
    from=$((now + ${warmup%.*} * 1000000))
    until=$((from + ${seconds%.*} * 1000000))
    pids=()
    for ((w = 0; w < concurrency; w++)); do
      worker "$state" "$tasks" "$from" "$until" "$out/lat.$w" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    # The file must still be valid JSON holding every task: no update was lost or torn.
    jq -e --argjson n "$tasks" '.tasks | length == $n' "$state" >/dev/null
    ;;
  *)
    echo "usage: $0 init <state.json> <tasks> | bench <state.json> <tasks> <concurrency> <warmup s> <seconds> <out dir>" >&2
    exit 2
    ;;
esac

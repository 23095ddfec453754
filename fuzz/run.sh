#!/usr/bin/env bash
# Runs every libFuzzer harness for a bounded time: fuzz/run.sh <bin dir> <seconds each> [harness...]
# Each harness reads its seed corpus (fuzz/corpus/<name>/, never modified) and writes the new
# inputs it finds into a scratch directory; a crash, leak or timeout input is kept there and
# named, and the script exits non-zero. The scratch directory ($FUZZ_WORK_DIR, default a new
# temporary one) is removed after a clean run unless FUZZ_KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir=${1:?usage: fuzz/run.sh <bin dir> <seconds each> [harness...]}
seconds=${2:?usage: fuzz/run.sh <bin dir> <seconds each> [harness...]}
shift 2
harnesses=("$@")
if [ "${#harnesses[@]}" -eq 0 ]; then
  harnesses=(fuzz_key_codec fuzz_task_graph fuzz_aria_state fuzz_context_service
    fuzz_conversation_service fuzz_task_state_service fuzz_breaker_service fuzz_work_service
    fuzz_agent_registry_service fuzz_a2a_service fuzz_admin_service fuzz_json_binding
    fuzz_agent_card fuzz_http_bindings fuzz_console fuzz_v03_json)
fi
work=${FUZZ_WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/coord-fuzz-XXXXXX")}
mkdir -p "$work"

# Runs one harness; its exit status says whether it found something.
run_one() {
  local h=$1
  mkdir -p "$work/$h/corpus" "$work/$h/artifacts"
  local args=(-max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1
    -artifact_prefix="$work/$h/artifacts/")
  case "$h" in
    # The service and HTTP harnesses keep a server running across inputs; its threads hold
    # memory that is freed only at exit, which libFuzzer's per-input leak check would misread.
    *_service | fuzz_http_bindings | fuzz_console) args+=(-detect_leaks=0) ;;
  esac
  case "$h" in
    fuzz_task_graph | fuzz_aria_state | fuzz_json_binding | fuzz_agent_card | fuzz_v03_json)
      args+=(-dict=fuzz/json.dict)
      ;;
    fuzz_http_bindings | fuzz_console) args+=(-dict=fuzz/http.dict) ;;
  esac
  "$bin_dir/$h" "${args[@]}" "$work/$h/corpus" "fuzz/corpus/$h" > "$work/$h/log" 2>&1
}

# FUZZ_JOBS harnesses at a time (default 1); each writes only under its own scratch directory.
jobs=${FUZZ_JOBS:-1}
declare -A pid_of=()
for h in "${harnesses[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  echo "fuzz: $h for ${seconds}s"
  run_one "$h" &
  pid_of[$h]=$!
done

failed=()
for h in "${harnesses[@]}"; do
  if ! wait "${pid_of[$h]}"; then
    failed+=("$h")
    echo "fuzz: $h FAILED; its log: $work/$h/log, the input: $(ls "$work/$h/artifacts/")"
    tail -40 "$work/$h/log"
  else
    grep -E "^(stat::number_of_executed_units|stat::new_units_added)" "$work/$h/log" |
      tr '\n' ' ' | sed "s/^/fuzz: $h: /"
    echo
  fi
done

if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz: failures in ${failed[*]}; inputs and logs kept in $work"
  exit 1
fi
if [ "${FUZZ_KEEP:-0}" != 1 ] && [ -z "${FUZZ_WORK_DIR:-}" ]; then
  rm -rf "$work"
else
  echo "fuzz: new inputs and logs in $work"
fi

#!/usr/bin/env bash
# Interop tests (issues 4 and 15): the official A2A JavaScript SDK (@a2a-js/sdk) against the
# coordinator, on all three bindings.
#
#   tests/interop/run.sh <dir with coordinator, coordctl, echo_agent, green_agent> [test files]
#
# (every *.test.mjs file when none are named)
# Installs the locked npm packages into tests/interop/node_modules when they are missing or
# stale (npm ci), starts a coordinator on 127.0.0.1:0 with a temporary data dir and its HTTP
# port (cards, JSON-RPC, HTTP+JSON) on 127.0.0.1:0, the C++ echo_agent (tenant "echo", registers
# itself), the SDK's gRPC server (js_agent.mjs, tenant "jsecho", registered with coordctl by
# address), the SDK's Express servers (js_rpc_agent.mjs: "jsrpc" on JSON-RPC and "jsrest" on
# HTTP+JSON, registered with coordctl by card URL), js03_agent.mjs ("js03", an A2A 0.3 agent on
# the SDK 0.3's Express JSON-RPC server, registered by its 0.3 card URL) and the green agent
# (examples/tasks), then runs the node:test files one at a time. Tests that start processes of
# their own (a coordinator to kill, an agent to restart) list them in $INTEROP_WORK/pids. Every
# process is stopped by PID when this script exits, whatever happens.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
LIB_WHO=interop
# shellcheck source=../lib.sh
. "$repo/tests/lib.sh"
bin_dir="${1:-${COORD_BIN_DIR:-}}"
if [ -z "$bin_dir" ]; then
  echo "usage: $0 <binaries dir>" >&2
  exit 2
fi
bin_dir="$(cd "$bin_dir" && pwd)"
shift || true
test_files=("$@")
if [ "${#test_files[@]}" -eq 0 ]; then
  # Every test file here, so that a new one cannot be left out (sdk_scenario.test.mjs once was).
  test_files=()
  for file in "$here"/*.test.mjs; do test_files+=("$(basename "$file")"); done
fi
for b in coordinator coordctl echo_agent green_agent; do
  if [ ! -x "$bin_dir/$b" ]; then
    echo "interop: $bin_dir/$b is missing; build it first" >&2
    exit 1
  fi
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "interop: node and npm are required (scripts/install_deps.sh installs them)" >&2
  exit 1
fi

node_flags=()
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 19 ]; then
  # Debian 12 ships Node 18, where the SDK's global `crypto` (crypto.randomUUID) is behind a flag.
  node_flags+=(--experimental-global-webcrypto)
fi

npm_ci_locked "$here"

# --- processes, always cleaned up.
work="$(mktemp -d "${TMPDIR:-/tmp}/coordinator-interop.XXXXXX")"
pids=()
status=1
cleanup() {
  local pid file
  stop_pids "${pids[@]}"
  # Processes the tests started and did not stop (a test killed mid-way): each file is named by
  # the PID and holds the program it ran, checked so that a reused PID is left alone.
  for file in "$work"/pids/*; do
    [ -f "$file" ] || continue
    pid="$(basename "$file")"
    if tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1 | grep -qxF "$(cat "$file")"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  if [ "$status" -ne 0 ]; then
    dump_logs "$work"
    if [ -n "${INTEROP_KEEP_WORK:-}" ]; then
      echo "interop: INTEROP_KEEP_WORK is set: the logs and data stay in $work" >&2
      return
    fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$work/pids"
"$bin_dir/coordinator" --listen=127.0.0.1:0 --data_dir="$work/data" --http_listen=127.0.0.1:0 \
  >"$work/coordinator.log" 2>&1 &
pids+=($!)
coord_pid=$!
coord_addr="$(wait_for "$work/coordinator.log" 'listening on 127\.0\.0\.1:[0-9]+' "$coord_pid" \
  coordinator | sed 's/^listening on //')"
coord_http="$(wait_for "$work/coordinator.log" 'http://127\.0\.0\.1:[0-9]+' "$coord_pid" \
  "coordinator (agent card)")"

"$bin_dir/echo_agent" --listen=127.0.0.1:0 --name=echo --coordinator="$coord_addr" \
  >"$work/echo_agent.log" 2>&1 &
pids+=($!)
wait_for "$work/echo_agent.log" 'registered with the coordinator' $! echo_agent >/dev/null

node "${node_flags[@]}" "$here/js_agent.mjs" --listen=127.0.0.1:0 --name=jsecho \
  >"$work/js_agent.log" 2>&1 &
pids+=($!)
js_addr="$(wait_for "$work/js_agent.log" 'listening on 127\.0\.0\.1:[0-9]+' $! js_agent |
  sed 's/^listening on //')"
"$bin_dir/coordctl" --target="$coord_addr" --timeout=10s agent register jsecho "$js_addr" \
  --description "echo agent on the A2A JavaScript SDK"
# The SDK's Express servers, registered by their card URL alone: the coordinator fetches each
# card and delivers over the binding it lists.
declare -A js_cards
for agent in jsrpc:JSONRPC jsrest:HTTP+JSON; do
  name="${agent%%:*}"
  node "${node_flags[@]}" "$here/js_rpc_agent.mjs" --listen=127.0.0.1:0 --name="$name" \
    --binding="${agent#*:}" >"$work/$name.log" 2>&1 &
  pids+=($!)
  base="$(wait_for "$work/$name.log" 'http://127\.0\.0\.1:[0-9]+' $! "$name")"
  js_cards[$name]="$base/.well-known/agent-card.json"
  if ! "$bin_dir/coordctl" --target="$coord_addr" --timeout=10s agent register "$name" \
      --card "${js_cards[$name]}"; then
    echo "interop: could not register $name by its card URL; its tests will fail" >&2
  fi
done
# An A2A 0.3 agent on the SDK 0.3's Express JSON-RPC server (js03_agent.mjs), registered by its
# 0.3 card URL alone: the coordinator stores it with protocol_version 0.3 and speaks 0.3 to it.
# It logs every execution to $work/js03/executions.jsonl (JS03_STATE) for the tests to count.
node "${node_flags[@]}" "$here/js03_agent.mjs" --listen=127.0.0.1:0 --name=js03 \
  --state_dir="$work/js03" >"$work/js03.log" 2>&1 &
pids+=($!)
js03_card="$(wait_for "$work/js03.log" 'http://127\.0\.0\.1:[0-9]+' $! js03)/.well-known/agent-card.json"
if ! "$bin_dir/coordctl" --target="$coord_addr" --timeout=10s agent register js03 \
    --card "$js03_card"; then
  echo "interop: could not register js03 by its card URL; its tests will fail" >&2
fi

"$bin_dir/green_agent" --listen=127.0.0.1:0 --coordinator="$coord_addr" \
  --tasks_dir="$repo/examples/tasks" --workspaces_dir="$work/workspaces" \
  >"$work/green_agent.log" 2>&1 &
pids+=($!)
wait_for "$work/green_agent.log" 'registered with the coordinator' $! green_agent >/dev/null

"$bin_dir/coordctl" --target="$coord_addr" --timeout=10s agent list

test_flags=(--test --test-reporter=spec)
if node --help | grep -q -- --test-concurrency; then
  # One file at a time: some files register agents, and discovery tests read the registry.
  test_flags+=(--test-concurrency=1)
fi

echo "interop: coordinator $coord_addr (http $coord_http), js agent $js_addr"
cd "$here"
# In the background, so that a signal to this script runs the cleanup at once.
COORD_ADDR="$coord_addr" COORD_HTTP="$coord_http" COORD_BIN_DIR="$bin_dir" INTEROP_WORK="$work" \
  JSRPC_CARD="${js_cards[jsrpc]}" JSREST_CARD="${js_cards[jsrest]}" \
  JS03_CARD="$js03_card" JS03_STATE="$work/js03" \
  node "${node_flags[@]}" "${test_flags[@]}" "${test_files[@]}" &
pids+=($!)
set +e
wait "$!"
status=$?
set -e
exit "$status"

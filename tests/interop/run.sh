#!/usr/bin/env bash
# Interop tests (issue 4): the official A2A JavaScript SDK (@a2a-js/sdk) against the coordinator.
#
#   tests/interop/run.sh <dir with coordinator, coordctl, echo_agent>
#
# Installs the locked npm packages into tests/interop/node_modules when they are missing or
# stale (npm ci), starts a coordinator on 127.0.0.1:0 with a temporary data dir and its agent
# card on 127.0.0.1:0, the C++ echo_agent (tenant "echo", registers itself) and the SDK's gRPC
# server (js_agent.mjs, tenant "jsecho", registered with coordctl), then runs the node:test
# files. Every process it starts is stopped by PID when it exits, whatever happens.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir="${1:-${COORD_BIN_DIR:-}}"
if [ -z "$bin_dir" ]; then
  echo "usage: $0 <binaries dir>" >&2
  exit 2
fi
bin_dir="$(cd "$bin_dir" && pwd)"
for b in coordinator coordctl echo_agent; do
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

# --- npm packages: npm ci when node_modules is missing or was installed from another lockfile.
lock_sum="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
stamp="$here/node_modules/.interop-lock-sha256"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sum" ]; then
  (
    # One install at a time, should two build trees run this test together.
    exec 9>"${TMPDIR:-/tmp}/coordinator-interop-npm.lock"
    flock -w 600 9
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sum" ]; then
      echo "interop: npm ci in $here"
      cd "$here"
      npm ci --no-audit --no-fund
      echo "$lock_sum" >"$stamp"
    fi
  )
fi

# --- processes, always cleaned up.
work="$(mktemp -d "${TMPDIR:-/tmp}/coordinator-interop.XXXXXX")"
pids=()
status=1
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    for log in "$work"/*.log; do
      [ -f "$log" ] || continue
      echo "----- $(basename "$log") (last 60 lines)" >&2
      tail -n 60 "$log" >&2
    done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for <file> <extended regex> <pid> <what>: prints the first match (bounded wait).
wait_for() {
  local file="$1" pattern="$2" pid="$3" what="$4" line
  for _ in $(seq 300); do
    line="$(grep -m1 -oE "$pattern" "$file" 2>/dev/null || true)"
    if [ -n "$line" ]; then
      echo "$line"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "interop: $what exited before it was ready" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "interop: $what was not ready after 30 s" >&2
  return 1
}

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
"$bin_dir/coordctl" --target="$coord_addr" --timeout=10s agent list

echo "interop: coordinator $coord_addr (card $coord_http), js agent $js_addr"
cd "$here"
# In the background, so that a signal to this script runs the cleanup at once.
COORD_ADDR="$coord_addr" COORD_HTTP="$coord_http" \
  node "${node_flags[@]}" --test --test-reporter=spec \
  sdk_client.test.mjs sdk_server.test.mjs &
pids+=($!)
set +e
wait "$!"
status=$?
set -e
exit "$status"

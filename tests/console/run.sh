#!/usr/bin/env bash
# The web console in a real browser (issue 20): Debian's chromium, headless, driven by
# puppeteer-core (locked in package-lock.json; it downloads no browser).
#
#   tests/console/run.sh <dir with coordinator, coordctl, echo_agent> [--screenshots DIR]
#
# Starts a coordinator on 127.0.0.1:0 with a temporary data dir, the C++ echo_agent, and seeds a
# finished and a running evaluation (one with an A2A task), a run with a held item, a retry
# task blocked by the breaker and an agent nothing answers for (seed.sh); starts a second
# coordinator with a token file; then
# runs console.test.mjs against both. With --screenshots, each view is saved there as a PNG
# (docs/console/ holds the committed ones). Exits 77 with a "SKIPPED: ..." line when chromium
# or node is missing (ctest's SKIP_RETURN_CODE); $CHROMIUM names another browser binary. Every process is stopped by PID on exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LIB_WHO=console
# shellcheck source=../lib.sh
. "$here/../lib.sh"
bin_dir="${1:-${COORD_BIN_DIR:-}}"
if [ -z "$bin_dir" ]; then
  echo "usage: $0 <binaries dir> [--screenshots DIR]" >&2
  exit 2
fi
bin_dir="$(cd "$bin_dir" && pwd)"
shift || true
screenshots=""
if [ "${1:-}" = "--screenshots" ]; then
  screenshots="$(mkdir -p "$2" && cd "$2" && pwd)"
fi

chromium="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
if [ -z "$chromium" ] || [ ! -x "$chromium" ]; then
  echo "SKIPPED: chromium is not installed${chromium:+ at $chromium} (apt-get install chromium; scripts/install_deps.sh does)"
  exit 77
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIPPED: node and npm are not installed (scripts/install_deps.sh installs them)"
  exit 77
fi
for b in coordinator coordctl echo_agent; do
  if [ ! -x "$bin_dir/$b" ]; then
    echo "console: $bin_dir/$b is missing; build it first" >&2
    exit 1
  fi
done

npm_ci_locked "$here"

# --- processes, always cleaned up.
work="$(mktemp -d "${TMPDIR:-/tmp}/coordinator-console.XXXXXX")"
pids=()
status=1
cleanup() {
  stop_pids "${pids[@]}"
  [ "$status" -eq 0 ] || dump_logs "$work"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_coordinator <name> [flags...]: sets coord_addr and coord_http.
start_coordinator() {
  local name="$1"
  shift
  "$bin_dir/coordinator" --listen=127.0.0.1:0 --data_dir="$work/$name-data" \
    --http_listen=127.0.0.1:0 "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  local pid=$!
  coord_addr="$(wait_for "$work/$name.log" 'listening on 127\.0\.0\.1:[0-9]+' "$pid" \
    "$name" | sed 's/^listening on //')"
  coord_http="$(wait_for "$work/$name.log" 'web console on http://127\.0\.0\.1:[0-9]+' "$pid" \
    "$name (console)" | sed 's/^web console on //')"
}

start_coordinator coordinator
"$bin_dir/echo_agent" --listen=127.0.0.1:0 --name=echo --coordinator="$coord_addr" \
  >"$work/echo_agent.log" 2>&1 &
pids+=($!)
wait_for "$work/echo_agent.log" 'registered' "$!" echo_agent >/dev/null
# A platform scenario run as coordctl scenario run leaves it: its judge and its participant
# registered as "<run>.green_agent" and "<run>.<role>" (echo agents here; seed.sh sends the judge
# its assessments, whose echoed JSON carries a score).
for role in green_agent solver; do
  "$bin_dir/echo_agent" --listen=127.0.0.1:0 --name="sc-demo.$role" --coordinator="$coord_addr" \
    >"$work/sc-demo.$role.log" 2>&1 &
  pids+=($!)
  wait_for "$work/sc-demo.$role.log" 'registered' "$!" "sc-demo.$role" >/dev/null
done
"$here/seed.sh" "$bin_dir/coordctl" "$coord_addr" "$work" >"$work/seed.log" 2>&1

reader_token="reader-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
admin_token="admin-$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
printf '{"tokens": [{"token": "%s", "principal": "dash", "role": "reader"}, {"token": "%s", "principal": "ops", "role": "admin"}]}\n' \
  "$reader_token" "$admin_token" >"$work/tokens.json"
chmod 600 "$work/tokens.json"
main_addr="$coord_addr"
main_http="$coord_http"
start_coordinator secured --token_file="$work/tokens.json"

export CONSOLE_URL="$main_http" CONSOLE_TARGET="$main_addr" CONSOLE_COORDCTL="$bin_dir/coordctl"
export CONSOLE_SECURED_URL="$coord_http" CONSOLE_READER_TOKEN="$reader_token"
export CONSOLE_CHROMIUM="$chromium" CONSOLE_SCREENSHOTS="$screenshots" CONSOLE_GRAPH="$work/graph.json"
cd "$here"
node --test --test-concurrency=1 console.test.mjs
status=0

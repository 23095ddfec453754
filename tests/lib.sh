# Shell helpers of the scripts that start real processes (tests/interop/run.sh,
# tests/console/run.sh, tests/stack_test.sh, tests/etcd_cluster.sh, bench/run.sh). Sourced, not run. Messages start with "$LIB_WHO: " (set it
# first: "interop", "console", "bench").

# npm_ci_locked <dir>: installs the packages of <dir>/package-lock.json into <dir>/node_modules
# (npm ci) when they are missing or were installed from another lockfile, one install at a time
# across build trees (flock), and stamps node_modules with the lockfile's digest.
npm_ci_locked() {
  local dir="$1" lock_sum stamp
  lock_sum="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  stamp="$dir/node_modules/.lock-sha256"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock_sum" ] && return 0
  (
    exec 9>"${TMPDIR:-/tmp}/coordinator-npm-$(basename "$dir").lock"
    flock -w 600 9
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sum" ]; then
      echo "$LIB_WHO: npm ci in $dir" >&2
      cd "$dir"
      npm ci --no-audit --no-fund >&2
      echo "$lock_sum" >"$stamp"
    fi
  )
}

# wait_for <file> <extended regex> <pid> <what> [seconds, default 30]: prints the first match of
# the regex in the file once it appears; fails (with the file's tail) when process <pid> exits
# first or the time runs out.
wait_for() {
  local file="$1" pattern="$2" pid="$3" what="$4" seconds="${5:-30}" line
  for _ in $(seq $((seconds * 10))); do
    line="$(grep -m1 -oE "$pattern" "$file" 2>/dev/null | head -n 1 || true)"
    if [ -n "$line" ]; then
      echo "$line"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$LIB_WHO: $what exited before it was ready:" >&2
      tail -n 20 "$file" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "$LIB_WHO: $what was not ready after $seconds s" >&2
  return 1
}

# stop_pids <pid>...: SIGTERM to each, then SIGKILL to any still running 5 s later; reaps them.
stop_pids() {
  local pid
  for pid in "$@"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "$@"; do
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}

# dump_logs <dir>: the last 60 lines of every <dir>/*.log, to stderr (after a failure).
dump_logs() {
  local log
  for log in "$1"/*.log; do
    [ -f "$log" ] || continue
    echo "----- $(basename "$log") (last 60 lines)" >&2
    tail -n 60 "$log" >&2
  done
}

# free_port [taken...]: prints a port free on this machine now, below the kernel's ephemeral
# range (ip_local_port_range) and none of `taken`. For a server that stops and starts again on
# the same port (a killed container, an etcd member): while it is down, a port from the ephemeral
# range could be taken by any connection or listener of the tests running beside it, and the
# restart would fail with "address already in use".
free_port() {
  python3 - "$@" <<'PY'
import random, socket, sys
taken = {int(p) for p in sys.argv[1:]}
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    port = random.randrange(max(1024, low - 12000), low)
    if port in taken:
        continue
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:
    raise SystemExit("no free port below the ephemeral range")
PY
}

#!/usr/bin/env python3
"""The ARIA drop-in scripts (scripts/compat/) against what the original scripts printed.

Each scenario in tests/testdata/compat/aria/scenarios/*.sh is a list of steps; a step prints the
command, its stdout, its stderr and its exit status. For every scenario this test starts its own
coordinator (127.0.0.1, a port it picks itself, a fresh data directory), runs the scenario with
the compat scripts and compares the transcript byte for byte with <name>.out, after both have
had times replaced by placeholders (see normalize()). Last, with no coordinator to reach, every
function and command must fail and say so on stderr.

The .out files of scenarios marked "# expected: original" were recorded from the original
scripts (mknebel/aria-agents-mikesdev, scripts/aria-task-state.sh and
scripts/aria-iteration-breaker.sh) on a developer machine with

    tests/compat/aria_compat_test.py --record <dir holding the two original scripts>

(the originals are not in this repository and CI has no network). Scenarios marked
"# expected: ours" cover places where the original is broken (docs/compat.md says how); their
.out files hold our output, reviewed by hand, recorded with --record-ours.

Usage: aria_compat_test.py <bin dir> <source dir> [--record DIR | --record-ours]
Python 3 standard library only.
"""

import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

PRELUDE = r"""
# step <command...>: runs the command in this shell and prints what it did.
step() {
    printf '$ %s\n' "$*"
    local rc=0
    "$@" > "$SCRATCH/out" 2> "$SCRATCH/err" || rc=$?
    printf -- '--- stdout\n'
    cat "$SCRATCH/out"
    printf -- '--- stderr\n'
    cat "$SCRATCH/err"
    printf -- '--- exit %d\n' "$rc"
}
# breaker <args...>: runs the breaker script as a command.
breaker() {
    "$BREAKER" "$@"
}
# breaker_debug <args...>: the same with ARIA_BREAKER_DEBUG=1.
breaker_debug() {
    ARIA_BREAKER_DEBUG=1 "$BREAKER" "$@"
}
# sourced_breaker <function> <args...>: calls a breaker function in a shell that sourced it
# (the original turns on set -e in whatever sources it, so not in this one).
sourced_breaker() {
    bash -c 'source "$BREAKER"; "$@"' sourced_breaker "$@"
}
source "$TASK_STATE"
"""


def normalize(text, blocked_dir, var_dir):
    """Replaces what differs from run to run: times, and the test's own directories."""
    text = text.replace(blocked_dir, "/tmp/aria-blocked-tasks")
    text = text.replace(var_dir, "/tmp/claude_vars")
    text = re.sub(r'"[0-9]{9,11}"', '"<EPOCH>"', text)
    text = re.sub(r"^[0-9]{10}$", "<EPOCH>", text, flags=re.MULTILINE)
    text = re.sub(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}", "<TIME>", text)
    return text


def expectation(scenario_path):
    with open(scenario_path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"# expected: (original|ours)\s*$", line)
            if m:
                return m.group(1)
    raise SystemExit(f"{scenario_path}: no '# expected: original|ours' line")


class Coordinator:
    """A coordinator on 127.0.0.1 at a port it chose, with a data directory of its own."""

    def __init__(self, bin_dir, data_dir):
        self.lines = []
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "coordinator"), "--listen=127.0.0.1:0",
             "--http_listen=127.0.0.1:0", "--data_dir=" + data_dir],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        self.target = None
        for line in self.proc.stdout:
            self.lines.append(line)
            m = re.search(r"listening on (127\.0\.0\.1:[0-9]+)", line)
            if m:
                self.target = m.group(1)
                break
        if self.target is None:
            self.proc.wait()
            raise SystemExit("coordinator did not start:\n" + "".join(self.lines))
        # Keep draining its log so that it never blocks on a full pipe.
        self.drain = threading.Thread(target=self._drain, daemon=True)
        self.drain.start()

    def _drain(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def stop(self):
        """SIGTERM, then its exit status (0 when it shut down cleanly, and under ASan leak-free)."""
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait()
        self.drain.join()
        return code


def run_scenario(scenario, env_extra, work):
    scratch = os.path.join(work, "scratch")
    os.makedirs(scratch, exist_ok=True)
    prelude = os.path.join(work, "prelude.sh")
    with open(prelude, "w", encoding="utf-8") as f:
        f.write(PRELUDE)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.path.join(work, "home"),
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "SCRATCH": scratch,
    }
    env.update(env_extra)
    os.makedirs(env["HOME"], exist_ok=True)
    result = subprocess.run(
        ["bash", "-c", 'source "$1"; source "$2"', "scenario", prelude, scenario],
        env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return result.stdout.decode("utf-8", errors="surrogateescape")


def run_ours(bin_dir, source_dir, scenario, work):
    data_dir = os.path.join(work, "data")
    blocked_dir = os.path.join(work, "blocked")
    var_dir = os.path.join(work, "vars")
    coordinator = Coordinator(bin_dir, data_dir)
    try:
        compat = os.path.join(source_dir, "scripts", "compat")
        text = run_scenario(scenario, {
            "TASK_STATE": os.path.join(compat, "aria-task-state.sh"),
            "BREAKER": os.path.join(compat, "aria-iteration-breaker.sh"),
            "ARIA_COORDCTL": os.path.join(bin_dir, "coordctl"),
            "COORDCTL_TARGET": coordinator.target,
            "ARIA_BLOCKED_TASKS_DIR": blocked_dir,
            "ARIA_BREAKER_VAR_DIR": var_dir,
        }, work)
    finally:
        code = coordinator.stop()
    log = "".join(coordinator.lines)
    for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
                   "runtime error: "):
        if marker in log:
            # The sanitizer's report, whole (as tests/process_util.cc prints a child's).
            raise SystemExit("=== sanitizer report of child process (coordinator) ===\n" +
                             log[log.rfind("\n", 0, log.index(marker)) + 1:] + "\n=== end ===")
    if code != 0:
        raise SystemExit(f"coordinator exited {code}:\n" + "".join(coordinator.lines[-50:]))
    return normalize(text, blocked_dir, var_dir)


def clear_original_state():
    """The originals keep their state in fixed places under /tmp; start each scenario empty."""
    for name in os.listdir("/tmp"):
        if re.fullmatch(r"aria-task-.*\.(json|lock|json\.tmp)", name):
            os.remove(os.path.join("/tmp", name))
    shutil.rmtree("/tmp/aria-blocked-tasks", ignore_errors=True)
    shutil.rmtree("/tmp/claude_vars", ignore_errors=True)


def run_original(original_dir, scenario, work):
    scripts = os.path.join(work, "home", ".claude", "scripts")
    os.makedirs(scripts, exist_ok=True)
    task_state = os.path.join(scripts, "aria-task-state.sh")
    shutil.copy(os.path.join(original_dir, "aria-task-state.sh"), task_state)
    # The breaker sources aria-config.sh but uses nothing from it.
    open(os.path.join(scripts, "aria-config.sh"), "w").close()
    breaker = os.path.join(work, "aria-iteration-breaker.sh")
    shutil.copy(os.path.join(original_dir, "aria-iteration-breaker.sh"), breaker)
    os.chmod(breaker, 0o755)
    clear_original_state()
    try:
        text = run_scenario(scenario, {"TASK_STATE": task_state, "BREAKER": breaker}, work)
    finally:
        clear_original_state()
    return normalize(text, "/tmp/aria-blocked-tasks", "/tmp/claude_vars")


UNREACHABLE_STEPS = r"""
source "$TASK_STATE"
for call in "aria_task_init x" "aria_task_get 0123abcd task_id" "aria_task_set 0123abcd f v" \
        "aria_task_increment_attempt 0123abcd" "aria_task_escalate 0123abcd r" \
        "aria_task_record_failure 0123abcd e" "aria_task_state 0123abcd" "aria_task_list"; do
    rc=0
    err=$($call 2>&1 >/dev/null) || rc=$?
    printf '%s|%s|%s\n' "$call" "$rc" "$err"
done
for command in "check 0123abcd" "analyze 0123abcd" "status"; do
    rc=0
    err=$("$BREAKER" $command 2>&1 >/dev/null) || rc=$?
    printf '%s|%s|%s\n' "$command" "$rc" "$err"
done
"""


def check_unreachable(bin_dir, source_dir):
    """With no coordinator, every call fails (status != 0) and says why on stderr."""
    import socket
    # A port bound but not listening refuses connections for as long as we hold it.
    with socket.socket() as sock, tempfile.TemporaryDirectory(prefix="aria-compat-") as work:
        sock.bind(("127.0.0.1", 0))
        compat = os.path.join(source_dir, "scripts", "compat")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "LC_ALL": "C.UTF-8",
               "TASK_STATE": os.path.join(compat, "aria-task-state.sh"),
               "BREAKER": os.path.join(compat, "aria-iteration-breaker.sh"),
               "ARIA_COORDCTL": os.path.join(bin_dir, "coordctl"),
               "COORDCTL_TARGET": "127.0.0.1:%d" % sock.getsockname()[1],
               "ARIA_BLOCKED_TASKS_DIR": os.path.join(work, "blocked"),
               "ARIA_BREAKER_VAR_DIR": os.path.join(work, "vars")}
        out = subprocess.run(["bash", "-c", UNREACHABLE_STEPS], env=env, cwd=work,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    bad = [line for line in out.splitlines()
           if line.split("|")[1] == "0" or "coordctl: UNAVAILABLE" not in line]
    for line in bad:
        print(f"FAIL unreachable coordinator: {line}")
    if len(out.splitlines()) != 11:
        print("FAIL unreachable coordinator: unexpected output\n" + out)
        return False
    if not bad:
        print("ok   unreachable coordinator: every call fails with coordctl's UNAVAILABLE")
    return not bad


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    bin_dir, source_dir = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    mode = argv[3] if len(argv) > 3 else "check"
    data = os.path.join(source_dir, "tests", "testdata", "compat", "aria")
    scenarios = sorted(n for n in os.listdir(os.path.join(data, "scenarios")) if n.endswith(".sh"))
    if not scenarios:
        raise SystemExit("no scenarios")
    failed = []
    for name in scenarios:
        scenario = os.path.join(data, "scenarios", name)
        golden = os.path.join(data, name[:-3] + ".out")
        kind = expectation(scenario)
        with tempfile.TemporaryDirectory(prefix="aria-compat-") as work:
            if mode == "--record":
                if kind != "original":
                    continue
                text = run_original(os.path.abspath(argv[4]), scenario, work)
            else:
                if mode == "--record-ours" and kind != "ours":
                    continue
                text = run_ours(bin_dir, source_dir, scenario, work)
        if mode in ("--record", "--record-ours"):
            with open(golden, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
            print(f"recorded {golden}")
            continue
        with open(golden, encoding="utf-8", errors="surrogateescape") as f:
            expected = f.read()
        if text == expected:
            print(f"ok   {name}")
        else:
            failed.append(name)
            print(f"FAIL {name}")
            sys.stdout.writelines(difflib.unified_diff(
                expected.splitlines(keepends=True), text.splitlines(keepends=True),
                fromfile=golden, tofile="compat scripts"))
    if mode == "check" and not check_unreachable(bin_dir, source_dir):
        failed.append("unreachable coordinator")
    if failed:
        print(f"{len(failed)} checks failed: {' '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

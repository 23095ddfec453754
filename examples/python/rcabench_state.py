#!/usr/bin/python3
"""The green and purple agents' state, kept in the coordinator instead of in memory.

In the root-cause-analysis harness this project started from, both agents keep a dict keyed by
the A2A context_id, and a restart of either loses every running evaluation:

    green:  self.task_contexts = {}   # context_id -> TaskContext(arvo_id, workspace_dir,
                                      #   shared_dir, docker_env, command_count, failed_commands)
    purple: self.task_contexts = {}   # context_id -> {messages, step_count, tokens}

Here the same code reads and writes the coordinator:

    green:  self.task_contexts = Coordinator(target).contexts
    purple: self.task_contexts = Coordinator(target).conversations

and keeps the harness's own logic: the green agent tells a new task from a running one by "the
context exists, else it is a new task", counts each `execute:` command once (failures too), and
scores `submit`; the purple agent keeps its messages with their step count (its own turns) and tokens. The
A2A messages between the two are calls between the two objects here; the model of the purple
agent is a list of scripted answers (by default examples/tasks/<task>/purple_script.json).

Kill it at any moment and run it again with the same --context-id: it resumes where the
coordinator says it was, and ends in the same state as a run that was never interrupted.

    build/bin/coordinator --listen=127.0.0.1:50051 --data_dir=./data &
    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation ./clients/python
    .venv/bin/python examples/python/rcabench_state.py --context-id eval-1 \\
        --task uaf-list-remove --tasks-dir examples/tasks --workspaces /tmp/rcabench
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from coordinator_client import Context, Coordinator, CoordinatorError

# A command may run this long; this much of its output goes back to the agent under test.
COMMAND_TIMEOUT_SECONDS = 30
OUTPUT_CAP = 4000


def tokens_of(text: str) -> int:
    """A stand-in for the model's token count (the harness takes it from the model's usage)."""
    return len(text.split())


class GreenAgent:
    """The judge's environment host: one evaluation per context_id."""

    def __init__(self, coordinator: Coordinator, tasks_dir: Path, workspaces: Path,
                 say: Callable[[str], None]) -> None:
        self.task_contexts = coordinator.contexts  # was: {}
        self.tasks_dir = tasks_dir
        self.workspaces = workspaces
        self.say = say

    def handle(self, context_id: str, user_input: str, exec_seq: int = 0) -> str:
        """One A2A message to the green agent; returns its answer's text."""
        task_context = self.task_contexts.get(context_id)
        if task_context is not None:
            # Task exists: handle commands.
            if user_input.strip().startswith("execute:"):
                command = user_input.strip()[len("execute:"):].strip()
                return self.execute(task_context, command, exec_seq)
            if user_input.strip() == "submit":
                return self.submit(task_context)
            return "error: send \"execute: <command>\" or \"submit\""
        # No task: it must be a new task from the judge.
        if "Task ID:" in user_input or "arvo:" in user_input:
            task_id = user_input.split("Task ID:" if "Task ID:" in user_input else "arvo:")[1]
            return self.new_task(context_id, task_id.split()[0])
        return "error: no evaluation runs in this context; send \"Task ID: <id>\""

    def new_task(self, context_id: str, task_id: str) -> str:
        bundle = self.tasks_dir / task_id
        workspace = self.workspaces / context_id / "workspace"
        shared = workspace / "shared"
        # Files first, then the context: a crash in between leaves no context, and the task
        # is simply started again.
        shutil.copytree(bundle / "src", workspace / "src", dirs_exist_ok=True)
        shutil.copy(bundle / "crash_report.txt", workspace / "crash_report.txt")
        shared.mkdir(parents=True, exist_ok=True)
        self.task_contexts.create(
            context_id, agent="green", external_task_id=task_id, workspace_dir=str(workspace),
            shared_dir=str(shared), environment_handle=f"local:{workspace}",
            labels={"task_id": task_id, "phase": "running"})
        self.say(f"green: new task {task_id} in context {context_id} (workspace {workspace})")
        return self.task_prompt(task_id)

    def task_prompt(self, task_id: str) -> str:
        """What the judge sends the agent under test (the same for a resumed evaluation)."""
        report = (self.tasks_dir / task_id / "crash_report.txt").read_text()
        return (f"Task ID: {task_id}\nThe program built from src/ crashed with this report. "
                "Find the root cause, write it to shared/loc.json as {\"locations\": [{\"file\","
                " \"function\", \"line\"}]} and reply submit. Run commands with "
                f"\"execute: <command>\".\n\n{report}")

    def execute(self, ctx: Context, command: str, exec_seq: int) -> str:
        """Runs an `execute:` command in the workspace and counts it once per exec_seq: a
        command resent after a restart (its count already recorded) runs again for its output
        but is not counted twice."""
        if ctx.status != "active":
            return f"error: the evaluation has ended ({ctx.status})"
        if exec_seq > ctx.command_count + 1:
            return f"error: command {exec_seq} is out of order ({ctx.command_count} recorded)"
        started = time.monotonic()
        try:
            ran = subprocess.run(shlex.split(command), cwd=ctx.workspace_dir,
                                 capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS,
                                 env={**os.environ, "SHARED_DIR": ctx.shared_dir})
            exit_code, output = ran.returncode, ran.stdout + ran.stderr
        except (OSError, ValueError) as error:
            exit_code, output = 127, f"{error}\n"
        except subprocess.TimeoutExpired:
            exit_code, output = 124, f"timed out after {COMMAND_TIMEOUT_SECONDS} s\n"
        if exec_seq == 0 or exec_seq == ctx.command_count + 1:
            digest = "sha256:" + hashlib.sha256(output.encode()).hexdigest()
            ctx.record_command(command, exit_code=exit_code,
                               duration=time.monotonic() - started, output_digest=digest)
            self.say(f"green: command #{ctx.command_count} exit {exit_code} "
                     f"(command_count {ctx.command_count}, failed {ctx.failed_commands})")
        return f"exit {exit_code}\n{output[:OUTPUT_CAP]}"

    def submit(self, ctx: Context) -> str:
        """Scores shared/loc.json against the ground truth, once."""
        if ctx.status == "active":
            truth = json.loads((self.tasks_dir / ctx.external_task_id /
                                "ground_truth.json").read_text())["locations"]
            try:
                submitted = json.loads((Path(ctx.shared_dir) / "loc.json").read_text())
                score = score_locations(truth, submitted["locations"])
            except (OSError, ValueError, KeyError, TypeError) as error:
                ctx.update(status="failed", labels={"phase": "failed", "error": str(error)})
                self.say(f"green: submission refused: {error}")
                return f"error: {error}"
            ctx.update(status="completed", labels={"phase": "scored", "score": f"{score:.4f}"})
            self.say(f"green: scored {score:.4f}")
        if ctx.status == "completed":
            return f"score: {ctx.labels['score']}"
        return f"error: {ctx.labels.get('error', ctx.status)}"


def score_locations(truth: List[dict], submitted: List[dict]) -> float:
    """Mean of the file, function and line accuracies (as green_agent/evaluation.cc)."""
    files = functions = lines = 0
    for t in truth:
        same_file = [s for s in submitted if s.get("file", "").lstrip("./") ==
                     t["file"].lstrip("./")]
        files += bool(same_file)
        functions += any(s.get("function") == t["function"] for s in same_file)
        lines += any(s.get("line_start", s.get("line", 0)) <= t["line_end"] and
                     s.get("line_end", s.get("line", 0)) >= t["line_start"] for s in same_file)
    return (files + functions + lines) / (3 * len(truth))


class PurpleAgent:
    """The agent under test: per context, its messages, step count and tokens."""

    def __init__(self, coordinator: Coordinator, script: List[str],
                 say: Callable[[str], None]) -> None:
        self.task_contexts = coordinator.conversations  # was: {}
        self.script = script
        self.say = say

    def history(self, context_id: str) -> List[Tuple[str, str]]:
        """(role, text) of every message so far; [] before the task arrived."""
        if context_id not in self.task_contexts:
            return []
        return [(m.role.value if m.role else "", m.text)
                for m in self.task_contexts[context_id].messages()]

    def add(self, context_id: str, history: List[Tuple[str, str]], role: str,
            text: str) -> None:
        totals = self.task_contexts[context_id].append(role, text, tokens=tokens_of(text))
        history.append((role, text))
        first_line = text.splitlines()[0] if text else ""
        self.say(f"purple: message {totals.message_count} {role}: {first_line[:60]!r} "
                 f"(step_count {totals.step_count}, total_tokens {totals.total_tokens})")

    def act(self, context_id: str, history: List[Tuple[str, str]]) -> None:
        """The model's next action: here the scripted answers, in order."""
        done = sum(1 for role, _ in history if role == "agent")
        self.add(context_id, history, "agent", self.script[min(done, len(self.script) - 1)])


def evaluate(green: GreenAgent, purple: PurpleAgent, context_id: str, task_id: str,
             say: Callable[[str], None]) -> None:
    """One evaluation, started or resumed from what the coordinator holds."""
    ctx = green.task_contexts.get(context_id)
    if ctx is None:
        prompt = green.handle(context_id, f"Task ID: {task_id}")
    else:
        say(f"green: context {context_id} exists (command_count {ctx.command_count}): resuming")
        prompt = green.task_prompt(ctx.external_task_id)
    history = purple.history(context_id)
    if history:
        steps = sum(1 for role, _ in history if role == "agent")
        say(f"purple: resuming after message {len(history)} (step {steps})")
    else:
        purple.add(context_id, history, "user", prompt)
    while not (len(history) >= 2 and history[-2] == ("agent", "submit")):
        role, text = history[-1]
        if role != "agent":
            purple.act(context_id, history)
            continue
        # The agent's action goes to the green agent; its answer back to the agent.
        exec_seq = sum(1 for r, t in history if r == "agent" and t.startswith("execute:"))
        answer = green.handle(context_id, text,
                              exec_seq=exec_seq if text.startswith("execute:") else 0)
        purple.add(context_id, history, "user", answer)


def main(argv: Optional[List[str]] = None) -> int:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051",
                        help="coordinator address (default %(default)s)")
    parser.add_argument("--auth-token-file", help="file holding the bearer token")
    parser.add_argument("--tls-ca-file", help="PEM root certificate: connect with TLS")
    parser.add_argument("--context-id", required=True, help="the evaluation's A2A context_id")
    parser.add_argument("--task", default="uaf-list-remove", help="task id (default %(default)s)")
    parser.add_argument("--tasks-dir", type=Path, default=here.parent / "tasks",
                        help="task bundles (default %(default)s)")
    parser.add_argument("--workspaces", type=Path, default=Path("workspaces"),
                        help="where workspaces are made (default %(default)s)")
    parser.add_argument("--script", type=Path,
                        help="the model's answers, a JSON list of strings (default: the "
                             "task's purple_script.json)")
    parser.add_argument("--pause-after", type=int, default=0, metavar="N",
                        help="after the N-th change stored by this run, print 'paused' and "
                             "wait (for a test to kill the process there)")
    args = parser.parse_args(argv)

    changes = 0

    def say(line: str) -> None:
        """Prints one line per stored change; pauses after the --pause-after-th."""
        nonlocal changes
        print(line, flush=True)
        changes += 1
        if changes == args.pause_after:
            print(f"paused after change {changes}", flush=True)
            while True:
                signal.pause()

    with Coordinator(args.target, token_file=args.auth_token_file,
                     tls_ca=args.tls_ca_file) as coordinator:
        green = GreenAgent(coordinator, args.tasks_dir, args.workspaces, say)
        script_file = args.script or args.tasks_dir / args.task / "purple_script.json"
        purple = PurpleAgent(coordinator, json.loads(script_file.read_text()), say)
        evaluate(green, purple, args.context_id, args.task, print)
        ctx = coordinator.contexts[args.context_id]
        totals = coordinator.conversations[args.context_id].totals()
        print(f"done: context {ctx.context_id} {ctx.status} score {ctx.labels.get('score')} "
              f"command_count {ctx.command_count} failed {ctx.failed_commands} "
              f"step_count {totals.step_count} messages {totals.message_count} "
              f"total_tokens {totals.total_tokens}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CoordinatorError as error:
        print(f"rcabench_state.py: {error}", file=sys.stderr)
        sys.exit(1)

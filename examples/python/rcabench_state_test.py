"""rcabench_state.py killed with kill -9 mid-evaluation, four times at four kinds of moment,
resumes from the coordinator each time and ends exactly where an uninterrupted evaluation ends.

Run by ctest (python_rcabench_example) with the venv that has coordinator_client installed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

from coordinator_client import Coordinator
from coordinator_client.testing import CoordinatorProcess, LoggedProcess

EXAMPLE = Path(__file__).resolve().parent / "rcabench_state.py"
TASKS = Path(__file__).resolve().parents[1] / "tasks"

# The uaf-list-remove answers with one command that fails, so that failures are counted too.
SCRIPT = [
    "execute: ls src",
    "execute: cat no-such-file.txt",
    "execute: grep -n SUMMARY crash_report.txt",
    "execute: sh -c 'printf %s \"$0\" > shared/loc.json' '{\"locations\": [{\"file\": "
    "\"src/list.c\", \"function\": \"list_remove\", \"line\": 20}]}'",
    "execute: cat shared/loc.json",
    "submit",
]


@pytest.fixture(scope="module")
def server() -> Iterator[CoordinatorProcess]:
    with CoordinatorProcess() as process:
        yield process


def start(server: CoordinatorProcess, tmp_path: Path, context_id: str,
          pause_after: int = 0) -> LoggedProcess:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    command = [sys.executable, str(EXAMPLE), "--target", server.target, "--context-id",
               context_id, "--tasks-dir", str(TASKS), "--workspaces", str(tmp_path / "ws"),
               "--script", str(script)]
    if pause_after:
        command += ["--pause-after", str(pause_after)]
    return LoggedProcess(command)


def finish(process: LoggedProcess) -> str:
    """Waits for a run to the end; returns its "done:" line."""
    assert process.wait(120) == 0, process.describe()
    return process.wait_for("done: ", stdout=True)


def state(c: Coordinator, context_id: str) -> Dict[str, object]:
    """Everything the evaluation stored, but times, versions and ids."""
    ctx = c.contexts[context_id]
    return {
        "status": ctx.status, "labels": ctx.labels, "external_task_id": ctx.external_task_id,
        "command_count": ctx.command_count, "failed_commands": ctx.failed_commands,
        "commands": [(r.seq, r.command, r.exit_code, r.output_digest) for r in ctx.commands()],
        "totals": c.conversations[context_id].totals(),
        "messages": [(m.seq, m.role, m.text, m.tokens)
                     for m in c.conversations[context_id].messages()],
    }


def test_killed_mid_evaluation_resumes_from_the_coordinator(server: CoordinatorProcess,
                                                            tmp_path: Path) -> None:
    reference = finish(start(server, tmp_path, "eval-ref"))
    assert "completed score 1.0000 command_count 5 failed 1 step_count 6 messages 13" in reference

    c = Coordinator(server.target)
    kills: List[Optional[str]] = []
    # Each run stops after its N-th stored change and is killed there with kill -9:
    #   1: the context is made, the agent under test has not seen the task;
    #   3: a command is recorded, its output has not reached the agent under test;
    #   2: the agent's next command is stored, the green agent has not run it;
    #  13: the submission is scored, the agent under test has not seen the score.
    for pause_after in (1, 3, 2, 13):
        run = start(server, tmp_path, "eval-1", pause_after)
        run.wait_for(f"paused after change {pause_after}", stdout=True)
        run.kill()
        kills.append(run.out[-2])  # the last change it made
    assert kills[0].startswith("green: new task uaf-list-remove in context eval-1")
    assert kills[1] == "green: command #1 exit 0 (command_count 1, failed 0)"
    assert kills[2].startswith("purple: message 4 agent: 'execute: cat no-such-file.txt'")
    assert kills[3] == "green: scored 1.0000"

    # What the killed runs stored is in the coordinator, not in a process.
    assert c.contexts["eval-1"].command_count == 5
    assert c.contexts["eval-1"].status == "completed"
    totals = c.conversations["eval-1"].totals()
    assert (totals.message_count, totals.step_count) == (12, 6)

    last = start(server, tmp_path, "eval-1")
    done = finish(last)
    assert "green: context eval-1 exists (command_count 5): resuming" in last.out
    assert "purple: resuming after message 12 (step 6)" in last.out
    assert done == reference.replace("eval-ref", "eval-1")
    assert state(c, "eval-1") == state(c, "eval-ref")

    # A finished evaluation run again changes nothing.
    again = start(server, tmp_path, "eval-1")
    assert finish(again) == done
    assert not [line for line in again.out if line.startswith(("green: command", "purple: message"))]
    assert state(c, "eval-1") == state(c, "eval-ref")
    c.close()

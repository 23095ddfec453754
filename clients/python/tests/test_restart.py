"""The coordinator restarted under the client: calls retry UNAVAILABLE within their timeout, and
every acknowledged write is there afterwards."""

from __future__ import annotations

import threading
from typing import Iterator, List

import pytest

from coordinator_client import Coordinator, Unavailable
from coordinator_client.testing import CoordinatorProcess


@pytest.fixture
def own_server() -> Iterator[CoordinatorProcess]:
    # A SIGTERM'd coordinator waits out its whole grace period (default 5 s) while a Python
    # client keeps a connection that has carried calls (C++ clients do not keep it waiting);
    # one second keeps the test short. Calls still running at its end are cancelled, and the
    # client retries those too.
    with CoordinatorProcess(args=["--shutdown_grace_seconds=1"]) as server:
        yield server


class Writers:
    """Two threads writing as fast as they can: commands to a context and messages to its
    conversation, each counting what was acknowledged."""

    def __init__(self, c: Coordinator, context_id: str) -> None:
        self.ctx = c.contexts.create(context_id)
        self.conv = c.conversations[context_id]
        self.commands = 0
        self.messages = 0
        self.errors: List[BaseException] = []
        self.progress = threading.Condition()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(kind,))
                        for kind in ("commands", "messages")]
        for thread in self.threads:
            thread.start()

    def _run(self, kind: str) -> None:
        try:
            while not self.stopping.is_set():
                if kind == "commands":
                    self.ctx.record_command("make", exit_code=self.commands % 2)
                else:
                    self.conv.append("agent", "execute: make", tokens=2)
                with self.progress:
                    setattr(self, kind, getattr(self, kind) + 1)
                    self.progress.notify_all()
        except BaseException as error:  # reported by stop()
            self.errors.append(error)
            with self.progress:
                self.progress.notify_all()

    def wait_for(self, at_least: int) -> None:
        """Until both writers have this many acknowledged writes."""
        with self.progress:
            assert self.progress.wait_for(
                lambda: self.errors or min(self.commands, self.messages) >= at_least, 60)
        assert not self.errors, self.errors

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join()
        assert not self.errors, self.errors


def test_restart_under_the_client_loses_nothing(own_server: CoordinatorProcess) -> None:
    with Coordinator(own_server.target, timeout=30) as c:
        writers = Writers(c, "restart-1")
        for round_ in range(1, 3):
            writers.wait_for(20 * round_)
            own_server.restart()  # SIGTERM: drain, close; then start on the same port
        writers.wait_for(60)
        writers.stop()
        ctx = c.contexts["restart-1"]
        assert ctx.command_count == writers.commands
        assert ctx.failed_commands == writers.commands // 2
        assert len(list(ctx.commands())) == writers.commands
        assert c.conversations["restart-1"].totals() == (writers.messages, 2 * writers.messages)


def test_kill_9_under_the_client_loses_no_acknowledged_write(
        own_server: CoordinatorProcess) -> None:
    with Coordinator(own_server.target, timeout=30) as c:
        writers = Writers(c, "crash-1")
        writers.wait_for(20)
        own_server.kill()
        own_server.start()
        writers.wait_for(40)
        writers.stop()
        # A write in flight at the kill may have landed before its answer was lost, and then
        # been sent again: its request id makes the retry count once.
        count = c.contexts["crash-1"].command_count
        assert count == writers.commands
        steps, _ = c.conversations["crash-1"].totals()
        assert steps == writers.messages


def test_a_call_waits_for_a_coordinator_that_comes_back(own_server: CoordinatorProcess) -> None:
    with Coordinator(own_server.target, timeout=30) as c:
        c.contexts.create("waiting")
        own_server.stop()
        result: List[object] = []
        call = threading.Thread(target=lambda: result.append(c.contexts["waiting"].version))
        call.start()  # retried while the coordinator is down
        own_server.start()
        call.join()
        assert result == [1]


def test_unavailable_after_the_timeout(own_server: CoordinatorProcess) -> None:
    own_server.stop()
    with Coordinator(own_server.target, timeout=0.5) as c:
        with pytest.raises(Unavailable) as error:
            c.contexts.get("anything")
        assert "tried" in error.value.message
        assert error.value.method == "ContextService.GetContext"


def test_a_claimed_item_outlives_a_restart(own_server: CoordinatorProcess) -> None:
    """The lease is stored: the block's checkpoint and completion after a restart land."""
    with Coordinator(own_server.target, timeout=30) as c:
        c.work.create_run([{"id": "a"}], run_id="restart-run")
        with c.work.claim("restart-run", worker="w1", ttl=30) as item:
            own_server.restart()
            item.checkpoint("after the restart")
            item.summary = "done across a restart"
        assert not item.lost
        done = c.work.item("restart-run", "a")
        assert (done.status, done.checkpoint, done.summary, done.attempts) == (
            "done", "after the restart", "done across a restart", 1)

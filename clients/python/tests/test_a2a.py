"""A2A through the gateway, to a real agent (echo_agent registered as "green")."""

from __future__ import annotations

import threading
from typing import List

import pytest

from coordinator_client import A2ATask, Coordinator, NotFound


def test_send_and_wait(c: Coordinator, green_agent: str, uid: str) -> None:
    task = c.a2a.send(green_agent, "Task ID: uaf-list-remove", wait=True, context_id=uid)
    assert isinstance(task, A2ATask)
    assert task.state == "completed" and task.done
    assert task.context_id == uid
    assert "Task ID: uaf-list-remove" in task.text
    assert task.history[0].text == "Task ID: uaf-list-remove"
    assert c.a2a.get(task.id).state == "completed"
    assert [t.id for t in c.a2a.tasks(context_id=uid)] == [task.id]


def test_send_then_wait(c: Coordinator, green_agent: str) -> None:
    task = c.a2a.send(green_agent, "hello", data={"exec_seq": 1})
    assert task.state in ("submitted", "working", "completed")
    done = c.a2a.wait(task.id, timeout=30)
    assert done.state == "completed" and done.id == task.id
    # A task that has ended already is answered at once.
    assert c.a2a.wait(task.id).state == "completed"


def test_unknown_agent_and_task(c: Coordinator, green_agent: str, uid: str) -> None:
    assert green_agent in c.agents
    assert c.agents[green_agent].endpoint
    assert green_agent in list(c.agents)
    with pytest.raises(NotFound):
        c.a2a.send(f"{uid}-nobody", "hi")
    with pytest.raises(KeyError):
        c.a2a.get(f"{uid}-no-such-task")


def test_register_and_remove_an_agent(c: Coordinator, uid: str) -> None:
    agent = c.agents.register(uid, "127.0.0.1:1", description="nobody home")
    assert (agent.name, agent.endpoint, agent.description) == (uid, "127.0.0.1:1", "nobody home")
    assert uid in c.agents
    del c.agents[uid]
    assert c.agents.get(uid) is None


def test_wait_gives_up_at_its_timeout_and_cancel(c: Coordinator, uid: str) -> None:
    c.agents.register(uid, "127.0.0.1:1")  # nobody listens: the delivery keeps being retried
    task = c.a2a.send(uid, "anyone there?")
    with pytest.raises(TimeoutError):  # DeadlineExceeded
        c.a2a.wait(task.id, timeout=0.3)
    assert c.a2a.get(task.id).state in ("submitted", "working")
    assert c.a2a.cancel(task.id).state == "canceled"
    assert c.a2a.wait(task.id).state == "canceled"
    del c.agents[uid]


def test_wait_follows_the_task_across_a_coordinator_restart(uid: str) -> None:
    """A2A.wait subscribes again after the coordinator restarts under it (README, "A2A")."""
    from coordinator_client.testing import CoordinatorProcess

    with CoordinatorProcess(args=["--shutdown_grace_seconds=1"]) as server:
        with Coordinator(server.target, timeout=30) as c:
            c.agents.register(uid, "127.0.0.1:1")  # nobody listens: the task stays open
            task = c.a2a.send(uid, "anyone there?")
            subscribed = threading.Semaphore(0)
            real = c.a2a._stub.SubscribeToTask

            def counting(request, **kwargs):  # type: ignore[no-untyped-def]
                stream = real(request, **kwargs)
                subscribed.release()
                return stream

            c.a2a._stub.SubscribeToTask = counting
            result: List[object] = []

            def wait() -> None:
                try:
                    result.append(c.a2a.wait(task.id, timeout=60))
                except BaseException as error:  # reported below
                    result.append(error)

            waiter = threading.Thread(target=wait)
            waiter.start()
            subscribed.acquire()
            server.restart()
            subscribed.acquire()  # subscribed again, after the first stream ended
            with Coordinator(server.target) as other:
                assert other.a2a.cancel(task.id).state == "canceled"
            waiter.join()
            assert isinstance(result[0], A2ATask), result
            assert (result[0].id, result[0].state) == (task.id, "canceled")

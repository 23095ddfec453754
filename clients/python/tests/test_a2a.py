"""A2A through the gateway, to a real agent (echo_agent registered as "green")."""

from __future__ import annotations

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

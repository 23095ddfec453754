"""Contexts: the dict-like mapping, record_command, update with read-version-retry, paging."""

from __future__ import annotations

import datetime
import threading

import pytest

from coordinator_client import (
    AlreadyExists,
    Conflict,
    Context,
    ContextStatus,
    Coordinator,
    NotFound,
)


def test_create_read_and_mapping_access(c: Coordinator, uid: str) -> None:
    ctx = c.contexts.create(f"{uid}-eval-1", agent="green", workspace_dir="/ws/eval-1",
                            labels={"arvo_id": "14368"})
    assert isinstance(ctx, Context)
    assert ctx.context_id == f"{uid}-eval-1"
    assert ctx.workspace_dir == "/ws/eval-1"
    assert ctx.labels["arvo_id"] == "14368"
    assert ctx.status == ContextStatus.ACTIVE and ctx.status == "active"
    assert (ctx.command_count, ctx.failed_commands, ctx.version) == (0, 0, 1)
    assert isinstance(ctx.create_time, datetime.datetime) and ctx.create_time.tzinfo

    assert f"{uid}-eval-1" in c.contexts
    assert f"{uid}-nope" not in c.contexts
    assert c.contexts[f"{uid}-eval-1"].labels == {"arvo_id": "14368"}
    assert c.contexts.get(f"{uid}-nope") is None
    with pytest.raises(KeyError):
        c.contexts[f"{uid}-nope"]
    with pytest.raises(NotFound) as missing:
        c.contexts[f"{uid}-nope"]
    assert missing.value.code.name == "NOT_FOUND"
    assert f"{uid}-nope" in missing.value.message
    with pytest.raises(AlreadyExists):
        c.contexts.create(f"{uid}-eval-1")


def test_record_command_returns_the_updated_context(c: Coordinator, uid: str) -> None:
    ctx = c.contexts.create(uid, agent="green")
    same = ctx.record_command("make -C /ws", exit_code=2, duration=1.5)
    assert same is ctx
    assert (ctx.command_count, ctx.failed_commands, ctx.version) == (1, 1, 2)
    ctx.record_command("ls", duration=datetime.timedelta(milliseconds=250),
                       output_digest="sha256:00")
    assert (ctx.command_count, ctx.failed_commands) == (2, 1)
    records = list(ctx.commands())
    assert [(r.seq, r.command, r.exit_code, r.duration) for r in records] == [
        (1, "make -C /ws", 2, 1.5), (2, "ls", 0, 0.25)]
    assert records[1].output_digest == "sha256:00"
    assert list(ctx.commands(page_size=1)) == records  # one page per record
    # Another client sees the same counts.
    assert c.contexts[uid].command_count == 2


def test_update_merges_labels_and_sets_fields(c: Coordinator, uid: str) -> None:
    ctx = c.contexts.create(uid, agent="green", labels={"arvo_id": "14368", "phase": "prep"})
    ctx.update(status="completed", labels={"score": "0.8", "phase": None})
    assert ctx.status == ContextStatus.COMPLETED
    assert ctx.labels == {"arvo_id": "14368", "score": "0.8"}
    assert ctx.version == 2
    ctx.update(labels={"only": "this"}, replace_labels=True, environment_handle="arvo-1")
    assert dict(c.contexts[uid].labels) == {"only": "this"}
    assert c.contexts[uid].environment_handle == "arvo-1"
    assert ctx.update() is ctx and ctx.version == 3  # nothing to change: no call


def test_update_from_a_stale_copy_retries_on_conflict(c: Coordinator, uid: str) -> None:
    first = c.contexts.create(uid, labels={"a": "1"})
    second = c.contexts[uid]
    first.update(labels={"b": "2"})
    second.update(labels={"c": "3"})  # at version 1 while the context is at 2
    assert c.contexts[uid].labels == {"a": "1", "b": "2", "c": "3"}
    assert second.version == 3
    # The raw conflict is there for callers that want it.
    with pytest.raises(Conflict):
        c.contexts.delete(uid, version=1)


def test_concurrent_updates_from_threads_lose_nothing(c: Coordinator, uid: str) -> None:
    c.contexts.create(uid)
    writers = 16
    # Every thread starts from the same version, so all but one conflict at first.
    copies = [c.contexts[uid] for _ in range(writers)]
    start = threading.Barrier(writers)
    errors = []

    def write(i: int) -> None:
        try:
            start.wait()
            for round_ in range(3):
                copies[i].update(labels={f"w{i}-{round_}": str(i)})
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    final = c.contexts[uid]
    assert final.labels == {f"w{i}-{r}": str(i) for i in range(writers) for r in range(3)}
    assert final.version == 1 + writers * 3


def test_values_pages_transparently(c: Coordinator, uid: str) -> None:
    agent = f"{uid}-agent"
    ids = [f"{uid}-{n:02d}" for n in range(7)]
    for n, context_id in enumerate(ids):
        c.contexts.create(context_id, agent=agent, status="completed" if n % 3 == 0 else None)
    calls = []
    stub = c.contexts._stub
    real = stub.ListContexts

    def counting(request, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(request.page_token)
        return real(request, **kwargs)

    stub.ListContexts = counting
    try:
        listed = [ctx.context_id for ctx in c.contexts.values(agent=agent, page_size=3)]
    finally:
        stub.ListContexts = real
    assert listed == ids
    assert len(calls) == 3 and calls[0] == "" and all(calls[1:])
    active = [ctx.context_id for ctx in c.contexts.values(agent=agent, status="active",
                                                           page_size=2)]
    assert active == [i for n, i in enumerate(ids) if n % 3 != 0]
    assert set(ids) <= set(c.contexts)
    assert dict(c.contexts.items(agent=agent))[ids[0]].status == "completed"
    assert len(c.contexts) >= 7


def test_delete(c: Coordinator, uid: str) -> None:
    ctx = c.contexts.create(uid)
    c.conversations[uid].append("user", "hello")
    del c.contexts[uid]
    assert uid not in c.contexts
    assert uid not in c.conversations  # the conversation went with it
    with pytest.raises(KeyError):
        del c.contexts[uid]
    with pytest.raises(NotFound):
        ctx.refresh()
    c.contexts.create(uid)
    ctx.delete()
    assert c.contexts.get(uid) is None

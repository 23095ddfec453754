"""Work runs: claim as a context manager (heartbeats, complete on exit, fail on exception),
lost leases, nothing to claim."""

from __future__ import annotations

import datetime
from typing import List

import pytest

from coordinator_client import (
    ClaimedItem,
    Coordinator,
    FailedPrecondition,
    InvalidArgument,
    NothingToClaim,
)


def make_run(c: Coordinator, uid: str, n: int = 2, **policy: object) -> str:
    items = [{"id": f"item-{i}", "title": f"Item {i}", "level": i} for i in range(n)]
    return c.work.create_run(items, run_id=uid, **policy).run_id  # type: ignore[arg-type]


def test_claim_completes_on_exit(c: Coordinator, uid: str) -> None:
    run_id = make_run(c, uid)
    assert c.work.run(run_id).status == "planning"
    with c.work.claim(run_id, worker="w1", ttl=30) as item:
        assert isinstance(item, ClaimedItem)
        assert (item.item_id, item.item.title, item.epoch) == ("item-0", "Item 0", 1)
        assert c.work.item(run_id, "item-0").status == "running"
        item.checkpoint("half way")
        item.summary = "merged"
    done = c.work.item(run_id, "item-0")
    assert (done.status, done.summary, done.checkpoint) == ("done", "merged", "half way")
    with c.work.claim(run_id, worker="w2") as item:
        assert item.item_id == "item-1"
    run = c.work.run(run_id)
    assert (run.status, run.counts.done, run.counts.total) == ("completed", 2, 2)
    with pytest.raises(NothingToClaim) as nothing:
        c.work.claim(run_id, worker="w1")
    assert nothing.value.stalled
    assert c.work.try_claim(run_id, worker="w1") is None


def test_claim_fails_the_item_on_exception(c: Coordinator, uid: str) -> None:
    run_id = make_run(c, uid, 1, max_attempts=2, backoff_base=0.05)
    with pytest.raises(RuntimeError, match="compiler exploded"):
        with c.work.claim(run_id, worker="w1"):
            raise RuntimeError("compiler exploded")
    item = c.work.item(run_id, "item-0")
    assert item.status == "pending" and item.last_error == "RuntimeError: compiler exploded"
    # In backoff now; claim(wait=...) waits for it.
    with c.work.claim(run_id, worker="w1", wait=10) as again:
        assert again.item.attempts == 2 and again.epoch == 2
        again.fail("still broken", retryable=False)
    assert c.work.item(run_id, "item-0").status == "failed"
    assert c.work.run(run_id).status == "failed"


def test_heartbeats_keep_the_lease_past_its_ttl(c: Coordinator, uid: str) -> None:
    run_id = make_run(c, uid, 1)
    # Heartbeats every third of the lease; the reaper (every 0.1 s here) would take the item
    # back as soon as one lease length passed without one.
    with c.work.claim(run_id, worker="w1", ttl=1.0) as item:
        item.progress = "compiling"
        first_expiry = item.lease_expire_time
        assert first_expiry is not None
        # Outlive the first lease by another length; the background heartbeats extend it.
        while datetime.datetime.now(datetime.timezone.utc) < first_expiry + \
                datetime.timedelta(seconds=1.0):
            seen = c.work.item(run_id, item.item_id)
            assert seen.status == "running" and seen.worker_id == "w1"
        assert seen.progress == "compiling"
        assert not item.lost
    assert c.work.item(run_id, "item-0").status == "done"


def test_a_lost_lease_is_refused(c: Coordinator, uid: str) -> None:
    run_id = make_run(c, uid, 1)
    stale = c.work.try_claim(run_id, worker="w1", ttl=0.2)  # no heartbeats
    assert stale is not None
    taken: List[ClaimedItem] = []
    # The reaper (every 0.1 s here) takes the item back once the lease expires.
    taken.append(c.work.claim(run_id, worker="w2", wait=10))
    assert taken[0].epoch == 2
    with pytest.raises(FailedPrecondition):
        stale.complete()
    assert stale.lost
    taken[0].complete("w2 did it")
    assert c.work.item(run_id, "item-0").summary == "w2 did it"


def test_task_graph_and_bad_graphs(c: Coordinator, uid: str) -> None:
    graph = {"feature": "wm", "tasks": [
        {"id": "WM-001", "title": "models", "level": 1, "files": {"create": ["a.py"]}},
        {"id": "WM-002", "title": "api", "level": 2, "dependencies": ["WM-001"]}]}
    run = c.work.import_task_graph(graph, run_id=uid)
    assert (run.kind, run.feature, run.counts.total) == ("task_graph", "wm", 2)
    assert [i.item_id for i in c.work.items(uid)] == ["WM-001", "WM-002"]
    assert any(r.run_id == uid for r in c.work.runs())
    bad = {"tasks": [{"id": "A", "level": 1, "dependencies": ["nope"]}]}
    with pytest.raises(InvalidArgument, match="unknown task nope"):
        c.work.import_task_graph(bad, run_id=f"{uid}-bad")
    with pytest.raises(KeyError):
        c.work.run(f"{uid}-bad")  # nothing was written

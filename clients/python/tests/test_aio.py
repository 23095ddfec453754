"""coordinator_client.aio: the same calls as coroutines, on grpc.aio."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from coordinator_client import ContextStatus, NothingToClaim, NotFound, Totals
from coordinator_client import aio
from coordinator_client.testing import CoordinatorProcess


def run(coroutine):  # type: ignore[no-untyped-def]
    return asyncio.run(asyncio.wait_for(coroutine, 60))


def test_contexts_and_conversations(server: CoordinatorProcess, uid: str) -> None:
    async def main() -> None:
        async with aio.Coordinator(server.target) as c:
            ctx = await c.contexts.create(uid, agent="green", workspace_dir="/ws/eval-1",
                                          labels={"arvo_id": "14368"})
            assert (ctx.workspace_dir, ctx.labels["arvo_id"], ctx.version) == (
                "/ws/eval-1", "14368", 1)
            assert await c.contexts.contains(uid)
            assert not await c.contexts.contains(f"{uid}-x")
            assert await c.contexts.get(f"{uid}-x") is None
            with pytest.raises(KeyError):
                await c.contexts[f"{uid}-x"]
            same = await c.contexts[uid]
            assert same.context_id == uid
            await ctx.record_command("make -C /ws", exit_code=2, duration=1.5)
            assert (ctx.command_count, ctx.failed_commands) == (1, 1)
            assert [r.command for r in await ctx.commands()] == ["make -C /ws"]
            # Concurrent read-modify-writes from one stale version: none is lost.
            copies = [await c.contexts[uid] for _ in range(8)]
            await asyncio.gather(*(copy.update(labels={f"k{i}": "v"})
                                   for i, copy in enumerate(copies)))
            await ctx.update(status="completed", labels={"score": "0.8"})
            assert ctx.status == ContextStatus.COMPLETED
            assert ctx.labels == {"arvo_id": "14368", "score": "0.8",
                                  **{f"k{i}": "v" for i in range(8)}}
            for n in range(4):
                await c.contexts.create(f"{uid}-{n}", agent=f"{uid}-agent")
            listed = [x.context_id async for x in c.contexts.values(agent=f"{uid}-agent",
                                                                      page_size=3)]
            assert listed == [f"{uid}-{n}" for n in range(4)]
            assert [k async for k, x in c.contexts.items(agent=f"{uid}-agent")] == listed
            assert uid in [k async for k in c.contexts]
            assert await c.contexts.count() >= 5

            conv = c.conversations[uid]
            assert await conv.append("agent", "execute: ls", tokens=12) == Totals(1, 12)
            assert await conv.append("user", "a.c b.c", tokens=3) == (1, 15)  # a user message: no step
            assert [m.text for m in await conv.messages(tail=1)] == ["a.c b.c"]
            assert [m.seq async for m in conv] == [1, 2]
            assert await c.conversations.contains(uid)
            await c.contexts.delete(uid)
            assert not await c.conversations.contains(uid)
            with pytest.raises(NotFound):
                await ctx.refresh()
    run(main())


def test_tasks_breaker_work_and_a2a(server: CoordinatorProcess, green_agent: str,
                                    uid: str) -> None:
    async def main() -> None:
        async with aio.Coordinator(server.target, timeout=10) as c:
            description = f"Generate database migration {uid}"
            t = await c.tasks.init(description)
            assert t.id == hashlib.sha256(description.encode()).hexdigest()[:8]
            assert await t.attempt() == 1
            await t.fail("Timeout after 30s")
            assert await c.breaker.check(t.id) is None
            assert await t.escalate("timeout") == 2
            assert await t.tier == 2 and await t.model == "gpt-5.1"
            assert "Timeout after 30s" in await t.failure_context()
            await t.attempt()
            await t.fail("Timeout after 30s")
            assert await c.breaker.check(t.id) == "repeated_error"
            assert (await c.breaker.force_escalate(t.id, "loop")).to_tier == 4
            await c.breaker.break_task(t.id, "reason")
            assert t.id in [b.task_id for b in await c.breaker.status()]
            assert (await t.state()).blocked

            await c.work.create_run([{"id": "a"}, {"id": "b"}], run_id=uid, backoff_base=0.05)
            async with c.work.claim(uid, worker="w1", ttl=30) as item:
                assert item.item_id == "a"
                await item.checkpoint("noted")
            with pytest.raises(ValueError):
                async with c.work.claim(uid, worker="w1") as item:
                    raise ValueError("bad")
            failed = await c.work.item(uid, "b")
            assert (failed.status, failed.last_error) == ("pending", "ValueError: bad")
            claimed = await c.work.claim(uid, worker="w2", wait=30)
            await claimed.complete()
            assert (await c.work.run(uid)).status == "completed"
            with pytest.raises(NothingToClaim):
                await c.work.claim(uid, worker="w1")

            task = await c.a2a.send(green_agent, "Task ID: uaf-list-remove", wait=True)
            assert task.state == "completed" and "uaf-list-remove" in task.text
            assert await c.health() == "SERVING"
    run(main())

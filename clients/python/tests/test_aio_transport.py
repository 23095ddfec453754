"""coordinator_client.aio's own transport (grpc.aio, not the blocking client's channel): the
coordinator restarted under it, bearer tokens, TLS, and bad input refused before anything is
sent. test_restart.py and test_auth_tls.py prove the same of the blocking client."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Iterator

import pytest

from coordinator_client import (
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    aio,
)
from coordinator_client.testing import CoordinatorProcess
from test_auth_tls import make_certificate


def run(coroutine):  # type: ignore[no-untyped-def]
    return asyncio.run(asyncio.wait_for(coroutine, 120))


@pytest.fixture
def own_server() -> Iterator[CoordinatorProcess]:
    # As in test_restart.py: a short grace period keeps a SIGTERM'd coordinator from waiting
    # five seconds on the client's open connection.
    with CoordinatorProcess(args=["--shutdown_grace_seconds=1"]) as server:
        yield server


def test_restart_under_the_aio_client_loses_nothing(own_server: CoordinatorProcess) -> None:
    """Writers keep going through a SIGTERM restart and a kill -9; every acknowledged write is
    there afterwards."""

    async def main() -> None:
        async with aio.Coordinator(own_server.target, timeout=30) as c:
            ctx = await c.contexts.create("aio-restart")
            conv = c.conversations["aio-restart"]
            acked = {"commands": 0, "messages": 0}
            stop = asyncio.Event()

            async def commands() -> None:
                while not stop.is_set():
                    await ctx.record_command("make", exit_code=acked["commands"] % 2)
                    acked["commands"] += 1

            async def messages() -> None:
                while not stop.is_set():
                    await conv.append("agent", "execute: make", tokens=2)
                    acked["messages"] += 1

            async def until(at_least: int) -> None:
                while min(acked.values()) < at_least:
                    await asyncio.sleep(0.01)

            writers = [asyncio.ensure_future(commands()), asyncio.ensure_future(messages())]
            loop = asyncio.get_running_loop()
            await until(20)
            # The process calls block (they wait for the log): off the event loop.
            await loop.run_in_executor(None, own_server.restart)
            await until(40)
            before_kill = dict(acked)
            await loop.run_in_executor(None, own_server.kill)
            await loop.run_in_executor(None, own_server.start)
            await until(60)
            stop.set()
            await asyncio.gather(*writers)  # re-raises a writer's error

            assert min(before_kill.values()) >= 40
            fresh = await c.contexts["aio-restart"]
            # A write in flight at the kill may have landed and been sent again: its request id
            # makes it count once (README, "Retries").
            assert fresh.command_count == acked["commands"]
            assert len(await fresh.commands(page_size=7)) == fresh.command_count
            steps, tokens = await conv.totals()
            assert steps == acked["messages"] and tokens == 2 * steps

    run(main())


def test_aio_call_waits_for_a_coordinator_that_comes_back(
        own_server: CoordinatorProcess) -> None:
    async def main() -> None:
        async with aio.Coordinator(own_server.target, timeout=30) as c:
            await c.contexts.create("aio-waiting")
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, own_server.stop)
            read = asyncio.ensure_future(c.contexts["aio-waiting"])  # retried while it is down
            await loop.run_in_executor(None, own_server.start)
            assert (await read).version == 1
            await loop.run_in_executor(None, own_server.stop)
        async with aio.Coordinator(own_server.target, timeout=0.5) as c:
            with pytest.raises(Unavailable) as error:
                await c.contexts.get("aio-waiting")
            assert "tried" in error.value.message
            assert error.value.method == "ContextService.GetContext"

    run(main())


def test_aio_tokens(tmp_path: Path, uid: str) -> None:
    tokens = {p: secrets.token_hex(32) for p in ("ops", "green", "dash")}
    roles = {"ops": "admin", "green": "agent", "dash": "reader"}
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": [
        {"token": tokens[p], "principal": p, "role": roles[p]} for p in tokens]}))
    path.chmod(0o600)
    token_file = tmp_path / "green.token"
    token_file.write_text(f"{tokens['green']}\n")

    async def main(server: CoordinatorProcess) -> None:
        async with aio.Coordinator(server.target) as anonymous:
            assert await anonymous.health() == "SERVING"
            with pytest.raises(Unauthenticated):
                await anonymous.contexts.get(uid)
        async with aio.Coordinator(server.target, token_file=token_file) as green:
            ctx = await green.contexts.create(uid)
            assert ctx.agent == "green"
            await ctx.record_command("ls")
        async with aio.Coordinator(server.target, token=tokens["dash"]) as reader:
            ctx = await reader.contexts[uid]
            with pytest.raises(PermissionDenied):
                await ctx.record_command("rm -rf /")
        async with aio.Coordinator(server.target, token=tokens["ops"]) as admin:
            assert (await admin.contexts[uid]).command_count == 1

    with CoordinatorProcess(args=[f"--token_file={path}"]) as server:
        run(main(server))


def test_aio_tls(tmp_path: Path, uid: str) -> None:
    cert, key = make_certificate(tmp_path, "server")
    other, _ = make_certificate(tmp_path, "other")

    async def main(server: CoordinatorProcess) -> None:
        async with aio.Coordinator(server.target, tls_ca=cert) as c:
            await c.contexts.create(uid, labels={"over": "tls"})
        async with aio.Coordinator(f"localhost:{server.port}", tls_ca=cert.read_bytes()) as c:
            assert (await c.contexts[uid]).labels == {"over": "tls"}
        async with aio.Coordinator(server.target, timeout=0.5) as plain:
            with pytest.raises(Unavailable):
                await plain.contexts.get(uid)
        async with aio.Coordinator(server.target, tls_ca=other, timeout=0.5) as untrusting:
            with pytest.raises(Unavailable):
                await untrusting.contexts.get(uid)

    with CoordinatorProcess(args=[f"--tls_cert_file={cert}", f"--tls_key_file={key}"]) as server:
        run(main(server))


def test_aio_bad_input_writes_nothing(server: CoordinatorProcess, uid: str) -> None:
    async def main() -> None:
        async with aio.Coordinator(server.target) as c:
            with pytest.raises(TypeError, match="label 'arvo_id' must be a str, not int"):
                await c.contexts.create(uid, labels={"arvo_id": 14368})  # type: ignore[dict-item]
            assert not await c.contexts.contains(uid)
            ctx = await c.contexts.create(uid)
            with pytest.raises(TypeError, match="exit_code must be an int, not str"):
                await ctx.record_command("make", exit_code="2")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="tokens must be an int, not float"):
                await c.conversations[uid].append("agent", "x", tokens=1.5)  # type: ignore
            with pytest.raises(ValueError, match="status must be one of"):
                await ctx.update(status="done")
            with pytest.raises(KeyError):
                await c.contexts[f"{uid}-missing"]
            with pytest.raises(ResourceExhausted, match="max_message_bytes"):
                await c.conversations[uid].append("agent", "x" * ((1 << 20) + 1))
            assert (await c.contexts[uid]).version == 1
            assert not await c.conversations.contains(uid)

    run(main())

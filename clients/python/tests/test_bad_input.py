"""Bad input: wrong types and impossible values are Python errors raised before anything is
sent; what only the server can judge (sizes, id syntax) is its status as an exception; either
way nothing is written."""

from __future__ import annotations

import datetime
import pickle

import grpc
import pytest

from coordinator_client import (
    Coordinator,
    CoordinatorError,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)

MIB = 1 << 20


def test_wrong_types_are_type_errors_and_write_nothing(c: Coordinator, uid: str) -> None:
    with pytest.raises(TypeError, match="context_id must be a str, not int"):
        c.contexts.create(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="label 'arvo_id' must be a str, not int"):
        c.contexts.create(uid, labels={"arvo_id": 14368})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="labels must be a mapping"):
        c.contexts.create(uid, labels=["a"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        c.contexts.create(uid, workspace_dir=b"/ws")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        c.contexts.create(uid, color="red")  # type: ignore[call-arg]
    assert uid not in c.contexts

    ctx = c.contexts.create(uid)
    with pytest.raises(TypeError, match="exit_code must be an int, not str"):
        ctx.record_command("make", exit_code="2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="exit_code must be an int, not bool"):
        ctx.record_command("make", exit_code=True)
    with pytest.raises(TypeError, match="duration must be seconds"):
        ctx.record_command("make", duration="1.5s")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="command must be a str"):
        ctx.record_command(["make", "-C", "/ws"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ctx.update(labels={"score": 0.8})  # type: ignore[dict-item]
    conv = c.conversations[uid]
    with pytest.raises(TypeError, match="tokens must be an int, not float"):
        conv.append("agent", "execute: ls", tokens=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a str, not NoneType"):
        conv.append("agent", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        c.tasks.init(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Coordinator(None)  # type: ignore[arg-type]
    assert c.contexts[uid].version == 1 and uid not in c.conversations


def test_impossible_values_are_value_errors(c: Coordinator, uid: str) -> None:
    ctx = c.contexts.create(uid)
    with pytest.raises(ValueError, match="context_id must not be empty"):
        c.contexts[""]
    with pytest.raises(ValueError, match="status must be one of"):
        ctx.update(status="done")
    with pytest.raises(ValueError, match="role must be one of"):
        c.conversations[uid].append("robot", "hi")
    with pytest.raises(ValueError, match="tokens must be between 0 and"):
        c.conversations[uid].append("user", "hi", tokens=-1)
    with pytest.raises(ValueError, match="exit_code must be between"):
        ctx.record_command("make", exit_code=2**40)
    with pytest.raises(ValueError, match=">= 0"):
        ctx.record_command("make", duration=datetime.timedelta(seconds=-1))
    with pytest.raises(ValueError, match="not valid UTF-8"):
        ctx.record_command("make \ud800")
    with pytest.raises(ValueError, match="timeout must be positive"):
        Coordinator("127.0.0.1:1", timeout=0)
    with pytest.raises(ValueError):
        c.tasks.init("")
    with pytest.raises(ValueError):
        c.work.claim(uid, worker="w1", ttl=0)
    assert c.contexts[uid].version == 1 and uid not in c.conversations


def test_what_the_server_refuses_writes_nothing(c: Coordinator, uid: str) -> None:
    ctx = c.contexts.create(uid, labels={"keep": "me"})
    conv = c.conversations[uid]
    conv.append("user", "first")
    with pytest.raises(ResourceExhausted, match="max_message_bytes") as over:
        conv.append("agent", "x" * (MIB + 1))
    assert over.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert over.value.method == "ConversationService.AppendMessage"
    with pytest.raises(ResourceExhausted):  # over --max_request_bytes: refused by gRPC itself
        conv.append("agent", "x" * (5 * MIB))
    with pytest.raises(ResourceExhausted, match="max_command_bytes"):
        ctx.record_command("x" * (64 * 1024 + 1))
    with pytest.raises(ResourceExhausted, match="max_label_value_bytes"):
        ctx.update(labels={"big": "v" * 4097})
    with pytest.raises(ResourceExhausted, match="max_field_bytes"):
        c.contexts.create(f"{uid}-2", workspace_dir="/" * 4097)
    with pytest.raises(InvalidArgument) as bad_id:
        c.contexts.create("x" * 257)
    assert isinstance(bad_id.value, ValueError)  # InvalidArgument is a ValueError too
    with pytest.raises(InvalidArgument):
        c.contexts.create(f"{uid}\n")
    assert conv.totals() == (0, 0) and conv.totals().message_count == 1  # "first" alone
    assert (ctx.refresh().version, ctx.command_count, ctx.labels) == (1, 0, {"keep": "me"})
    assert f"{uid}-2" not in c.contexts


def test_errors_carry_code_message_and_method(c: Coordinator, uid: str) -> None:
    with pytest.raises(NotFound) as missing:
        c.contexts[uid]
    error = missing.value
    assert isinstance(error, CoordinatorError) and isinstance(error, KeyError)
    assert error.code == grpc.StatusCode.NOT_FOUND
    assert error.message == f"context {uid} not found"
    assert error.method == "ContextService.GetContext"
    assert str(error) == f"NOT_FOUND: context {uid} not found (ContextService.GetContext)"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.code, copy.message, copy.method) == (
        NotFound, error.code, error.message, error.method)

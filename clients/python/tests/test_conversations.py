"""Conversations: append's counters, messages with tail, paging, existence."""

from __future__ import annotations

import pytest

from coordinator_client import Coordinator, Message, NotFound, Role, Totals


def test_append_returns_step_count_and_total_tokens(c: Coordinator, uid: str) -> None:
    conv = c.conversations[uid]
    assert uid not in c.conversations
    assert c.conversations.get(uid) is None
    first = conv.append("user", "Find the root cause", tokens=120)
    assert first == (0, 120) and first.message_count == 1  # a user message is not a step
    step_count, total_tokens = conv.append("agent", "execute: ls", tokens=12)
    assert (step_count, total_tokens) == (1, 132)
    totals = conv.append(Role.SYSTEM, "note")
    assert isinstance(totals, Totals) and totals.step_count == 1 and totals.total_tokens == 132
    assert totals.message_count == 3
    assert repr(totals) == "Totals(step_count=1, total_tokens=132, message_count=3)"
    assert uid in c.conversations
    assert conv.totals() == (1, 132) and conv.totals().message_count == 3


def test_messages_tail_and_fields(c: Coordinator, uid: str) -> None:
    conv = c.conversations[uid]
    for n in range(8):
        conv.append("agent" if n % 2 else "user", f"message {n}", tokens=n)
    last = conv.messages(tail=5)
    assert [m.seq for m in last] == [4, 5, 6, 7, 8]
    assert all(isinstance(m, Message) for m in last)
    assert (last[-1].role, last[-1].text, last[-1].tokens) == (Role.AGENT, "message 7", 7)
    assert last[0].role == "agent" and last[1].role == Role.USER
    assert last[-1].time is not None
    assert [m.text for m in conv.messages()] == [f"message {n}" for n in range(8)]


def test_messages_page_transparently(c: Coordinator, uid: str) -> None:
    conv = c.conversations[uid]
    for n in range(11):
        conv.append("user", str(n))
    assert [m.text for m in conv.messages(page_size=3)] == [str(n) for n in range(11)]
    assert [m.seq for m in conv.messages(tail=7, page_size=2)] == list(range(5, 12))
    assert [m.text for m in conv] == [str(n) for n in range(11)]


def test_reading_a_conversation_without_messages_is_not_found(c: Coordinator, uid: str) -> None:
    with pytest.raises(NotFound):
        c.conversations[uid].messages()
    with pytest.raises(KeyError):
        c.conversations[uid].totals()


def test_context_conversation_is_the_same(c: Coordinator, uid: str) -> None:
    ctx = c.contexts.create(uid)
    ctx.conversation.append("user", "hi", tokens=2)
    assert c.conversations[uid].messages()[0].text == "hi"

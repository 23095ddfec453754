"""Retry state (tasks) and the loop breaker, as the ARIA scripts use them."""

from __future__ import annotations

import hashlib

import pytest

from coordinator_client import (
    AlreadyExists,
    Coordinator,
    FailedPrecondition,
    ForceEscalation,
    NotFound,
    TaskFailure,
    task_id_of,
)


def test_task_lifecycle(c: Coordinator, uid: str) -> None:
    description = f"Generate database migration {uid}"
    t = c.tasks.init(description)
    assert t.id == hashlib.sha256(description.encode()).hexdigest()[:8]
    assert t.id == c.tasks.id_for(description) == task_id_of(description)
    assert t.created is True
    assert c.tasks.init(description).created is False
    assert t.id in c.tasks and c.tasks[t.id].id == t.id
    assert (t.tier, t.model) == (1, "codex-mini")

    assert t.attempt() == 1
    failure = t.fail("Timeout after 30s")
    assert isinstance(failure, TaskFailure)
    assert (failure.seq, failure.attempt, failure.model, failure.tier) == (1, 1, "codex-mini", 1)
    assert t.failure_context() == ("Previous failures:\n"
                                   "  Attempt 1 (model: codex-mini): Timeout after 30s\n")
    assert t.escalate("timeout") == 2
    assert t.tier == 2
    assert t.escalate("big jump", steps=10) == 7  # capped at the top of the ladder
    assert t.attempt() == 2
    t.quality_gate("lint", False, "line 45")
    assert t.set("custom_tag", "high_priority") == "high_priority"
    assert t.get("custom_tag") == "high_priority"
    assert t.get("attempt_count") == "2"

    state = t.state()
    assert (state.task_id, state.description, state.attempt_count, state.model_tier) == (
        t.id, description, 2, 7)
    assert [e.reason for e in state.escalation_log] == ["timeout", "big jump"]
    assert state.quality_gate_results[0].check == "lint"
    assert state.custom_fields == {"custom_tag": "high_priority"}
    assert any(s.task_id == t.id for s in c.tasks.values(page_size=1))

    assert t.cleanup() is False
    assert t.id not in c.tasks
    with pytest.raises(KeyError):
        c.tasks[t.id]
    with pytest.raises(NotFound):
        t.attempt()


def test_breaker(c: Coordinator, uid: str) -> None:
    t = c.tasks.init(f"Build React component {uid}")
    t.attempt()
    t.fail("TypeError: Cannot read property 'map' of undefined")
    assert c.breaker.check(t.id) is None
    t.attempt()
    t.fail("TypeError: Cannot read property 'map' of undefined")
    assert c.breaker.check(t.id) == "repeated_error"
    assert c.breaker.check(t, repeated_error=3) is None  # per-call threshold
    analysis = c.breaker.analyze(t.id)
    assert (analysis.pattern, analysis.repeated_error_count, analysis.current_tier) == (
        "repeated_error", 2, 1)

    forced = c.breaker.force_escalate(t.id, "loop")
    assert forced == ForceEscalation(True, 1, 3, "codex")
    assert t.tier == 3
    assert t.state().escalation_log[-1].forced

    blocked = c.breaker.break_task(t.id, "reason")
    assert (blocked.task_id, blocked.reason, blocked.final_tier) == (t.id, "reason", 3)
    assert "reason" in blocked.summary and t.id in blocked.summary
    assert t.id in [b.task_id for b in c.breaker.status()]
    assert c.breaker.summary(t.id) == blocked.summary
    with pytest.raises(AlreadyExists):
        c.breaker.break_task(t.id, "again")
    with pytest.raises(FailedPrecondition):
        t.attempt()  # a blocked task takes no more attempts
    assert any(e.task_id == t.id and e.level == "error" for e in c.breaker.log(tail=50))

    assert c.breaker.cleanup(t) is True
    assert t.id not in [b.task_id for b in c.breaker.status()]


def test_force_escalate_near_the_top_asks_for_a_person(c: Coordinator, uid: str) -> None:
    t = c.tasks.init(f"Refactor database {uid}")
    t.escalate("up", steps=5)
    forced = c.breaker.force_escalate(t)
    assert forced.human_intervention_required and (forced.from_tier, forced.to_tier) == (6, 6)

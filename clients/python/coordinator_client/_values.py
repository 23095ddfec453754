"""Plain Python values of coordinator_client, and the checks and conversions at the proto edge.

Everything a caller gets back is one of the immutable records below (or a live handle of
_client.py / aio.py built on them); the protos stay available as `.proto` for fields not
wrapped. Everything a caller passes in goes through a check here first, so that a wrong type is
a TypeError and an impossible value a ValueError, raised before anything is sent.
"""

from __future__ import annotations

import datetime
import enum
import hashlib
import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple, Union, cast

from google.protobuf import duration_pb2, json_format, timestamp_pb2

from coordinator_client._stubs import (
    a2a_pb2,
    agent_registry_pb2,
    breaker_pb2,
    context_pb2,
    conversation_pb2,
    task_state_pb2,
    work_pb2,
)

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

Seconds = Union[int, float, datetime.timedelta]


# ---- Enumerations (str-valued, so they compare equal to their names) ----

class ContextStatus(str, enum.Enum):
    """Status of a TaskContext."""

    ACTIVE = "active"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"

    def __str__(self) -> str:
        return self.value


class Role(str, enum.Enum):
    """Author of a conversation message."""

    USER = "user"
    AGENT = "agent"
    SYSTEM = "system"

    def __str__(self) -> str:
        return self.value


def _enum_value(kind: type, name: str, value: Any) -> Any:
    if isinstance(value, kind):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str or {kind.__name__}, not {type(value).__name__}")
    text = value.strip().lower()
    if kind is ContextStatus and text == "cancelled":
        text = "canceled"
    try:
        return kind(text)
    except ValueError:
        choices = ", ".join(repr(m.value) for m in kind)  # type: ignore[attr-defined]
        raise ValueError(f"{name} must be one of {choices}, not {value!r}") from None


def status_to_proto(value: Union[str, ContextStatus]) -> context_pb2.ContextStatus:
    status: ContextStatus = _enum_value(ContextStatus, "status", value)
    return cast(context_pb2.ContextStatus,
                context_pb2.ContextStatus.Value("CONTEXT_STATUS_" + status.name))


def status_from_proto(value: int) -> Optional[ContextStatus]:
    name = context_pb2.ContextStatus.Name(value) if value else ""
    return ContextStatus[name[len("CONTEXT_STATUS_"):]] if name else None


def role_to_proto(value: Union[str, Role]) -> conversation_pb2.Role:
    role: Role = _enum_value(Role, "role", value)
    return cast(conversation_pb2.Role, conversation_pb2.Role.Value("ROLE_" + role.name))


def role_from_proto(value: int) -> Optional[Role]:
    name = conversation_pb2.Role.Name(value) if value else ""
    return Role[name[len("ROLE_"):]] if name else None


def _short_enum(name: str, prefix: str) -> str:
    """"TASK_STATE_COMPLETED" -> "completed"."""
    return name[len(prefix):].lower() if name.startswith(prefix) else name.lower()


# ---- Checks of what callers pass ----

def check_str(name: str, value: Any) -> str:
    """A str that protobuf can encode (no lone surrogates)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"{name} is not valid UTF-8 text ({error.reason} at {error.start})") \
            from None
    return value


def check_id(name: str, value: Any) -> str:
    """A non-empty str id (the server checks length and characters)."""
    check_str(name, value)
    if not value:
        raise ValueError(f"{name} must not be empty")
    return value


def check_int(name: str, value: Any, low: int, high: int) -> int:
    """An int (not a bool) within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, not {value}")
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def check_positive_seconds(name: str, value: Any) -> float:
    seconds = to_seconds(name, value)
    if seconds <= 0:
        raise ValueError(f"{name} must be positive, not {seconds}")
    return seconds


def to_seconds(name: str, value: Any) -> float:
    """Seconds from an int, a float or a timedelta; not negative, not NaN."""
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be seconds (int, float or timedelta), "
                        f"not {type(value).__name__}")
    else:
        seconds = float(value)
    if math.isnan(seconds) or math.isinf(seconds) or seconds < 0:
        raise ValueError(f"{name} must be a finite number of seconds >= 0, not {value}")
    return seconds


def duration_proto(name: str, value: Seconds) -> duration_pb2.Duration:
    seconds = to_seconds(name, value)
    if seconds > 315576000000:
        raise ValueError(f"{name} is longer than protobuf's Duration allows")
    whole = int(seconds)
    return duration_pb2.Duration(seconds=whole, nanos=int(round((seconds - whole) * 1e9)))


def check_labels(value: Any, *, allow_none_values: bool) -> Dict[str, Optional[str]]:
    if not isinstance(value, Mapping):
        raise TypeError(f"labels must be a mapping of str to str, not {type(value).__name__}")
    labels: Dict[str, Optional[str]] = {}
    for key, item in value.items():
        check_id("label name", key)
        if item is None and allow_none_values:
            labels[key] = None
            continue
        labels[key] = check_str(f"label {key!r}", item)
    return labels


def check_str_list(name: str, value: Any) -> List[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of str, not {type(value).__name__}")
    return [check_str(f"{name}[{i}]", v) for i, v in enumerate(value)]


def task_id_of(description: str) -> str:
    """The id the coordinator gives a task: the first 8 hex characters of SHA-256(description)."""
    check_str("description", description)
    return hashlib.sha256(description.encode("utf-8")).hexdigest()[:8]


# ---- Conversions of what the server answers ----

def time_of(message: Any, name: str) -> Optional[datetime.datetime]:
    """A Timestamp field as an aware UTC datetime, None when unset."""
    if not message.HasField(name):
        return None
    stamp: timestamp_pb2.Timestamp = getattr(message, name)
    return stamp.ToDatetime(tzinfo=datetime.timezone.utc)


def seconds_of(value: duration_pb2.Duration) -> float:
    return value.seconds + value.nanos / 1e9


def struct_dict(message: Any, name: str) -> Dict[str, Any]:
    if not message.HasField(name):
        return {}
    return json_format.MessageToDict(getattr(message, name))


class _StepsAndTokens(NamedTuple):
    step_count: int
    total_tokens: int


class Totals(_StepsAndTokens):
    """A conversation's counters (as returned by Conversation.append and totals()).

    step_count is the agent's steps (its "agent" messages), message_count every message.
    It unpacks and compares as the pair (step_count, total_tokens), as it always did;
    message_count is an attribute beside them."""

    message_count: int

    def __new__(cls, step_count: int, total_tokens: int, message_count: int = 0) -> "Totals":
        self = super().__new__(cls, step_count, total_tokens)
        self.message_count = message_count
        return self

    def __repr__(self) -> str:
        return (f"Totals(step_count={self.step_count}, total_tokens={self.total_tokens}, "
                f"message_count={self.message_count})")


@dataclass(frozen=True)
class CommandRecord:
    """One command recorded in a context."""

    seq: int
    command: str
    exit_code: int
    duration: float
    output_digest: str
    time: Optional[datetime.datetime]

    @classmethod
    def from_proto(cls, p: context_pb2.CommandRecord) -> "CommandRecord":
        return cls(p.seq, p.command, p.exit_code, seconds_of(p.duration), p.output_digest,
                   time_of(p, "time"))


@dataclass(frozen=True)
class Message:
    """One conversation message; seq is 1 for the first and equals message_count after it."""

    seq: int
    role: Optional[Role]
    text: str
    tokens: int
    time: Optional[datetime.datetime]

    @classmethod
    def from_proto(cls, p: conversation_pb2.ConversationMessage) -> "Message":
        return cls(p.seq, role_from_proto(p.role), p.text, p.tokens, time_of(p, "time"))


@dataclass(frozen=True)
class TaskFailure:
    """One recorded failure of a task."""

    seq: int
    attempt: int
    error: str
    model: str
    tier: int
    time: Optional[datetime.datetime]

    @classmethod
    def from_proto(cls, p: task_state_pb2.TaskFailure) -> "TaskFailure":
        return cls(p.seq, p.attempt, p.error, p.model, p.tier, time_of(p, "time"))


@dataclass(frozen=True)
class TaskEscalation:
    """One change of tier (forced: by the breaker's force_escalate)."""

    seq: int
    reason: str
    from_tier: int
    to_tier: int
    forced: bool
    time: Optional[datetime.datetime]

    @classmethod
    def from_proto(cls, p: task_state_pb2.TaskEscalation) -> "TaskEscalation":
        return cls(p.seq, p.reason, p.from_tier, p.to_tier, p.forced, time_of(p, "time"))


@dataclass(frozen=True)
class QualityGateResult:
    """One quality-gate verdict."""

    seq: int
    check: str
    passed: bool
    detail: str
    time: Optional[datetime.datetime]

    @classmethod
    def from_proto(cls, p: task_state_pb2.QualityGateResult) -> "QualityGateResult":
        return cls(p.seq, p.check, p.passed, p.detail, time_of(p, "time"))


@dataclass(frozen=True)
class TaskState:
    """The whole retry state of a task, as read at one moment."""

    task_id: str
    description: str
    attempt_count: int
    model_tier: int
    model: str
    failures: Tuple[TaskFailure, ...]
    escalation_log: Tuple[TaskEscalation, ...]
    quality_gate_results: Tuple[QualityGateResult, ...]
    custom_fields: Mapping[str, str]
    blocked: bool
    block_reason: str
    blocked_time: Optional[datetime.datetime]
    create_time: Optional[datetime.datetime]
    update_time: Optional[datetime.datetime]

    @classmethod
    def from_proto(cls, p: task_state_pb2.TaskState) -> "TaskState":
        return cls(p.task_id, p.description, p.attempt_count, p.model_tier, p.model,
                   tuple(TaskFailure.from_proto(f) for f in p.failures),
                   tuple(TaskEscalation.from_proto(e) for e in p.escalation_log),
                   tuple(QualityGateResult.from_proto(q) for q in p.quality_gate_results),
                   dict(p.custom_fields), p.blocked, p.block_reason, time_of(p, "blocked_time"),
                   time_of(p, "create_time"), time_of(p, "update_time"))


@dataclass(frozen=True)
class TaskSummary:
    """One task of Tasks.values()."""

    task_id: str
    description: str
    attempt_count: int
    model_tier: int
    blocked: bool

    @classmethod
    def from_proto(cls, p: task_state_pb2.TaskSummary) -> "TaskSummary":
        return cls(p.task_id, p.description, p.attempt_count, p.model_tier, p.blocked)


def thresholds_proto(repeated_error: Optional[int], stuck_tier: Optional[int],
                     quality_gate: Optional[int]) -> breaker_pb2.LoopThresholds:
    thresholds = breaker_pb2.LoopThresholds()
    if repeated_error is not None:
        thresholds.repeated_error = check_int("repeated_error", repeated_error, 1, 200)
    if stuck_tier is not None:
        thresholds.stuck_tier = check_int("stuck_tier", stuck_tier, 1, INT32_MAX)
    if quality_gate is not None:
        thresholds.quality_gate = check_int("quality_gate", quality_gate, 1, INT32_MAX)
    return thresholds


@dataclass(frozen=True)
class LoopAnalysis:
    """What the breaker knows about a task's loop (BreakerService.AnalyzeLoop)."""

    task_id: str
    task_desc: str
    pattern: Optional[str]
    attempt_count: int
    current_tier: int
    current_model: str
    escalations_done: int
    repeated_error_count: int
    latest_error: str
    failures_at_tier: int
    quality_gate_check: str
    quality_gate_failures: int
    suggested_action: str
    blocked: bool
    # Which definition of the pattern held ("" when none): similar_errors,
    # failures_since_tier_change, attempts_never_escalated, quality_gate_results or
    # quality_gate_failure_texts (docs/retry-and-breaker.md).
    pattern_condition: str = ""

    @classmethod
    def from_proto(cls, p: breaker_pb2.LoopAnalysis) -> "LoopAnalysis":
        pattern = p.pattern_type if p.pattern_type and p.pattern_type != "none" else None
        return cls(p.task_id, p.task_desc, pattern, p.attempt_count, p.current_tier,
                   p.current_model, p.escalations_done, p.repeated_error_count, p.latest_error,
                   p.failures_at_tier, p.quality_gate_check, p.quality_gate_failures,
                   p.suggested_action, p.blocked, p.pattern_condition)


@dataclass(frozen=True)
class ForceEscalation:
    """What BreakerService.ForceEscalate did: escalated two tiers (or to the top), or nothing
    because the task is within one tier of the top and a person must look at it."""

    escalated: bool
    from_tier: int
    to_tier: int
    model: str

    @property
    def human_intervention_required(self) -> bool:
        return not self.escalated

    @classmethod
    def from_proto(cls, p: breaker_pb2.ForceEscalateResponse) -> "ForceEscalation":
        return cls(p.result == breaker_pb2.FORCE_ESCALATE_RESULT_ESCALATED, p.from_tier,
                   p.to_tier, p.model)


@dataclass(frozen=True)
class BlockedTask:
    """An entry of the breaker's blocked registry."""

    task_id: str
    task_desc: str
    reason: str
    blocked_time: Optional[datetime.datetime]
    attempt_count: int
    final_tier: int
    pattern: Optional[str]
    summary: str = ""

    @classmethod
    def from_proto(cls, p: breaker_pb2.BlockedTask, summary: str = "") -> "BlockedTask":
        pattern = p.pattern_type if p.pattern_type and p.pattern_type != "none" else None
        return cls(p.task_id, p.task_desc, p.reason, time_of(p, "blocked_time"), p.attempt_count,
                   p.final_tier, pattern, summary)


@dataclass(frozen=True)
class BreakerLogEntry:
    """One action of the breaker."""

    seq: int
    time: Optional[datetime.datetime]
    level: str
    task_id: str
    message: str

    @classmethod
    def from_proto(cls, p: breaker_pb2.BreakerLogEntry) -> "BreakerLogEntry":
        return cls(p.seq, time_of(p, "time"),
                   _short_enum(breaker_pb2.BreakerLogLevel.Name(p.level), "BREAKER_LOG_LEVEL_"),
                   p.task_id, p.message)


@dataclass(frozen=True)
class Agent:
    """An agent registered with the A2A gateway."""

    name: str
    endpoint: str
    protocol_binding: str
    description: str
    card_url: str
    proto: agent_registry_pb2.Agent = field(repr=False, compare=False)

    @classmethod
    def from_proto(cls, p: agent_registry_pb2.Agent) -> "Agent":
        return cls(p.name, p.endpoint, p.protocol_binding, p.card.description, p.card_url, p)


# ---- A2A ----

# States in which a task waits for nothing more from its agent.
A2A_STOP_STATES = frozenset({
    a2a_pb2.TASK_STATE_COMPLETED, a2a_pb2.TASK_STATE_FAILED, a2a_pb2.TASK_STATE_CANCELED,
    a2a_pb2.TASK_STATE_REJECTED, a2a_pb2.TASK_STATE_INPUT_REQUIRED,
    a2a_pb2.TASK_STATE_AUTH_REQUIRED,
})


def _texts(parts: Iterable[a2a_pb2.Part]) -> Tuple[str, ...]:
    return tuple(p.text for p in parts if p.WhichOneof("content") == "text")


@dataclass(frozen=True)
class A2AMessage:
    """A message of an A2A task's history (or its status message)."""

    message_id: str
    role: str
    text: str
    context_id: str
    task_id: str

    @classmethod
    def from_proto(cls, p: a2a_pb2.Message) -> "A2AMessage":
        return cls(p.message_id, _short_enum(a2a_pb2.Role.Name(p.role), "ROLE_"),
                   "\n".join(_texts(p.parts)), p.context_id, p.task_id)


@dataclass(frozen=True)
class A2AArtifact:
    """An artifact of an A2A task: its text parts and its data parts (as dicts)."""

    artifact_id: str
    name: str
    texts: Tuple[str, ...]
    data: Tuple[Any, ...]

    @classmethod
    def from_proto(cls, p: a2a_pb2.Artifact) -> "A2AArtifact":
        data = tuple(json_format.MessageToDict(part.data) for part in p.parts
                     if part.WhichOneof("content") == "data")
        return cls(p.artifact_id, p.name, _texts(p.parts), data)


@dataclass(frozen=True)
class A2ATask:
    """An A2A task as the gateway stored it.

    state is the TaskState without its prefix, lower case: "submitted", "working",
    "completed", "failed", "canceled", "rejected", "input_required", "auth_required".
    """

    id: str
    context_id: str
    state: str
    status_message: Optional[A2AMessage]
    artifacts: Tuple[A2AArtifact, ...]
    history: Tuple[A2AMessage, ...]
    proto: a2a_pb2.Task = field(repr=False, compare=False)

    @property
    def status_text(self) -> str:
        """The text of the status message ("" when none)."""
        return self.status_message.text if self.status_message else ""

    @property
    def text(self) -> str:
        """Every text part of every artifact, joined by newlines."""
        return "\n".join(t for a in self.artifacts for t in a.texts)

    @property
    def done(self) -> bool:
        """True when the task waits for nothing more from its agent (ended, or it asks for
        input or authentication)."""
        return self.proto.status.state in A2A_STOP_STATES

    @classmethod
    def from_proto(cls, p: a2a_pb2.Task) -> "A2ATask":
        status = A2AMessage.from_proto(p.status.message) if p.status.HasField("message") else None
        return cls(p.id, p.context_id,
                   _short_enum(a2a_pb2.TaskState.Name(p.status.state), "TASK_STATE_"), status,
                   tuple(A2AArtifact.from_proto(a) for a in p.artifacts),
                   tuple(A2AMessage.from_proto(m) for m in p.history), p)


# ---- Work ----

@dataclass(frozen=True)
class ItemCounts:
    """A run's items by status."""

    total: int
    pending: int
    running: int
    done: int
    failed: int
    blocked: int


@dataclass(frozen=True)
class Run:
    """A work run with its derived status ("planning", "pending", "running", "completed",
    "failed" or "blocked") and item counts."""

    run_id: str
    kind: str
    status: str
    counts: ItemCounts
    specs_dir: str
    base_branch: str
    feature: str
    claim_count: int
    create_time: Optional[datetime.datetime]
    update_time: Optional[datetime.datetime]
    proto: work_pb2.Run = field(repr=False, compare=False)

    @classmethod
    def from_proto(cls, p: work_pb2.Run) -> "Run":
        c = p.counts
        return cls(p.run_id, _short_enum(work_pb2.RunKind.Name(p.kind), "RUN_KIND_"),
                   _short_enum(work_pb2.RunStatus.Name(p.status), "RUN_STATUS_"),
                   ItemCounts(c.total, c.pending, c.running, c.done, c.failed, c.blocked),
                   p.specs_dir, p.base_branch, p.feature, p.claim_count,
                   time_of(p, "create_time"), time_of(p, "update_time"), p)


@dataclass(frozen=True)
class WorkItem:
    """An item of a run. status: "pending", "running", "done", "failed" or "blocked".
    checkpoint and progress are what the last holder left for whoever claims it next."""

    item_id: str
    run_id: str
    title: str
    description: str
    level: int
    dependencies: Tuple[str, ...]
    status: str
    worker_id: str
    epoch: int
    attempts: int
    last_error: str
    status_reason: str
    summary: str
    checkpoint: str
    progress: str
    branch: str
    worktree: str
    metadata: Mapping[str, Any]
    lease_expire_time: Optional[datetime.datetime]
    version: int
    proto: work_pb2.WorkItem = field(repr=False, compare=False)

    @classmethod
    def from_proto(cls, p: work_pb2.WorkItem) -> "WorkItem":
        return cls(p.item_id, p.run_id, p.title, p.description, p.level, tuple(p.dependencies),
                   _short_enum(work_pb2.ItemStatus.Name(p.status), "ITEM_STATUS_"), p.worker_id,
                   p.epoch, p.attempts, p.last_error, p.status_reason, p.summary, p.checkpoint,
                   p.progress, p.branch, p.worktree, struct_dict(p, "metadata"),
                   time_of(p, "lease_expire_time"), p.version, p)


def work_item_proto(spec: Any, index: int) -> work_pb2.WorkItem:
    """A WorkItem from a dict with the proto's field names ("id" is taken for "item_id")."""
    if isinstance(spec, work_pb2.WorkItem):
        return spec
    if not isinstance(spec, Mapping):
        raise TypeError(f"items[{index}] must be a dict, not {type(spec).__name__}")
    data = dict(spec)
    if "id" in data and "item_id" not in data:
        data["item_id"] = data.pop("id")
    item = work_pb2.WorkItem()
    try:
        json_format.ParseDict(data, item)
    except json_format.ParseError as error:
        raise ValueError(f"items[{index}]: {error}") from None
    return item


def retry_policy_proto(max_attempts: Optional[int], backoff_base: Optional[Seconds],
                       backoff_max: Optional[Seconds],
                       non_retryable_errors: Optional[Iterable[str]]) -> work_pb2.RetryPolicy:
    policy = work_pb2.RetryPolicy()
    if max_attempts is not None:
        policy.max_attempts = check_int("max_attempts", max_attempts, 1, 1000)
    if backoff_base is not None:
        policy.backoff_base.CopyFrom(duration_proto("backoff_base", backoff_base))
    if backoff_max is not None:
        policy.backoff_max.CopyFrom(duration_proto("backoff_max", backoff_max))
    if non_retryable_errors is not None:
        policy.non_retryable_errors.extend(
            check_str_list("non_retryable_errors", non_retryable_errors))
    return policy


# ---- Contexts ----

class ContextFields:
    """The fields of a TaskContext as read at one moment (the base of the Context handles)."""

    __slots__ = ("_proto",)

    def __init__(self, proto: context_pb2.TaskContext) -> None:
        self._proto = proto

    @property
    def proto(self) -> context_pb2.TaskContext:
        """The TaskContext as last read or written (do not change it)."""
        return self._proto

    @property
    def context_id(self) -> str:
        """The id of the context (the A2A context_id)."""
        return self._proto.context_id

    @property
    def agent(self) -> str:
        """The owning agent."""
        return self._proto.agent

    @property
    def external_task_id(self) -> str:
        """The benchmark's own id of the task (for example an ARVO id)."""
        return self._proto.external_task_id

    @property
    def workspace_dir(self) -> str:
        """The evaluation's workspace directory."""
        return self._proto.workspace_dir

    @property
    def shared_dir(self) -> str:
        """The directory shared with the agent under test."""
        return self._proto.shared_dir

    @property
    def environment_handle(self) -> str:
        """Handle of the execution environment (a container name, a VM id)."""
        return self._proto.environment_handle

    @property
    def status(self) -> Optional[ContextStatus]:
        """active, completed, failed or canceled (a str enum: compares equal to the name)."""
        return status_from_proto(self._proto.status)

    @property
    def labels(self) -> Mapping[str, str]:
        """A copy of the labels."""
        return dict(self._proto.labels)

    @property
    def command_count(self) -> int:
        """Commands recorded with record_command."""
        return self._proto.command_count

    @property
    def failed_commands(self) -> int:
        """Recorded commands whose exit code was not zero."""
        return self._proto.failed_commands

    @property
    def version(self) -> int:
        """1 on create, +1 on every change (record_command included)."""
        return self._proto.version

    @property
    def parties(self) -> Tuple[str, ...]:
        """Other principals that take part in the context (docs/security.md)."""
        return tuple(self._proto.parties)

    @property
    def create_time(self) -> Optional[datetime.datetime]:
        """When the context was created (UTC)."""
        return time_of(self._proto, "create_time")

    @property
    def update_time(self) -> Optional[datetime.datetime]:
        """When the context last changed (UTC)."""
        return time_of(self._proto, "update_time")

    def __repr__(self) -> str:
        status = self.status.value if self.status else None
        return (f"{type(self).__name__}({self.context_id!r}, agent={self.agent!r}, "
                f"status={status!r}, command_count={self.command_count}, "
                f"failed_commands={self.failed_commands}, version={self.version})")

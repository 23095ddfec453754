"""The calls of both clients, described without I/O.

Each builder checks its arguments (TypeError / ValueError before anything is sent) and returns a
Call: which RPC, its request, and how to read its answer into the values of _values.py (or a
Listing, for an RPC that pages). The loops that wait or retry between calls keep their decisions
here too (ContextUpdate, claim_pause, TaskWait). The blocking client (_client.py) and the asyncio
one (aio.py) differ only in how they send a call and how they sleep.
"""

from __future__ import annotations

import datetime
import json
import time
import uuid
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    Generic,
    Iterable,
    List,
    Mapping,
    Optional,
    Tuple,
    TypeVar,
    Union,
)

import grpc
from google.protobuf import json_format, struct_pb2

from coordinator_client._channel import FIRST_BACKOFF, Metadata, jitter, next_backoff
from coordinator_client._errors import (
    CoordinatorError,
    DeadlineExceeded,
    FailedPrecondition,
    NothingToClaim,
    from_rpc_error,
)
from coordinator_client._stubs import (
    a2a_pb2,
    a2a_pb2_grpc,
    agent_registry_pb2,
    agent_registry_pb2_grpc,
    breaker_pb2,
    breaker_pb2_grpc,
    context_pb2,
    context_pb2_grpc,
    conversation_pb2,
    conversation_pb2_grpc,
    task_state_pb2,
    task_state_pb2_grpc,
    work_pb2,
    work_pb2_grpc,
)
from coordinator_client._values import (
    A2A_STOP_STATES,
    INT32_MAX,
    INT64_MAX,
    A2ATask,
    Agent,
    BlockedTask,
    BreakerLogEntry,
    CommandRecord,
    ContextStatus,
    ForceEscalation,
    LoopAnalysis,
    Message,
    QualityGateResult,
    Role,
    Run,
    Seconds,
    TaskFailure,
    TaskState,
    TaskSummary,
    Totals,
    WorkItem,
    check_bool,
    check_id,
    check_int,
    check_labels,
    check_positive_seconds,
    check_str,
    check_str_list,
    duration_proto,
    retry_policy_proto,
    role_to_proto,
    seconds_of,
    status_to_proto,
    thresholds_proto,
    time_of,
    work_item_proto,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One unary RPC: `request` to service.method, with extra metadata and a timeout (None: the
    Coordinator's); the answer is decode(response)."""

    service: str
    method: str
    request: Any
    decode: Callable[[Any], T]
    metadata: Metadata = ()
    timeout: Optional[float] = None

    @property
    def name(self) -> str:
        """"Service.Method", as errors name the call."""
        return f"{self.service}.{self.method}"


class Listing(Generic[T]):
    """An RPC that pages: `request` asks for the next page; page() reads the items of one answer
    (its `field`, each decoded) and moves the request on to the page after it, or marks the
    listing done. One Listing is read once."""

    def __init__(self, service: str, method: str, request: Any, field: str,
                 decode: Callable[[Any], T], metadata: Metadata = ()) -> None:
        self.service = service
        self.method = method
        self.request = request
        self.field = field
        self.decode = decode
        self.metadata = metadata
        self.done = False

    @property
    def name(self) -> str:
        """"Service.Method", as errors name the call."""
        return f"{self.service}.{self.method}"

    def page(self, response: Any) -> List[T]:
        if response.next_page_token:
            self.request.page_token = response.next_page_token
        else:
            self.done = True
        return [self.decode(item) for item in getattr(response, self.field)]


def as_is(response: T) -> T:
    """The decoder of a call whose answer the client wraps itself."""
    return response


def _nothing(response: Any) -> None:
    return None


def _time_left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.001)


# The services, by the names errors give them, and the stub class of each (a stub works on a
# grpc and on a grpc.aio channel alike).
CONTEXTS = "ContextService"
CONVERSATIONS = "ConversationService"
TASK_STATE = "TaskStateService"
BREAKER = "BreakerService"
WORK = "WorkService"
AGENTS = "AgentRegistry"
A2A = "A2AService"
STUBS: Dict[str, Callable[[Any], Any]] = {
    CONTEXTS: context_pb2_grpc.ContextServiceStub,
    CONVERSATIONS: conversation_pb2_grpc.ConversationServiceStub,
    TASK_STATE: task_state_pb2_grpc.TaskStateServiceStub,
    BREAKER: breaker_pb2_grpc.BreakerServiceStub,
    WORK: work_pb2_grpc.WorkServiceStub,
    AGENTS: agent_registry_pb2_grpc.AgentRegistryStub,
    A2A: a2a_pb2_grpc.A2AServiceStub,
}

# TaskContext fields UpdateContext may change, in the order of the proto.
CONTEXT_FIELDS = ("agent", "external_task_id", "workspace_dir", "shared_dir",
                  "environment_handle")


def task_id_arg(task: Any) -> str:
    """A task id, or the id of a Task handle."""
    task_id = getattr(task, "id", task)
    return check_id("task_id", task_id)


def page_size_arg(page_size: Optional[int]) -> int:
    return 0 if page_size is None else check_int("page_size", page_size, 1, INT32_MAX)


# ---- Contexts ----

def create_context(context_id: str, *, agent: str, external_task_id: str, workspace_dir: str,
                   shared_dir: str, environment_handle: str,
                   status: Optional[Union[str, ContextStatus]],
                   labels: Optional[Mapping[str, str]],
                   parties: Optional[Iterable[str]]) -> Call[context_pb2.TaskContext]:
    context = context_pb2.TaskContext(
        context_id=check_id("context_id", context_id), agent=check_str("agent", agent),
        external_task_id=check_str("external_task_id", external_task_id),
        workspace_dir=check_str("workspace_dir", workspace_dir),
        shared_dir=check_str("shared_dir", shared_dir),
        environment_handle=check_str("environment_handle", environment_handle))
    if status is not None:
        context.status = status_to_proto(status)
    if labels is not None:
        context.labels.update(check_labels(labels, allow_none_values=False))  # type: ignore
    if parties is not None:
        context.parties.extend(check_str_list("parties", parties))
    return Call(CONTEXTS, "CreateContext", context_pb2.CreateContextRequest(context=context),
                as_is)


def get_context(context_id: str,
                timeout: Optional[float] = None) -> Call[context_pb2.TaskContext]:
    request = context_pb2.GetContextRequest(context_id=check_id("context_id", context_id))
    return Call(CONTEXTS, "GetContext", request, as_is, timeout=timeout)


def delete_context(context_id: str, version: int) -> Call[None]:
    request = context_pb2.DeleteContextRequest(
        context_id=check_id("context_id", context_id),
        version=check_int("version", version, 0, INT64_MAX))
    return Call(CONTEXTS, "DeleteContext", request, _nothing)


def context_changes(*, agent: Optional[str], external_task_id: Optional[str],
                    workspace_dir: Optional[str], shared_dir: Optional[str],
                    environment_handle: Optional[str],
                    status: Optional[Union[str, ContextStatus]],
                    labels: Optional[Mapping[str, Optional[str]]],
                    replace_labels: bool) -> Dict[str, Any]:
    """The changes of Context.update, checked; None means "leave as it is"."""
    check_bool("replace_labels", replace_labels)
    changes: Dict[str, Any] = {}
    values = dict(agent=agent, external_task_id=external_task_id, workspace_dir=workspace_dir,
                  shared_dir=shared_dir, environment_handle=environment_handle)
    for name in CONTEXT_FIELDS:
        if values[name] is not None:
            changes[name] = check_str(name, values[name])
    if status is not None:
        changes["status"] = status_to_proto(status)
    if labels is not None:
        changes["labels"] = check_labels(labels, allow_none_values=not replace_labels)
    elif replace_labels:
        raise ValueError("replace_labels needs labels")
    return changes


def update_context(current: context_pb2.TaskContext, changes: Mapping[str, Any],
                   replace_labels: bool) -> context_pb2.UpdateContextRequest:
    """UpdateContext of `changes` onto `current` at its version. Labels are merged into the
    current ones (a None value removes a label) unless replace_labels."""
    request = context_pb2.UpdateContextRequest()
    context = request.context
    context.context_id = current.context_id
    context.version = current.version
    for name, value in changes.items():
        if name == "labels":
            labels: Dict[str, str] = {} if replace_labels else dict(current.labels)
            for key, label in value.items():
                if label is None:
                    labels.pop(key, None)
                else:
                    labels[key] = label
            context.labels.update(labels)
        else:
            setattr(context, name, value)
        request.update_mask.paths.append(name)
    return request


class ContextUpdate:
    """Context.update's read-version-retry: write() makes the change at the version last read
    (`current`); after a Conflict, a short pause, read() for the context as it is now, and
    write() anew, until the change lands or the Coordinator's timeout is spent (then the
    Conflict stands), so concurrent updates never lose one another."""

    def __init__(self, current: context_pb2.TaskContext, changes: Mapping[str, Any],
                 replace_labels: bool, budget: float) -> None:
        self.current = current
        self._changes = changes
        self._replace_labels = replace_labels
        self._deadline = time.monotonic() + budget
        self._conflicts = 0

    def write(self) -> Call[context_pb2.TaskContext]:
        request = update_context(self.current, self._changes, self._replace_labels)
        return Call(CONTEXTS, "UpdateContext", request, as_is,
                    timeout=_time_left(self._deadline))

    def pause_after_conflict(self) -> Optional[float]:
        """The pause before read(), or None when the time is spent."""
        if time.monotonic() >= self._deadline:
            return None
        self._conflicts += 1
        return jitter(self._conflicts)

    def read(self) -> Call[context_pb2.TaskContext]:
        return get_context(self.current.context_id, timeout=_time_left(self._deadline))


def record_command(context_id: str, command: str, exit_code: int,
                   duration: Optional[Seconds],
                   output_digest: str) -> Call[context_pb2.TaskContext]:
    # One request id per command, sent again with every retry of this request: the coordinator
    # answers a retry whose original landed from the record instead of counting it twice.
    request = context_pb2.RecordCommandRequest(
        context_id=check_id("context_id", context_id), command=check_str("command", command),
        exit_code=check_int("exit_code", exit_code, -2**31, INT32_MAX),
        output_digest=check_str("output_digest", output_digest),
        request_id=str(uuid.uuid4()))
    if duration is not None:
        request.duration.CopyFrom(duration_proto("duration", duration))
    return Call(CONTEXTS, "RecordCommand", request, lambda response: response.context)


def list_contexts(agent: Optional[str], status: Optional[Union[str, ContextStatus]],
                  page_size: Optional[int]) -> Listing[context_pb2.TaskContext]:
    request = context_pb2.ListContextsRequest(page_size=page_size_arg(page_size))
    if agent is not None:
        request.agent = check_str("agent", agent)
    if status is not None:
        request.status = status_to_proto(status)
    return Listing(CONTEXTS, "ListContexts", request, "contexts", as_is)


def list_commands(context_id: str, page_size: Optional[int]) -> Listing[CommandRecord]:
    request = context_pb2.ListCommandsRequest(context_id=check_id("context_id", context_id),
                                              page_size=page_size_arg(page_size))
    return Listing(CONTEXTS, "ListCommands", request, "commands", CommandRecord.from_proto)


# ---- Conversations ----

def append_message(context_id: str, role: Union[str, Role], text: str,
                   tokens: int) -> Call[Totals]:
    # One request id per message, as record_command does.
    request = conversation_pb2.AppendMessageRequest(
        context_id=check_id("context_id", context_id), role=role_to_proto(role),
        text=check_str("text", text), tokens=check_int("tokens", tokens, 0, INT64_MAX),
        request_id=str(uuid.uuid4()))
    return Call(CONVERSATIONS, "AppendMessage", request, _totals)


def _get_conversation(context_id: str, tail: Optional[int],
                      page_size: Optional[int]) -> conversation_pb2.GetConversationRequest:
    request = conversation_pb2.GetConversationRequest(
        context_id=check_id("context_id", context_id), page_size=page_size_arg(page_size))
    if tail is not None:
        request.tail = check_int("tail", tail, 1, INT64_MAX)
    return request


def messages(context_id: str, tail: Optional[int],
             page_size: Optional[int]) -> Listing[Message]:
    """Every message in order, or the last `tail` of them."""
    request = _get_conversation(context_id, tail, page_size)
    return Listing(CONVERSATIONS, "GetConversation", request, "messages", Message.from_proto)


def totals(context_id: str) -> Call[Totals]:
    """The conversation's totals, from a page of its last message."""
    return Call(CONVERSATIONS, "GetConversation", _get_conversation(context_id, 1, 1), _totals)


def _totals(response: Any) -> Totals:
    return Totals(response.step_count, response.total_tokens, response.message_count)


# ---- Retry state and breaker ----

def init_task(description: str) -> Call[task_state_pb2.InitTaskResponse]:
    request = task_state_pb2.InitTaskRequest(description=check_id("description", description))
    return Call(TASK_STATE, "InitTask", request, as_is)


def get_tier(task_id: str) -> Call[task_state_pb2.GetTierResponse]:
    request = task_state_pb2.GetTierRequest(task_id=check_id("task_id", task_id))
    return Call(TASK_STATE, "GetTier", request, as_is)


def increment_attempt(task_id: str) -> Call[int]:
    return Call(TASK_STATE, "IncrementAttempt",
                task_state_pb2.IncrementAttemptRequest(task_id=task_id),
                lambda response: response.attempt_count)


def record_failure(task_id: str, error: str) -> Call[TaskFailure]:
    request = task_state_pb2.RecordFailureRequest(task_id=task_id,
                                                  error=check_str("error", error))
    return Call(TASK_STATE, "RecordFailure", request,
                lambda response: TaskFailure.from_proto(response.failure))


def escalate(task: Any, reason: str, steps: int) -> Call[int]:
    request = task_state_pb2.EscalateRequest(
        task_id=task_id_arg(task), reason=check_str("reason", reason),
        steps=check_int("steps", steps, 1, INT32_MAX))
    return Call(TASK_STATE, "Escalate", request, lambda response: response.model_tier)


def tail_arg(tail: Optional[int]) -> int:
    return 0 if tail is None else check_int("tail", tail, 1, INT32_MAX)


def failure_context(task_id: str, tail: Optional[int]) -> Call[str]:
    request = task_state_pb2.GetFailureContextRequest(task_id=task_id, tail=tail_arg(tail))
    return Call(TASK_STATE, "GetFailureContext", request, lambda response: response.text)


def quality_gate(task_id: str, check: str, passed: bool,
                 detail: str) -> Call[QualityGateResult]:
    request = task_state_pb2.RecordQualityGateRequest(
        task_id=task_id, check=check_id("check", check),
        passed=check_bool("passed", passed), detail=check_str("detail", detail))
    return Call(TASK_STATE, "RecordQualityGate", request,
                lambda response: QualityGateResult.from_proto(response.result))


def task_state(task_id: str) -> Call[TaskState]:
    return Call(TASK_STATE, "GetTaskState", task_state_pb2.GetTaskStateRequest(task_id=task_id),
                TaskState.from_proto)


def get_task_field(task_id: str, field: str) -> Call[str]:
    request = task_state_pb2.GetTaskFieldRequest(task_id=task_id,
                                                 field=check_id("field", field))
    return Call(TASK_STATE, "GetTaskField", request, lambda response: response.value)


def field_value(value: Any) -> str:
    """SetTaskField takes text: numbers in decimal."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"value must be a str or an int, not {type(value).__name__}")
    return check_str("value", value) if isinstance(value, str) else str(value)


def set_task_field(task_id: str, field: str, value: Union[str, int]) -> Call[str]:
    request = task_state_pb2.SetTaskFieldRequest(
        task_id=task_id, field=check_id("field", field), value=field_value(value))
    return Call(TASK_STATE, "SetTaskField", request, lambda response: response.value)


def cleanup_task(task_id: str) -> Call[bool]:
    return Call(TASK_STATE, "CleanupTask", task_state_pb2.CleanupTaskRequest(task_id=task_id),
                lambda response: response.was_blocked)


def list_tasks(page_size: Optional[int]) -> Listing[TaskSummary]:
    request = task_state_pb2.ListTasksRequest(page_size=page_size_arg(page_size))
    return Listing(TASK_STATE, "ListTasks", request, "tasks", TaskSummary.from_proto)


def check_loop(task: Any, repeated_error: Optional[int], stuck_tier: Optional[int],
               quality_gate: Optional[int]) -> Call[Optional[str]]:
    request = breaker_pb2.CheckLoopRequest(
        task_id=task_id_arg(task),
        thresholds=thresholds_proto(repeated_error, stuck_tier, quality_gate))
    return Call(BREAKER, "CheckLoop", request,
                lambda response: response.pattern_type if response.looping else None)


def analyze_loop(task: Any, repeated_error: Optional[int], stuck_tier: Optional[int],
                 quality_gate: Optional[int]) -> Call[LoopAnalysis]:
    request = breaker_pb2.AnalyzeLoopRequest(
        task_id=task_id_arg(task),
        thresholds=thresholds_proto(repeated_error, stuck_tier, quality_gate))
    return Call(BREAKER, "AnalyzeLoop", request, LoopAnalysis.from_proto)


def force_escalate(task: Any, reason: str) -> Call[ForceEscalation]:
    request = breaker_pb2.ForceEscalateRequest(task_id=task_id_arg(task),
                                               reason=check_str("reason", reason))
    return Call(BREAKER, "ForceEscalate", request, ForceEscalation.from_proto)


def break_task(task: Any, reason: str) -> Call[BlockedTask]:
    request = breaker_pb2.BreakRequest(task_id=task_id_arg(task),
                                       reason=check_str("reason", reason))
    return Call(BREAKER, "Break", request,
                lambda response: BlockedTask.from_proto(response.blocked, response.summary))


def breaker_status() -> Call[List[BlockedTask]]:
    return Call(BREAKER, "GetBreakerStatus", breaker_pb2.GetBreakerStatusRequest(),
                lambda response: [BlockedTask.from_proto(b) for b in response.blocked_tasks])


def break_summary(task: Any) -> Call[str]:
    request = breaker_pb2.GetBreakSummaryRequest(task_id=task_id_arg(task))
    return Call(BREAKER, "GetBreakSummary", request, lambda response: response.summary)


def breaker_cleanup(task: Any) -> Call[bool]:
    request = breaker_pb2.CleanupBreakerRequest(task_id=task_id_arg(task))
    return Call(BREAKER, "Cleanup", request, lambda response: response.was_blocked)


def breaker_log(tail: Optional[int]) -> Listing[BreakerLogEntry]:
    request = breaker_pb2.ReadBreakerLogRequest(tail=tail_arg(tail))
    return Listing(BREAKER, "ReadBreakerLog", request, "entries", BreakerLogEntry.from_proto)


# ---- Work ----

def create_run(items: Iterable[Any], *, run_id: str, kind: str, specs_dir: str,
               base_branch: str, feature: str, max_attempts: Optional[int],
               backoff_base: Optional[Seconds], backoff_max: Optional[Seconds],
               non_retryable_errors: Optional[Iterable[str]]) -> Call[Run]:
    kinds = {"workstreams": work_pb2.RUN_KIND_WORKSTREAMS,
             "task_graph": work_pb2.RUN_KIND_TASK_GRAPH}
    check_str("kind", kind)
    if kind not in kinds:
        raise ValueError(f"kind must be 'workstreams' or 'task_graph', not {kind!r}")
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise TypeError(f"items must be a list of dicts, not {type(items).__name__}")
    run = work_pb2.Run(run_id=check_str("run_id", run_id), kind=kinds[kind],
                       specs_dir=check_str("specs_dir", specs_dir),
                       base_branch=check_str("base_branch", base_branch),
                       feature=check_str("feature", feature),
                       retry_policy=retry_policy_proto(max_attempts, backoff_base, backoff_max,
                                                       non_retryable_errors))
    request = work_pb2.CreateRunRequest(
        run=run, items=[work_item_proto(item, i) for i, item in enumerate(items)])
    return Call(WORK, "CreateRun", request, Run.from_proto)


def import_task_graph(graph: Union[str, Mapping[str, Any]], *, run_id: str, feature: str,
                      max_attempts: Optional[int], backoff_base: Optional[Seconds],
                      backoff_max: Optional[Seconds],
                      non_retryable_errors: Optional[Iterable[str]]) -> Call[Run]:
    request = work_pb2.ImportTaskGraphRequest(
        run_id=check_str("run_id", run_id), feature=check_str("feature", feature),
        retry_policy=retry_policy_proto(max_attempts, backoff_base, backoff_max,
                                        non_retryable_errors))
    if isinstance(graph, str):
        request.graph_json = graph
    elif isinstance(graph, Mapping):
        request.graph_json = json.dumps(graph)
    else:
        raise TypeError(f"graph must be task-graph.json text or a dict, not "
                        f"{type(graph).__name__}")
    return Call(WORK, "ImportTaskGraph", request, Run.from_proto)


def get_run(run_id: str) -> Call[Run]:
    request = work_pb2.GetRunRequest(run_id=check_id("run_id", run_id))
    return Call(WORK, "GetRun", request, Run.from_proto)


def list_runs() -> Listing[Run]:
    return Listing(WORK, "ListRuns", work_pb2.ListRunsRequest(), "runs", Run.from_proto)


def list_items(run_id: str) -> Listing[WorkItem]:
    request = work_pb2.ListItemsRequest(run_id=check_id("run_id", run_id))
    return Listing(WORK, "ListItems", request, "items", WorkItem.from_proto)


def get_item(run_id: str, item_id: str) -> Call[WorkItem]:
    request = work_pb2.GetItemRequest(run_id=check_id("run_id", run_id),
                                      item_id=check_id("item_id", item_id))
    return Call(WORK, "GetItem", request, WorkItem.from_proto)


def retry_item(run_id: str, item_id: str) -> Call[WorkItem]:
    request = work_pb2.RetryRequest(run_id=check_id("run_id", run_id),
                                    item_id=check_id("item_id", item_id))
    return Call(WORK, "Retry", request, WorkItem.from_proto)


def claim(run_id: str, worker: str, ttl: Seconds) -> Call[work_pb2.ClaimResponse]:
    """Claim; the answer has an item, or says why not. The lease's ttl is claim_ttl(call)."""
    check_positive_seconds("ttl", ttl)
    request = work_pb2.ClaimRequest(run_id=check_id("run_id", run_id),
                                    worker_id=check_id("worker", worker),
                                    lease_ttl=duration_proto("ttl", ttl))
    return Call(WORK, "Claim", request, as_is)


def claim_ttl(call: Call[work_pb2.ClaimResponse]) -> float:
    return seconds_of(call.request.lease_ttl)


def claim_wait(wait: Seconds) -> float:
    """Work.claim's wait, in seconds (0: ask once)."""
    return check_positive_seconds("wait", wait) if wait else 0.0


def claim_pause(run_id: str, response: work_pb2.ClaimResponse, give_up: float) -> float:
    """The pause before asking again after a Claim that found no item (at the backoff the run
    names, at most a second). Raises NothingToClaim when the run is stalled or it is time
    (time.monotonic()) to give up."""
    retry_after = (seconds_of(response.retry_after)
                   if response.HasField("retry_after") else None)
    left = give_up - time.monotonic()
    if response.stalled or left <= 0:
        raise NothingToClaim(run_id, response.stalled, retry_after)
    return min(left, retry_after if retry_after is not None else 0.2, 1.0)


def heartbeat(lease: str, progress: Optional[str],
              ttl: Optional[Seconds]) -> Call[Optional[datetime.datetime]]:
    """Heartbeat; the answer is the lease's new expiry."""
    request = work_pb2.HeartbeatRequest(lease=lease)
    if progress is not None:
        request.progress = check_str("progress", progress)
    if ttl is not None:
        check_positive_seconds("ttl", ttl)
        request.lease_ttl.CopyFrom(duration_proto("ttl", ttl))
    return Call(WORK, "Heartbeat", request,
                lambda response: time_of(response, "lease_expire_time"))


def checkpoint(lease: str, note: str) -> Call[WorkItem]:
    request = work_pb2.CheckpointRequest(lease=lease, note=check_str("note", note))
    return Call(WORK, "Checkpoint", request, WorkItem.from_proto)


def complete(lease: str, summary: str) -> Call[WorkItem]:
    request = work_pb2.CompleteRequest(lease=lease, summary=check_str("summary", summary))
    return Call(WORK, "Complete", request, WorkItem.from_proto)


def fail_item(lease: str, error: str, retryable: bool) -> Call[WorkItem]:
    request = work_pb2.FailRequest(lease=lease, error=check_id("error", error),
                                   retryable=check_bool("retryable", retryable))
    return Call(WORK, "Fail", request, WorkItem.from_proto)


def describe_exception(error: BaseException) -> str:
    """The error text a failed work item gets from the exception that ended its with-block."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class ClaimedItemBase:
    """What both ClaimedItems hold: the item, its lease, and what the background heartbeats
    and the completion send (progress, summary)."""

    def __init__(self, response: work_pb2.ClaimResponse, ttl: float) -> None:
        self.item = WorkItem.from_proto(response.item)
        self.lease: str = response.lease
        self.epoch: int = response.epoch
        self.lease_expire_time = time_of(response, "lease_expire_time")
        self.ttl = ttl
        self.summary = ""
        self.progress: Optional[str] = None
        self.heartbeat_error: Optional[CoordinatorError] = None
        self._finished = False

    @property
    def run_id(self) -> str:
        """The run the item belongs to."""
        return self.item.run_id

    @property
    def item_id(self) -> str:
        """The claimed item's id."""
        return self.item.item_id

    def _complete(self, summary: Optional[str]) -> Call[WorkItem]:
        """The completion; the item counts as finished from here on."""
        call = complete(self.lease, self.summary if summary is None else summary)
        self._finished = True
        return call

    def _fail(self, error: str, retryable: bool) -> Call[WorkItem]:
        """The failure; the item counts as finished from here on."""
        call = fail_item(self.lease, error, retryable)
        self._finished = True
        return call

    def _heartbeat_failed(self, error: CoordinatorError) -> bool:
        """Keeps a background heartbeat's error; True when the lease was refused (stop
        beating), False when the coordinator was unreachable for a whole timeout (beat on)."""
        self.heartbeat_error = error
        return isinstance(error, FailedPrecondition)

    def _failing_failed(self, exc: BaseException, error: CoordinatorError) -> None:
        """Failing the item for the block's exception failed too: the block's exception is
        the one to see, with a note of this."""
        if hasattr(exc, "add_note"):
            exc.add_note(f"failing work item {self.item_id} failed too: {error}")


# ---- A2A ----

A2A_METADATA: Tuple[Tuple[str, str], ...] = (("a2a-version", "1.0"),)


def a2a_send(agent: str, text: str, *, context_id: Optional[str], task_id: Optional[str],
             data: Optional[Mapping[str, Any]],
             metadata: Optional[Mapping[str, Any]]) -> Call[a2a_pb2.Task]:
    request = a2a_pb2.SendMessageRequest(tenant=check_str("agent", agent))
    message = request.message
    message.message_id = str(uuid.uuid4())
    message.role = a2a_pb2.ROLE_USER
    if context_id is not None:
        message.context_id = check_id("context_id", context_id)
    if task_id is not None:
        message.task_id = check_id("task_id", task_id)
    if check_str("text", text):
        message.parts.add().text = text
    if data is not None:
        message.parts.add().data.CopyFrom(_struct_value("data", data))
    if not message.parts:
        raise ValueError("a message needs text or data")
    if metadata is not None:
        message.metadata.CopyFrom(_struct("metadata", metadata))
    # The gateway stores the message and answers at once; waiting is done by subscribing.
    request.configuration.return_immediately = True
    return Call(A2A, "SendMessage", request, lambda response: response.task,
                metadata=A2A_METADATA)


def _struct(name: str, value: Any) -> struct_pb2.Struct:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, not {type(value).__name__}")
    struct = struct_pb2.Struct()
    try:
        json_format.ParseDict(dict(value), struct)
    except (json_format.ParseError, TypeError, ValueError) as error:
        raise ValueError(f"{name} must be JSON-like: {error}") from None
    return struct


def _struct_value(name: str, value: Any) -> struct_pb2.Value:
    result = struct_pb2.Value()
    result.struct_value.CopyFrom(_struct(name, value))
    return result


def a2a_get(task_id: str, history_length: Optional[int]) -> Call[A2ATask]:
    request = a2a_pb2.GetTaskRequest(id=check_id("task_id", task_id))
    if history_length is not None:
        request.history_length = check_int("history_length", history_length, 0, INT32_MAX)
    return Call(A2A, "GetTask", request, A2ATask.from_proto, metadata=A2A_METADATA)


def a2a_cancel(task_id: str) -> Call[A2ATask]:
    request = a2a_pb2.CancelTaskRequest(id=check_id("task_id", task_id))
    return Call(A2A, "CancelTask", request, A2ATask.from_proto, metadata=A2A_METADATA)


def a2a_tasks(context_id: Optional[str], page_size: Optional[int]) -> Listing[A2ATask]:
    request = a2a_pb2.ListTasksRequest()
    if context_id is not None:
        request.context_id = check_id("context_id", context_id)
    if page_size is not None:
        request.page_size = check_int("page_size", page_size, 1, 100)
    return Listing(A2A, "ListTasks", request, "tasks", A2ATask.from_proto,
                   metadata=A2A_METADATA)


# Codes after which A2A.wait reads the task and, unless it is done, subscribes again.
_SUBSCRIBE_AGAIN = frozenset({
    grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
    grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED,
})


def _event_state(event: a2a_pb2.StreamResponse) -> int:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return event.task.status.state
    if kind == "status_update":
        return event.status_update.status.state
    if kind == "message":
        return a2a_pb2.TASK_STATE_COMPLETED
    return a2a_pb2.TASK_STATE_UNSPECIFIED


class TaskWait:
    """A2A.wait's decisions: subscribe to the task's events (subscribe()) until one ends it
    (ends()), read the task, and unless it is done subscribe again after pause(), until the
    timeout is spent. A subscription that fails (refused()) is read past when the coordinator
    was unreachable, draining, out of streams or out of time."""

    _NAME = "A2AService.SubscribeToTask"

    def __init__(self, task_id: str, timeout: Seconds) -> None:
        self.task_id = check_id("task_id", task_id)
        self._timeout = timeout
        self._deadline = time.monotonic() + check_positive_seconds("timeout", timeout)
        self._backoff = FIRST_BACKOFF
        self._refused: Any = None

    def subscribe(self, stub: Any, metadata: Metadata) -> Any:
        """The stream of the next subscription, on an A2AService stub (grpc or grpc.aio),
        with the caller's metadata."""
        self._refused = None
        return stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id=self.task_id),
                                    timeout=_time_left(self._deadline),
                                    metadata=metadata + A2A_METADATA)

    @staticmethod
    def ends(event: a2a_pb2.StreamResponse) -> bool:
        """Whether the event leaves the task ended or asking for input."""
        return _event_state(event) in A2A_STOP_STATES

    def refused(self, error: Any) -> None:
        """A subscription failed with `error` (a grpc.RpcError, sync or aio): raises its
        CoordinatorError unless the task is to be read and subscribed to again."""
        # FAILED_PRECONDITION: the task ended before the subscription (read it).
        # Unreachable, cancelled by a draining server, too many streams, out of time:
        # read the task, and subscribe again while time is left.
        if error.code() not in _SUBSCRIBE_AGAIN:
            raise from_rpc_error(error, self._NAME) from None
        self._refused = error

    def pause(self) -> float:
        """The pause before subscribing again, the task read after the subscription not being
        done. Raises when the subscription was refused for a task that has ended, or when the
        time is spent (DeadlineExceeded)."""
        if self._refused is not None and \
                self._refused.code() == grpc.StatusCode.FAILED_PRECONDITION:
            raise from_rpc_error(self._refused, self._NAME)
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded(f"task {self.task_id} did not end within {self._timeout}s",
                                   grpc.StatusCode.DEADLINE_EXCEEDED, self._NAME)
        pause = min(self._backoff, left)
        self._backoff = next_backoff(self._backoff)
        return pause


# ---- Agents ----

def register_agent(name: str, endpoint: str, card_url: str, description: str) -> Call[Agent]:
    agent = agent_registry_pb2.Agent(name=check_id("name", name),
                                     endpoint=check_str("endpoint", endpoint),
                                     card_url=check_str("card_url", card_url))
    if check_str("description", description):
        agent.card.name = name
        agent.card.description = description
    if not endpoint and not card_url:
        raise ValueError("register an agent with an endpoint (host:port) or a card_url")
    return Call(AGENTS, "RegisterAgent", agent_registry_pb2.RegisterAgentRequest(agent=agent),
                Agent.from_proto)


def get_agent(name: str) -> Call[Agent]:
    request = agent_registry_pb2.GetAgentRequest(name=check_id("name", name))
    return Call(AGENTS, "GetAgent", request, Agent.from_proto)


def list_agents() -> Listing[Agent]:
    return Listing(AGENTS, "ListAgents", agent_registry_pb2.ListAgentsRequest(), "agents",
                   Agent.from_proto)


def delete_agent(name: str) -> Call[None]:
    request = agent_registry_pb2.DeleteAgentRequest(name=check_id("name", name))
    return Call(AGENTS, "DeleteAgent", request, _nothing)

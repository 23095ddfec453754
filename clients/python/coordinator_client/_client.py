"""The blocking client: Coordinator and the services it groups.

Every call has a deadline: the Coordinator's `timeout` bounds one logical call, including its
retries. A call that fails with UNAVAILABLE (the coordinator is restarting, or not there yet) is
retried with backoff (50 ms doubling to 1 s) until that time is spent; then Unavailable is
raised. Any other failure raises its CoordinatorError subclass at once.

A retried write is sent again as a whole. gRPC answers UNAVAILABLE before the server has the
call when it cannot connect or when the server is draining (SIGTERM), which is when retrying
matters; a connection that breaks while the server works on a call (kill -9) leaves its outcome
unknown, and then a retried RecordCommand or AppendMessage may count twice. Callers that must
count exactly once read the count first (the example in examples/python/rcabench_state.py
does).

All objects are safe to use from several threads.
"""

from __future__ import annotations

import threading
import time
from typing import (
    Any,
    Callable,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

import grpc

from coordinator_client import _requests as rq
from coordinator_client._channel import (
    FIRST_BACKOFF,
    HEALTH_METHOD,
    Metadata,
    PathOrPem,
    channel_options,
    credentials_for,
    decode_health_response,
    encode_health_request,
    jitter,
    load_ca,
    load_token,
    metadata_for,
    RETRIED_CODES,
    next_backoff,
    retries_spent,
    target_of,
)
from coordinator_client._errors import (
    Cancelled,
    Conflict,
    CoordinatorError,
    DeadlineExceeded,
    FailedPrecondition,
    NotFound,
    NothingToClaim,
    Unavailable,
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
    ContextFields,
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
    check_positive_seconds,
    check_str,
    seconds_of,
    task_id_of,
    time_of,
)

T = TypeVar("T")


class _Transport:
    """The channel, the metadata every call carries, and the retrying call."""

    def __init__(self, target: str, token: Optional[str], token_file: Any,
                 tls_ca: Optional[PathOrPem], tls_server_name: Optional[str], timeout: Seconds,
                 options: Optional[Sequence[Tuple[str, Any]]]) -> None:
        self.target = target_of(target)
        self.timeout = check_positive_seconds("timeout", timeout)
        self.metadata: Metadata = metadata_for(load_token(token, token_file))
        credentials = credentials_for(load_ca(tls_ca))
        opts = channel_options(tls_server_name, options)
        self.closed = False
        self.channel = (grpc.secure_channel(self.target, credentials, options=opts)
                        if credentials is not None else
                        grpc.insecure_channel(self.target, options=opts))

    def call(self, method: Callable[..., T], name: str, request: Any, *,
             timeout: Optional[float] = None, metadata: Metadata = ()) -> T:
        """Calls a unary method; retries UNAVAILABLE with backoff within the timeout."""
        budget = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + budget
        backoff = FIRST_BACKOFF
        attempts = 0
        retried: Optional[Tuple[grpc.StatusCode, str]] = None
        while True:
            attempts += 1
            remaining = deadline - time.monotonic()
            try:
                return method(request, timeout=max(remaining, 0.001),
                              metadata=self.metadata + metadata)
            except grpc.RpcError as error:
                code, details = error.code(), error.details()  # type: ignore[attr-defined]
                if code in RETRIED_CODES and not self.closed:
                    retried = (code, details)
                    pause = min(backoff, deadline - time.monotonic())
                    if pause > 0:
                        time.sleep(pause)
                        backoff = next_backoff(backoff)
                        continue
                if retried is not None and code in RETRIED_CODES | {
                        grpc.StatusCode.DEADLINE_EXCEEDED}:
                    raise retries_spent(retried, attempts, budget, name) from None
                raise from_rpc_error(error, name) from None

    def pages(self, method: Callable[..., Any], name: str, request: Any,
              field: str) -> Iterator[Any]:
        """The items of every page of a listing, fetched as they are consumed."""
        request_copy = type(request)()
        request_copy.CopyFrom(request)
        while True:
            response = self.call(method, name, request_copy)
            yield from getattr(response, field)
            if not response.next_page_token:
                return
            request_copy.page_token = response.next_page_token

    def close(self) -> None:
        self.closed = True
        self.channel.close()


class Coordinator:
    """A connection to the coordinator.

        with Coordinator("127.0.0.1:50051", token=None, tls_ca=None, timeout=10.0) as c:
            ctx = c.contexts.create("eval-1", agent="green", workspace_dir="/ws/eval-1")

    Args:
        target: host:port of the coordinator's gRPC port.
        token: bearer token sent as "authorization: Bearer <token>" on every call (default:
            none). token_file: read it from this file instead, as coordctl's
            --auth-token-file (the file holds the token alone).
        tls_ca: connect with TLS, trusting these PEM root certificates: a file path (as
            coordctl's --tls-ca-file) or the PEM bytes. Default: plaintext.
        timeout: seconds one call may take, its UNAVAILABLE retries included (default 10).
        tls_server_name: the name to check the server's certificate against, when it is not
            the one in target.
        options: further gRPC channel options.
    """

    def __init__(self, target: str = "127.0.0.1:50051", token: Optional[str] = None,
                 tls_ca: Optional[PathOrPem] = None, timeout: Seconds = 10.0, *,
                 token_file: Optional[Any] = None, tls_server_name: Optional[str] = None,
                 options: Optional[Sequence[Tuple[str, Any]]] = None) -> None:
        self._t = _Transport(target, token, token_file, tls_ca, tls_server_name, timeout,
                             options)
        self.contexts = Contexts(self._t)
        self.conversations = Conversations(self._t)
        self.tasks = Tasks(self._t)
        self.breaker = Breaker(self._t)
        self.work = Work(self._t)
        self.a2a = A2A(self._t)
        self.agents = Agents(self._t)

    @property
    def target(self) -> str:
        """host:port of the coordinator."""
        return self._t.target

    @property
    def timeout(self) -> float:
        """Seconds one call may take, retries included."""
        return self._t.timeout

    def health(self, service: str = "") -> str:
        """grpc.health.v1 status of the server ("" ) or of one service: "SERVING",
        "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN"."""
        method = self._t.channel.unary_unary(
            HEALTH_METHOD, request_serializer=encode_health_request,
            response_deserializer=decode_health_response)
        return self._t.call(method, "Health.Check", check_str("service", service))

    def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        self._t.close()

    def __enter__(self) -> "Coordinator":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Coordinator({self.target!r})"


# ---- Contexts ----

class Context(ContextFields):
    """A TaskContext as last read or written, with the calls that change it.

    The fields (context_id, agent, workspace_dir, labels, command_count, failed_commands,
    version, ...) are those of the last answer; record_command, update and refresh replace
    them and return this same object.
    """

    __slots__ = ("_contexts",)

    def __init__(self, contexts: "Contexts", proto: context_pb2.TaskContext) -> None:
        super().__init__(proto)
        self._contexts = contexts

    def record_command(self, command: str, exit_code: int = 0,
                       duration: Optional[Seconds] = None,
                       output_digest: str = "") -> "Context":
        """Counts one command (and a failure when exit_code != 0) and stores its record,
        atomically. duration: seconds or a timedelta. Returns this context, updated."""
        request = rq.record_command(self.context_id, command, exit_code, duration,
                                    output_digest)
        response = self._contexts._t.call(self._contexts._stub.RecordCommand,
                                          "ContextService.RecordCommand", request)
        self._proto = response.context
        return self

    def update(self, *, agent: Optional[str] = None, external_task_id: Optional[str] = None,
               workspace_dir: Optional[str] = None, shared_dir: Optional[str] = None,
               environment_handle: Optional[str] = None,
               status: Optional[Union[str, ContextStatus]] = None,
               labels: Optional[Mapping[str, Optional[str]]] = None,
               replace_labels: bool = False) -> "Context":
        """Changes the given fields (None leaves a field as it is).

        labels are merged into the current labels (a None value removes that label), or
        replace them all with replace_labels=True. The change is made at the version this
        object holds; when someone else changed the context in between (Conflict), the context
        is read again and the change made anew, until it lands or the timeout is spent, so
        concurrent updates never lose one another. Returns this context, updated.
        """
        changes = rq.context_changes(
            agent=agent, external_task_id=external_task_id, workspace_dir=workspace_dir,
            shared_dir=shared_dir, environment_handle=environment_handle, status=status,
            labels=labels, replace_labels=replace_labels)
        if not changes:
            return self
        t = self._contexts._t
        deadline = time.monotonic() + t.timeout
        current = self._proto
        attempt = 0
        while True:
            request = rq.update_context(current, changes, replace_labels)
            try:
                self._proto = t.call(self._contexts._stub.UpdateContext,
                                     "ContextService.UpdateContext", request,
                                     timeout=max(deadline - time.monotonic(), 0.001))
                return self
            except Conflict:
                if time.monotonic() >= deadline:
                    raise
            attempt += 1
            time.sleep(jitter(attempt))
            current = t.call(self._contexts._stub.GetContext, "ContextService.GetContext",
                             context_pb2.GetContextRequest(context_id=self.context_id),
                             timeout=max(deadline - time.monotonic(), 0.001))

    def refresh(self) -> "Context":
        """Reads the context again. NotFound when it was deleted."""
        self._proto = self._contexts._get(self.context_id)
        return self

    def delete(self) -> None:
        """Deletes the context with its command records and conversation."""
        self._contexts.delete(self.context_id)

    def commands(self, page_size: Optional[int] = None) -> Iterator[CommandRecord]:
        """The recorded commands in order, paged transparently."""
        request = context_pb2.ListCommandsRequest(context_id=self.context_id,
                                                  page_size=rq.page_size_arg(page_size))
        for record in self._contexts._t.pages(self._contexts._stub.ListCommands,
                                              "ContextService.ListCommands", request,
                                              "commands"):
            yield CommandRecord.from_proto(record)

    @property
    def conversation(self) -> "Conversation":
        """The conversation kept under this context_id."""
        return Conversation(self._contexts._t, self.context_id)


class Contexts:
    """The TaskContexts, by context_id, read and written like a dict.

        ctx = contexts.create("eval-1", agent="green", labels={"arvo_id": "14368"})
        "eval-1" in contexts; contexts["eval-1"]; contexts.get("eval-1")
        for ctx in contexts.values(agent="green", status="active"): ...
        del contexts["eval-1"]

    Mapping access raises KeyError (NotFound) for a missing context. Iteration pages
    through ListContexts as it goes; len() reads every page.
    """

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = context_pb2_grpc.ContextServiceStub(transport.channel)

    def create(self, context_id: str, *, agent: str = "", external_task_id: str = "",
               workspace_dir: str = "", shared_dir: str = "", environment_handle: str = "",
               status: Optional[Union[str, ContextStatus]] = None,
               labels: Optional[Mapping[str, str]] = None,
               parties: Optional[Iterable[str]] = None) -> Context:
        """Creates a context (status "active" unless given). AlreadyExists when the id is
        taken."""
        request = rq.create_context(
            context_id, agent=agent, external_task_id=external_task_id,
            workspace_dir=workspace_dir, shared_dir=shared_dir,
            environment_handle=environment_handle, status=status, labels=labels,
            parties=parties)
        return Context(self, self._t.call(self._stub.CreateContext,
                                          "ContextService.CreateContext", request))

    def _get(self, context_id: str) -> context_pb2.TaskContext:
        request = context_pb2.GetContextRequest(context_id=check_id("context_id", context_id))
        return self._t.call(self._stub.GetContext, "ContextService.GetContext", request)

    def __getitem__(self, context_id: str) -> Context:
        return Context(self, self._get(context_id))

    def get(self, context_id: str, default: Optional[Context] = None) -> Optional[Context]:
        """The context, or default (None) when there is none."""
        try:
            return self[context_id]
        except NotFound:
            return default

    def __contains__(self, context_id: object) -> bool:
        return self.get(context_id) is not None  # type: ignore[arg-type]

    def delete(self, context_id: str, version: int = 0) -> None:
        """Deletes a context with its command records and conversation. With a version, only
        when the context is still at it (else Conflict). NotFound when there is none."""
        request = context_pb2.DeleteContextRequest(
            context_id=check_id("context_id", context_id),
            version=check_int("version", version, 0, INT64_MAX))
        self._t.call(self._stub.DeleteContext, "ContextService.DeleteContext", request)

    def __delitem__(self, context_id: str) -> None:
        self.delete(context_id)

    def values(self, agent: Optional[str] = None,
               status: Optional[Union[str, ContextStatus]] = None,
               page_size: Optional[int] = None) -> Iterator[Context]:
        """Every context (of one agent, in one status), in context_id order, paged
        transparently (page_size per call; the server's default when None)."""
        request = rq.list_contexts(agent, status, page_size)
        for proto in self._t.pages(self._stub.ListContexts, "ContextService.ListContexts",
                                   request, "contexts"):
            yield Context(self, proto)

    def keys(self, agent: Optional[str] = None,
             status: Optional[Union[str, ContextStatus]] = None) -> Iterator[str]:
        """The context_ids of values(agent, status)."""
        return (c.context_id for c in self.values(agent, status))

    def items(self, agent: Optional[str] = None,
              status: Optional[Union[str, ContextStatus]] = None
              ) -> Iterator[Tuple[str, Context]]:
        """(context_id, context) pairs of values(agent, status)."""
        return ((c.context_id, c) for c in self.values(agent, status))

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def __len__(self) -> int:
        return sum(1 for _ in self.values(page_size=1000))


# ---- Conversations ----

class Conversation:
    """The conversation kept under one context_id: one record per message, with step_count
    (the agent's messages), message_count and total_tokens. It begins with its first append; reading one that has no messages
    raises NotFound (a KeyError)."""

    def __init__(self, transport: _Transport, context_id: str) -> None:
        self._t = transport
        self._stub = conversation_pb2_grpc.ConversationServiceStub(transport.channel)
        self.context_id = check_id("context_id", context_id)

    def append(self, role: Union[str, Role], text: str, tokens: int = 0) -> Totals:
        """Appends one message ("user", "agent" or "system") and returns the conversation's
        Totals after it: (step_count, total_tokens), and message_count, which is the
        message's seq. An "agent" message is one more step."""
        response = self._t.call(self._stub.AppendMessage, "ConversationService.AppendMessage",
                                rq.append_message(self.context_id, role, text, tokens))
        return Totals(response.step_count, response.total_tokens, response.message_count)

    def _pages(self, tail: Optional[int],
               page_size: Optional[int]) -> Iterator[conversation_pb2.GetConversationResponse]:
        request = rq.get_conversation(self.context_id, tail, page_size)
        while True:
            response = self._t.call(self._stub.GetConversation,
                                    "ConversationService.GetConversation", request)
            yield response
            if not response.next_page_token:
                return
            request.page_token = response.next_page_token

    def messages(self, tail: Optional[int] = None,
                 page_size: Optional[int] = None) -> List[Message]:
        """Every message in order, or the last `tail` of them."""
        return [Message.from_proto(m) for page in self._pages(tail, page_size)
                for m in page.messages]

    def __iter__(self) -> Iterator[Message]:
        """Every message in order, a page at a time."""
        for page in self._pages(None, None):
            for message in page.messages:
                yield Message.from_proto(message)

    def totals(self) -> Totals:
        """Totals now: (step_count, total_tokens), and message_count."""
        page = next(self._pages(1, 1))
        return Totals(page.step_count, page.total_tokens, page.message_count)

    def __repr__(self) -> str:
        return f"Conversation({self.context_id!r})"


class Conversations:
    """Conversations by context_id: conversations[id] is the conversation's handle (no call:
    a conversation begins with its first append); `id in conversations` says whether it has
    messages."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport

    def __getitem__(self, context_id: str) -> Conversation:
        return Conversation(self._t, context_id)

    def __contains__(self, context_id: object) -> bool:
        try:
            Conversation(self._t, context_id).totals()  # type: ignore[arg-type]
            return True
        except NotFound:
            return False

    def get(self, context_id: str) -> Optional[Conversation]:
        """The conversation, or None when it has no messages."""
        return Conversation(self._t, context_id) if context_id in self else None


# ---- Retry state ----

class Task:
    """The retry state of one task (TaskStateService), by its id.

    id is the first 8 hex characters of the SHA-256 of the description; created says
    whether init made the state (None when the handle came from tasks[id]). tier and model
    are read from the coordinator each time.
    """

    def __init__(self, transport: _Transport, task_id: str,
                 created: Optional[bool] = None) -> None:
        self._t = transport
        self._stub = task_state_pb2_grpc.TaskStateServiceStub(transport.channel)
        self.id = check_id("task_id", task_id)
        self.created = created

    def _call(self, name: str, request: Any) -> Any:
        return self._t.call(getattr(self._stub, name), f"TaskStateService.{name}", request)

    def attempt(self) -> int:
        """Counts an attempt; returns the attempt count. FailedPrecondition when the breaker
        blocked the task."""
        return self._call("IncrementAttempt",
                          task_state_pb2.IncrementAttemptRequest(task_id=self.id)).attempt_count

    def fail(self, error: str) -> TaskFailure:
        """Records a failure of the current attempt on the current tier."""
        request = task_state_pb2.RecordFailureRequest(task_id=self.id,
                                                      error=check_str("error", error))
        return TaskFailure.from_proto(self._call("RecordFailure", request).failure)

    def escalate(self, reason: str = "", steps: int = 1) -> int:
        """Climbs the tier ladder (capped at the top) and logs why; returns the new tier."""
        return self._call("Escalate", rq.escalate(self.id, reason, steps)).model_tier

    @property
    def tier(self) -> int:
        """The current tier, 1 = the first model of the ladder."""
        return self._call("GetTier", task_state_pb2.GetTierRequest(task_id=self.id)).model_tier

    @property
    def model(self) -> str:
        """The model of the current tier."""
        return self._call("GetTier", task_state_pb2.GetTierRequest(task_id=self.id)).model

    def failure_context(self, tail: Optional[int] = None) -> str:
        """The failures as prompt text ("Previous failures:" and a line each; "" if none)."""
        request = task_state_pb2.GetFailureContextRequest(task_id=self.id, tail=rq.tail_arg(tail))
        return self._call("GetFailureContext", request).text

    def quality_gate(self, check: str, passed: bool, detail: str = "") -> QualityGateResult:
        """Records a quality-gate verdict."""
        request = task_state_pb2.RecordQualityGateRequest(
            task_id=self.id, check=check_id("check", check),
            passed=check_bool("passed", passed), detail=check_str("detail", detail))
        return QualityGateResult.from_proto(self._call("RecordQualityGate", request).result)

    def state(self) -> TaskState:
        """The whole state with its histories."""
        return TaskState.from_proto(
            self._call("GetTaskState", task_state_pb2.GetTaskStateRequest(task_id=self.id)))

    def get(self, field: str) -> str:
        """One field as text (known fields, or a custom one). NotFound for an unset custom
        field."""
        request = task_state_pb2.GetTaskFieldRequest(task_id=self.id,
                                                     field=check_id("field", field))
        return self._call("GetTaskField", request).value

    def set(self, field: str, value: Union[str, int]) -> str:
        """Sets a known or custom field; returns it as stored."""
        request = task_state_pb2.SetTaskFieldRequest(
            task_id=self.id, field=check_id("field", field), value=rq.field_value(value))
        return self._call("SetTaskField", request).value

    def cleanup(self) -> bool:
        """Removes the task's state and breaker records (admin); True when it was blocked."""
        return self._call("CleanupTask",
                          task_state_pb2.CleanupTaskRequest(task_id=self.id)).was_blocked

    def __repr__(self) -> str:
        return f"Task({self.id!r})"


class Tasks:
    """Retry state of tasks, by task id: init(description) makes (or finds) a task's state;
    tasks[id] raises KeyError (NotFound) for an unknown one."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = task_state_pb2_grpc.TaskStateServiceStub(transport.channel)

    @staticmethod
    def id_for(description: str) -> str:
        """The id init gives this description: sha256(description)[:8] in hex."""
        return task_id_of(description)

    def init(self, description: str) -> Task:
        """Returns the description's task, creating its state when there is none."""
        request = task_state_pb2.InitTaskRequest(description=check_id("description",
                                                                      description))
        response = self._t.call(self._stub.InitTask, "TaskStateService.InitTask", request)
        return Task(self._t, response.task_id, response.created)

    def __getitem__(self, task_id: str) -> Task:
        request = task_state_pb2.GetTierRequest(task_id=check_id("task_id", task_id))
        self._t.call(self._stub.GetTier, "TaskStateService.GetTier", request)
        return Task(self._t, task_id)

    def get(self, task_id: str) -> Optional[Task]:
        """The task's handle, or None when it has no state."""
        try:
            return self[task_id]
        except NotFound:
            return None

    def __contains__(self, task_id: object) -> bool:
        return self.get(task_id) is not None  # type: ignore[arg-type]

    def values(self, page_size: Optional[int] = None) -> Iterator[TaskSummary]:
        """Every task in task-id order, paged transparently."""
        request = task_state_pb2.ListTasksRequest(page_size=rq.page_size_arg(page_size))
        for summary in self._t.pages(self._stub.ListTasks, "TaskStateService.ListTasks",
                                     request, "tasks"):
            yield TaskSummary.from_proto(summary)

    def __iter__(self) -> Iterator[str]:
        return (s.task_id for s in self.values())


# ---- Breaker ----

class Breaker:
    """The loop breaker. Each method takes a task id or a Task."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = breaker_pb2_grpc.BreakerServiceStub(transport.channel)

    def _call(self, name: str, request: Any) -> Any:
        return self._t.call(getattr(self._stub, name), f"BreakerService.{name}", request)

    def check(self, task: Union[str, Task], *, repeated_error: Optional[int] = None,
              stuck_tier: Optional[int] = None,
              quality_gate: Optional[int] = None) -> Optional[str]:
        """None, or the loop the task is in: "repeated_error", "stuck_tier" or
        "quality_gate_loop". The thresholds override the server's for this call."""
        response = self._call("CheckLoop", rq.loop_request(
            breaker_pb2.CheckLoopRequest, task, repeated_error, stuck_tier, quality_gate))
        return response.pattern_type if response.looping else None

    def analyze(self, task: Union[str, Task], *, repeated_error: Optional[int] = None,
                stuck_tier: Optional[int] = None,
                quality_gate: Optional[int] = None) -> LoopAnalysis:
        """The full analysis with a suggested action."""
        return LoopAnalysis.from_proto(self._call("AnalyzeLoop", rq.loop_request(
            breaker_pb2.AnalyzeLoopRequest, task, repeated_error, stuck_tier, quality_gate)))

    def force_escalate(self, task: Union[str, Task], reason: str = "") -> ForceEscalation:
        """Jumps two tiers, or changes nothing near the top (human_intervention_required)."""
        return ForceEscalation.from_proto(self._call("ForceEscalate",
                                                     rq.breaker_force(task, reason)))

    def break_task(self, task: Union[str, Task], reason: str = "") -> BlockedTask:
        """Blocks the task for a person, with a stored summary. AlreadyExists when it is
        blocked already."""
        request = breaker_pb2.BreakRequest(task_id=rq.task_id_arg(task),
                                           reason=check_str("reason", reason))
        response = self._call("Break", request)
        return BlockedTask.from_proto(response.blocked, response.summary)

    def status(self) -> List[BlockedTask]:
        """Every blocked task, in task-id order."""
        response = self._call("GetBreakerStatus", breaker_pb2.GetBreakerStatusRequest())
        return [BlockedTask.from_proto(b) for b in response.blocked_tasks]

    def summary(self, task: Union[str, Task]) -> str:
        """The summary stored when the task was blocked."""
        return self._call("GetBreakSummary", breaker_pb2.GetBreakSummaryRequest(
            task_id=rq.task_id_arg(task))).summary

    def cleanup(self, task: Union[str, Task]) -> bool:
        """Unblocks and forgets the task (admin); True when it was blocked."""
        return self._call("Cleanup", breaker_pb2.CleanupBreakerRequest(
            task_id=rq.task_id_arg(task))).was_blocked

    def log(self, tail: Optional[int] = None) -> List[BreakerLogEntry]:
        """The breaker's log, oldest first (the last `tail` entries)."""
        request = breaker_pb2.ReadBreakerLogRequest(tail=rq.tail_arg(tail))
        return [BreakerLogEntry.from_proto(e) for e in self._t.pages(
            self._stub.ReadBreakerLog, "BreakerService.ReadBreakerLog", request, "entries")]


# ---- Work ----

class ClaimedItem:
    """A work item held under a lease. As a context manager it heartbeats in the background
    (every third of the lease) while the block runs, completes the item when the block ends
    and fails it (retryable) when the block raises:

        with coordinator.work.claim(run_id, worker="w1", ttl=30) as item:
            item.checkpoint("step 1 done")
            item.summary = "merged"          # sent with the completion

    When a heartbeat is refused (the lease was lost to another worker), `lost` becomes true
    and the completion at the end raises FailedPrecondition: stop working on the item.
    """

    def __init__(self, work: "Work", response: work_pb2.ClaimResponse, ttl: float) -> None:
        self._work = work
        self.item = WorkItem.from_proto(response.item)
        self.lease: str = response.lease
        self.epoch: int = response.epoch
        self.lease_expire_time = time_of(response, "lease_expire_time")
        self.ttl = ttl
        self.summary = ""
        self.progress: Optional[str] = None
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._finished = False
        self._heartbeats: Optional[threading.Thread] = None
        self.heartbeat_error: Optional[CoordinatorError] = None

    @property
    def run_id(self) -> str:
        """The run the item belongs to."""
        return self.item.run_id

    @property
    def item_id(self) -> str:
        """The claimed item's id."""
        return self.item.item_id

    @property
    def lost(self) -> bool:
        """True once the coordinator refused this lease (the item is someone else's now)."""
        return self._lost.is_set()

    def _lease_call(self, name: str, request: Any) -> Any:
        try:
            return self._work._call(name, request)
        except FailedPrecondition:
            self._lost.set()
            raise

    def heartbeat(self, progress: Optional[str] = None,
                  ttl: Optional[Seconds] = None) -> None:
        """Extends the lease (by its length, or a new ttl) and stores a progress payload."""
        response = self._lease_call("Heartbeat", rq.heartbeat(self.lease, progress, ttl))
        self.lease_expire_time = time_of(response, "lease_expire_time")

    def checkpoint(self, note: str) -> WorkItem:
        """Stores a note for whoever claims the item next."""
        request = work_pb2.CheckpointRequest(lease=self.lease, note=check_str("note", note))
        return WorkItem.from_proto(self._lease_call("Checkpoint", request))

    def complete(self, summary: Optional[str] = None) -> WorkItem:
        """Marks the item done (safe to repeat with the same lease)."""
        request = work_pb2.CompleteRequest(
            lease=self.lease, summary=check_str("summary", self.summary if summary is None
                                                else summary))
        self._finished = True
        return WorkItem.from_proto(self._lease_call("Complete", request))

    def fail(self, error: str, retryable: bool = True) -> WorkItem:
        """Records a failed attempt: retried after a backoff (retryable), or failed for
        good."""
        request = work_pb2.FailRequest(lease=self.lease, error=check_id("error", error),
                                       retryable=check_bool("retryable", retryable))
        self._finished = True
        return WorkItem.from_proto(self._lease_call("Fail", request))

    def _beat(self) -> None:
        interval = self.ttl / 3
        while not self._stop.wait(interval):
            try:
                self.heartbeat(self.progress)
            except FailedPrecondition as error:
                self.heartbeat_error = error
                return
            except CoordinatorError as error:  # unreachable for a whole timeout: try again
                self.heartbeat_error = error

    def __enter__(self) -> "ClaimedItem":
        self._heartbeats = threading.Thread(target=self._beat, daemon=True,
                                            name=f"heartbeat {self.item_id}")
        self._heartbeats.start()
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        self._stop.set()
        if self._heartbeats is not None:
            self._heartbeats.join()
        if self._finished:
            return
        if exc is None:
            self.complete()
            return
        try:
            self.fail(rq.describe_exception(exc))
        except CoordinatorError as error:  # the body's exception is the one to see
            if hasattr(exc, "add_note"):
                exc.add_note(f"failing work item {self.item_id} failed too: {error}")

    def __repr__(self) -> str:
        return f"ClaimedItem({self.run_id!r}, {self.item_id!r}, epoch={self.epoch})"


class Work:
    """Runs of work items handed to workers under leases (docs/work.md)."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = work_pb2_grpc.WorkServiceStub(transport.channel)

    def _call(self, name: str, request: Any, timeout: Optional[float] = None) -> Any:
        return self._t.call(getattr(self._stub, name), f"WorkService.{name}", request,
                            timeout=timeout)

    def create_run(self, items: Iterable[Mapping[str, Any]], *, run_id: str = "",
                   kind: str = "workstreams", specs_dir: str = "", base_branch: str = "",
                   feature: str = "", max_attempts: Optional[int] = None,
                   backoff_base: Optional[Seconds] = None,
                   backoff_max: Optional[Seconds] = None,
                   non_retryable_errors: Optional[Iterable[str]] = None) -> Run:
        """Creates a run (admin). items: dicts with WorkItem's field names (item_id or id,
        title, description, level, dependencies, owned_files, branch, worktree, metadata)."""
        return Run.from_proto(self._call("CreateRun", rq.create_run(
            items, run_id=run_id, kind=kind, specs_dir=specs_dir, base_branch=base_branch,
            feature=feature, max_attempts=max_attempts, backoff_base=backoff_base,
            backoff_max=backoff_max, non_retryable_errors=non_retryable_errors)))

    def import_task_graph(self, graph: Union[str, Mapping[str, Any]], *, run_id: str = "",
                          feature: str = "", max_attempts: Optional[int] = None,
                          backoff_base: Optional[Seconds] = None,
                          backoff_max: Optional[Seconds] = None,
                          non_retryable_errors: Optional[Iterable[str]] = None) -> Run:
        """Creates a task-graph run from task-graph.json (its text, or the parsed dict)."""
        return Run.from_proto(self._call("ImportTaskGraph", rq.import_task_graph(
            graph, run_id=run_id, feature=feature, max_attempts=max_attempts,
            backoff_base=backoff_base, backoff_max=backoff_max,
            non_retryable_errors=non_retryable_errors)))

    def run(self, run_id: str) -> Run:
        """A run with its derived status and counts."""
        return Run.from_proto(self._call("GetRun", work_pb2.GetRunRequest(
            run_id=check_id("run_id", run_id))))

    def runs(self) -> Iterator[Run]:
        """Every run in run_id order."""
        for run in self._t.pages(self._stub.ListRuns, "WorkService.ListRuns",
                                 work_pb2.ListRunsRequest(), "runs"):
            yield Run.from_proto(run)

    def items(self, run_id: str) -> Iterator[WorkItem]:
        """A run's items in item_id order."""
        request = work_pb2.ListItemsRequest(run_id=check_id("run_id", run_id))
        for item in self._t.pages(self._stub.ListItems, "WorkService.ListItems", request,
                                  "items"):
            yield WorkItem.from_proto(item)

    def item(self, run_id: str, item_id: str) -> WorkItem:
        """One item of a run, as stored now."""
        return WorkItem.from_proto(self._call("GetItem", work_pb2.GetItemRequest(
            run_id=check_id("run_id", run_id), item_id=check_id("item_id", item_id))))

    def retry(self, run_id: str, item_id: str) -> WorkItem:
        """Sends a blocked or failed item back to pending (admin)."""
        return WorkItem.from_proto(self._call("Retry", work_pb2.RetryRequest(
            run_id=check_id("run_id", run_id), item_id=check_id("item_id", item_id))))

    def try_claim(self, run_id: str, worker: str, ttl: Seconds = 30.0) -> Optional[ClaimedItem]:
        """One claimable item under a lease of ttl seconds, or None."""
        request = rq.claim(run_id, worker, ttl)
        response = self._call("Claim", request)
        if not response.HasField("item"):
            return None
        return ClaimedItem(self, response, seconds_of(request.lease_ttl))

    def claim(self, run_id: str, worker: str, ttl: Seconds = 30.0, *,
              wait: Seconds = 0.0) -> ClaimedItem:
        """Claims an item under a lease of ttl seconds; use it in a with-statement. With
        wait, keeps asking for up to that many seconds (at the backoff the run names). Raises
        NothingToClaim when there is no item (at once when the run is stalled)."""
        give_up = time.monotonic() + check_positive_seconds("wait", wait) if wait else 0.0
        request = rq.claim(run_id, worker, ttl)
        while True:
            response = self._call("Claim", request)
            if response.HasField("item"):
                return ClaimedItem(self, response, seconds_of(request.lease_ttl))
            retry_after = (seconds_of(response.retry_after)
                           if response.HasField("retry_after") else None)
            left = give_up - time.monotonic()
            if response.stalled or left <= 0:
                raise NothingToClaim(run_id, response.stalled, retry_after)
            time.sleep(min(left, retry_after if retry_after is not None else 0.2, 1.0))


# ---- A2A ----

class Agents:
    """The agents registered with the A2A gateway, by name."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = agent_registry_pb2_grpc.AgentRegistryStub(transport.channel)

    def register(self, name: str, endpoint: str = "", *, card_url: str = "",
                 description: str = "") -> Agent:
        """Registers (or re-registers) an agent at a gRPC endpoint host:port, or by the URL
        of its card."""
        return Agent.from_proto(self._t.call(self._stub.RegisterAgent,
                                             "AgentRegistry.RegisterAgent",
                                             rq.register_agent(name, endpoint, card_url,
                                                               description)))

    def __getitem__(self, name: str) -> Agent:
        return Agent.from_proto(self._t.call(
            self._stub.GetAgent, "AgentRegistry.GetAgent",
            agent_registry_pb2.GetAgentRequest(name=check_id("name", name))))

    def get(self, name: str) -> Optional[Agent]:
        """The registered agent, or None."""
        try:
            return self[name]
        except NotFound:
            return None

    def __contains__(self, name: object) -> bool:
        return self.get(name) is not None  # type: ignore[arg-type]

    def values(self) -> Iterator[Agent]:
        """Every registered agent, paged transparently."""
        for agent in self._t.pages(self._stub.ListAgents, "AgentRegistry.ListAgents",
                                   agent_registry_pb2.ListAgentsRequest(), "agents"):
            yield Agent.from_proto(agent)

    def __iter__(self) -> Iterator[str]:
        return (a.name for a in self.values())

    def __delitem__(self, name: str) -> None:
        self._t.call(self._stub.DeleteAgent, "AgentRegistry.DeleteAgent",
                     agent_registry_pb2.DeleteAgentRequest(name=check_id("name", name)))


class A2A:
    """A2A tasks through the coordinator's gateway (lf.a2a.v1.A2AService): the agent is the
    tenant, and every message, task and event is stored before anyone is answered."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = a2a_pb2_grpc.A2AServiceStub(transport.channel)

    def _call(self, name: str, request: Any, timeout: Optional[float] = None) -> Any:
        return self._t.call(getattr(self._stub, name), f"A2AService.{name}", request,
                            timeout=timeout, metadata=rq.A2A_METADATA)

    def send(self, agent: str, text: str = "", *, wait: bool = False,
             wait_timeout: Seconds = 300.0, context_id: Optional[str] = None,
             task_id: Optional[str] = None, data: Optional[Mapping[str, Any]] = None,
             metadata: Optional[Mapping[str, Any]] = None) -> A2ATask:
        """Sends a user message (text, and a data part when given) to `agent` and returns the
        stored task. context_id: the conversation (default: a new one); task_id: continue that
        task. wait: return only once the task has ended or asks for input, waiting up to
        wait_timeout seconds (DeadlineExceeded after that)."""
        check_bool("wait", wait)
        request = rq.a2a_send(agent, text, context_id=context_id, task_id=task_id, data=data,
                              metadata=metadata)
        task = self._call("SendMessage", request).task
        if not wait:
            return A2ATask.from_proto(task)
        return self.wait(task.id, timeout=wait_timeout)

    def get(self, task_id: str, history_length: Optional[int] = None) -> A2ATask:
        """The stored task (its last history_length messages; all when None)."""
        request = a2a_pb2.GetTaskRequest(id=check_id("task_id", task_id))
        if history_length is not None:
            request.history_length = check_int("history_length", history_length, 0,
                                                  INT32_MAX)
        return A2ATask.from_proto(self._call("GetTask", request))

    def wait(self, task_id: str, timeout: Seconds = 300.0) -> A2ATask:
        """Waits until the task has ended or asks for input (it follows the task's events, and
        resubscribes across coordinator restarts); returns it as stored."""
        check_id("task_id", task_id)
        deadline = time.monotonic() + check_positive_seconds("timeout", timeout)
        backoff = FIRST_BACKOFF
        while True:
            refused: Optional[grpc.RpcError] = None
            stream = self._stub.SubscribeToTask(
                a2a_pb2.SubscribeToTaskRequest(id=task_id),
                timeout=max(deadline - time.monotonic(), 0.001),
                metadata=self._t.metadata + rq.A2A_METADATA)
            try:
                for event in stream:
                    if _event_state(event) in A2A_STOP_STATES:
                        break
            except grpc.RpcError as error:
                # FAILED_PRECONDITION: the task ended before the subscription (read it).
                # Unreachable, cancelled by a draining server, too many streams, out of time:
                # read the task, and subscribe again while time is left.
                if error.code() not in _SUBSCRIBE_AGAIN:  # type: ignore[attr-defined]
                    raise from_rpc_error(error, "A2AService.SubscribeToTask") from None
                refused = error
            finally:
                stream.cancel()
            try:
                task: Optional[A2ATask] = self.get(task_id)
            except (Unavailable, Cancelled):
                task = None
            if task is not None and task.done:
                return task
            if refused is not None and refused.code() == \
                    grpc.StatusCode.FAILED_PRECONDITION:  # type: ignore[attr-defined]
                raise from_rpc_error(refused, "A2AService.SubscribeToTask")
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeadlineExceeded(f"task {task_id} did not end within {timeout}s",
                                       grpc.StatusCode.DEADLINE_EXCEEDED,
                                       "A2AService.SubscribeToTask")
            time.sleep(min(backoff, left))
            backoff = next_backoff(backoff)

    def cancel(self, task_id: str) -> A2ATask:
        """Cancels the task (at its agent when it runs there)."""
        return A2ATask.from_proto(self._call("CancelTask", a2a_pb2.CancelTaskRequest(
            id=check_id("task_id", task_id))))

    def tasks(self, context_id: Optional[str] = None) -> Iterator[A2ATask]:
        """Every stored task (of one context), paged transparently."""
        request = rq.a2a_tasks(context_id, None)
        while True:
            response = self._call("ListTasks", request)
            for task in response.tasks:
                yield A2ATask.from_proto(task)
            if not response.next_page_token:
                return
            request.page_token = response.next_page_token


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


__all__ = [
    "A2A",
    "Agents",
    "Breaker",
    "ClaimedItem",
    "Context",
    "Contexts",
    "Conversation",
    "Conversations",
    "Coordinator",
    "Task",
    "Tasks",
    "Work",
]
